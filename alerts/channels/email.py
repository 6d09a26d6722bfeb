"""Email over SMTP: a multipart/alternative message (plain text + HTML), sent with STARTTLS,
implicit TLS (``ssl``) or neither, with AUTH when a user is configured.

``smtp`` is the factory that opens the connection — ``smtp(security, host, port, timeout_s,
ssl_context)`` returning an ``smtplib.SMTP``-like object — so tests can point it anywhere."""
from __future__ import annotations

import base64
import html
import smtplib
import ssl
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

from alerts.notification import Notification
from alerts.redact import redact
from base.errors import DeliveryError

DEFAULT_PORTS = {"starttls": 587, "ssl": 465, "none": 25}
COLORS = {"critical": "#c0392b", "warning": "#d68910", "info": "#2471a3"}


def open_smtp(security: str, host: str, port: int, timeout_s: float, context: ssl.SSLContext):
    if security == "ssl":
        return smtplib.SMTP_SSL(host, port, timeout=timeout_s, context=context)
    client = smtplib.SMTP(host, port, timeout=timeout_s)
    if security == "starttls":
        client.ehlo()
        client.starttls(context=context)
        client.ehlo()
    return client


def email_html(n: Notification) -> str:
    rows = []
    for a in n.alerts:
        severity = a.labels.get("severity", "")
        color = "#1e8449" if a.status == "resolved" else COLORS.get(severity, "#555")
        details = "<br>".join(html.escape(line) for line in a.details(n.created_at) if not line.startswith("open: "))
        link = f'<a href="{html.escape(a.url)}">{html.escape(a.summary)}</a>' if a.url else html.escape(a.summary)
        rows.append(f'<tr><td style="color:{color};font-weight:bold">{html.escape(a.status.upper())} '
                    f'{html.escape(severity)}</td><td>{link}<br><small>{details}<br>{html.escape(a.name)}</small></td></tr>')
    body = "".join(f"<p>{html.escape(line)}</p>" for line in n.body)
    footer = f'<p><a href="{html.escape(n.dashboard_url)}">All alerts in gpuledger</a></p>' if n.dashboard_url else ""
    return (f"<!DOCTYPE html><html><body><h2>{html.escape(n.title())}</h2>{body}"
            f'<table cellpadding="6">{"".join(rows)}</table>{footer}</body></html>')


def email_message(n: Notification, sender: str, recipients: list[str]) -> EmailMessage:
    msg = EmailMessage()
    msg["Subject"] = n.title()
    msg["From"] = sender
    msg["To"] = ", ".join(recipients)
    msg["Date"] = formatdate(usegmt=True)
    msg["Message-ID"] = make_msgid(idstring=n.key[:16], domain="gpuledger")
    msg["X-Gpuledger-Key"] = n.key
    msg.set_content(n.text() + "\n")
    msg.add_alternative(email_html(n), subtype="html")
    return msg


class EmailChannel:
    type = "email"

    def __init__(self, name: str, *, host: str, port: int = 0, security: str = "starttls", user: str = "",
                 password: str = "", sender: str, recipients: list[str], ca_file: str = "",
                 timeout_s: float = 10.0, smtp=None):
        self.name, self.host, self.security = name, host, security
        self.port = port or DEFAULT_PORTS[security]
        self.user, self._password = user, password
        self.sender, self.recipients, self.ca_file, self.timeout_s = sender, list(recipients), ca_file, timeout_s
        self.smtp = smtp or open_smtp
        plain = base64.b64encode(f"\0{user}\0{password}".encode()).decode() if password else ""
        self.secrets = tuple(s for s in (plain, password) if s)        # AUTH PLAIN, as a server may echo it

    def __repr__(self) -> str:
        return f"EmailChannel({self.name!r}, {self.host}:{self.port})"

    def send(self, notification: Notification) -> None:
        msg = email_message(notification, self.sender, self.recipients)
        where = f"channel {self.name}: SMTP server {self.host}:{self.port}"
        try:
            context = ssl.create_default_context(cafile=self.ca_file or None)
            client = self.smtp(self.security, self.host, self.port, self.timeout_s, context)
            try:
                if self.user:
                    client.login(self.user, self._password)
                refused = client.send_message(msg)
            finally:
                try:
                    client.quit()
                except (smtplib.SMTPException, OSError):
                    pass
        except smtplib.SMTPAuthenticationError as exc:
            raise DeliveryError(f"{where} refused the login of {self.user!r} ({exc.smtp_code})", retryable=False) from None
        except smtplib.SMTPRecipientsRefused as exc:
            raise DeliveryError(f"{where} refused every recipient: {', '.join(exc.recipients)}", retryable=False) from None
        except smtplib.SMTPResponseException as exc:
            text = exc.smtp_error.decode("utf-8", "replace") if isinstance(exc.smtp_error, bytes) else str(exc.smtp_error)
            raise DeliveryError(f"{where} answered {exc.smtp_code} {redact(text, self.secrets)[:200]}",
                                retryable=exc.smtp_code < 500) from None
        except (TimeoutError, smtplib.SMTPException, ssl.SSLError, OSError) as exc:
            raise DeliveryError(f"{where}: {type(exc).__name__}: {redact(str(exc), self.secrets)[:200]}") from None
        if refused:
            raise DeliveryError(f"{where} refused some recipients: {', '.join(refused)}", retryable=False)
