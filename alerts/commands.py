"""``gpuledger alerts ...``: the command-line edge of the alerts engine.

``add_commands(subparsers, open_store)`` adds the ``alerts`` command to gpuledger's parser; each
``cmd_*`` reads its arguments, calls one library function and prints the result.

    gpuledger alerts check [--send] [--at TIME] [--rule NAME]... [--format table|json]
    gpuledger alerts test CHANNEL
    gpuledger alerts silence add MATCHER... --comment TEXT [--duration 2h] [--author NAME] [--start TIME]
    gpuledger alerts silence list [--all] [--format table|json]
    gpuledger alerts silence expire ID [--author NAME]
"""
from __future__ import annotations

import getpass
import sys
import uuid
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

from alerts.clock import iso, system_clock
from alerts.config import AlertsConfig
from alerts.durations import parse_duration
from alerts.engine import RoundReport, engine_from_config
from alerts.errors import AlertsError, ChannelError, SilenceError
from alerts.notification import AlertView, Notification
from alerts.silences import create_silence, expire_silence, list_silences


def engine_for(cfg, store, clock=system_clock, **kwargs):
    alerts_cfg: AlertsConfig = cfg.alerts
    base_dir = Path(cfg.source).parent if cfg.source not in ("", "defaults") else None
    return engine_from_config(store, alerts_cfg, teams=cfg.teams, base_dir=base_dir, clock=clock, **kwargs)


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise AlertsError(f"time {text!r} is not ISO 8601, e.g. 2026-03-01T12:00:00Z") from None
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


# --- check -----------------------------------------------------------------------------------

CHECK_COLUMNS = ["state", "severity", "alertname", "value", "labels", "summary", "note"]


def check(store, cfg, *, send: bool = False, at: datetime | None = None, rules: list[str] | None = None,
          clock=system_clock, **engine_kwargs) -> RoundReport:
    """Evaluate once. Without ``send`` a dry run (nothing written or sent); with it a full round."""
    fixed = at or clock()
    engine = engine_for(cfg, store, clock=lambda: fixed if at else clock(), **engine_kwargs)
    if rules:
        unknown = sorted(set(rules) - {r.name for r in engine.rules})
        if unknown:
            raise AlertsError(f"no rule named {unknown[0]!r}; rules: {', '.join(r.name for r in engine.rules)}")
        engine.rules = [r for r in engine.rules if r.name in rules]
    if send:
        return engine.run_once()
    return engine.evaluate(fixed, apply=False)


def check_rows(report: RoundReport) -> list[tuple]:
    order = {"firing": 0, "pending": 1, "resolved": 2}
    rows = []
    for st, _ in sorted(report.alerts, key=lambda p: (order.get(p[0].state, 3), p[0].rule, sorted(p[0].labels.items()))):
        labels = " ".join(f"{k}={v}" for k, v in sorted(st.labels.items())
                          if v and k not in ("alertname", "severity", "category"))
        rows.append((st.state, st.severity, st.rule, round(st.value, 3), labels, st.summary,
                     report.muted.get(st.fingerprint, "")))
    return rows


def cmd_check(args, cfg, open_store) -> int:
    from gpuledger.output import render

    store = open_store(cfg, args.store)
    report = check(store, cfg, send=args.send, at=parse_time(args.at), rules=args.rule)
    sys.stdout.write(render(CHECK_COLUMNS, check_rows(report), args.format))
    if args.format == "table":
        firing = len(report.firing)
        print(f"{report.rules} rule(s) evaluated at {iso(report.at)} in {report.duration_s:.2f} s: "
              f"{firing} firing, {len(report.in_state('pending'))} pending"
              + (f", {len(report.muted)} silenced or inhibited" if report.muted else ""))
        if args.send and report.delivery is not None:
            d = report.delivery
            print(f"{len(report.notifications)} notification(s) decided; {len(d.delivered)} delivered, "
                  f"{len(d.retrying)} to retry, {len(d.failed)} failed")
        elif report.notifications:
            print(f"{len(report.notifications)} notification(s) would be sent (run with --send to send them)")
    for error in report.errors.values():
        print(f"gpuledger: rule error: {error}", file=sys.stderr)
    return 1 if report.errors else 0


# --- test ------------------------------------------------------------------------------------

def test_notification(channel: str, base_url: str, now: datetime) -> Notification:
    alert = AlertView(
        fingerprint="0" * 16, status="firing",
        labels={"alertname": "gpuledger_test", "severity": "info", "channel": channel},
        annotations={"summary": f"Test notification from gpuledger to channel {channel}",
                     "description": "If you can read this, the channel works."},
        value=1.0, starts_at=iso(now), url=f"{base_url.rstrip('/')}/alerts")
    return Notification(key=f"test-{uuid.uuid4().hex}", channel=channel, group_key="test",
                        group_labels={"alertname": "gpuledger_test"}, status="test", alerts=(alert,),
                        created_at=now.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
                        dashboard_url=f"{base_url.rstrip('/')}/alerts", extra={"repeat_s": 0.0})


def send_test(store, cfg, channel: str, clock=system_clock, **engine_kwargs):
    """Send a test notification through ``channel`` (recorded like any other, retried inline)."""
    from alerts import outbox

    engine = engine_for(cfg, store, clock=clock, **engine_kwargs)
    if channel not in engine.channels:
        known = ", ".join(engine.channels) or "none are configured"
        raise ChannelError(f"no channel named {channel!r} under alerts.channels ({known})")
    now = clock()
    outbox.enqueue(store, [test_notification(channel, cfg.alerts.base_url, now)], now)
    return engine.deliver(only=[channel])


def cmd_test(args, cfg, open_store) -> int:
    store = open_store(cfg, args.store)
    report = send_test(store, cfg, args.channel)
    kind = next(c.type for c in cfg.alerts.channels if c.name == args.channel)
    if report.delivered:
        print(f"sent a test notification to {args.channel} ({kind})")
        return 0
    error = next(iter({**report.failed, **report.retrying}.values()), "not delivered")
    raise ChannelError(f"the test notification to {args.channel} ({kind}) was not delivered: {error}")


# --- silences --------------------------------------------------------------------------------

SILENCE_COLUMNS = ["id", "state", "matchers", "starts_at", "ends_at", "created_by", "comment"]


def cmd_silence_add(args, cfg, open_store) -> int:
    store = open_store(cfg, args.store)
    try:
        duration = parse_duration(args.duration)
    except ValueError as exc:
        raise SilenceError(str(exc)) from None
    silence = create_silence(store, args.matchers, author=args.author, comment=args.comment,
                             now=system_clock(), duration_s=duration, starts_at=parse_time(args.start))
    print(f"silence {silence.id} created: {' '.join(map(str, silence.matchers))} until "
          f"{iso(silence.ends_at)} by {silence.created_by}")
    return 0


def cmd_silence_list(args, cfg, open_store) -> int:
    from gpuledger.output import render

    store = open_store(cfg, args.store)
    now = system_clock()
    rows = [(s.id, s.state(now), " ".join(map(str, s.matchers)), iso(s.starts_at), iso(s.ends_at), s.created_by,
             s.comment) for s in list_silences(store, now, include_expired=args.all)]
    sys.stdout.write(render(SILENCE_COLUMNS, rows, args.format))
    return 0


def cmd_silence_expire(args, cfg, open_store) -> int:
    store = open_store(cfg, args.store)
    silence = expire_silence(store, args.id, now=system_clock(), author=args.author)
    print(f"silence {silence.id} expired; the alerts it held back are notified on the next round")
    return 0


def add_commands(sub, open_store) -> None:
    """Add ``gpuledger alerts ...`` to the top-level subparsers; ``open_store(cfg, dsn)`` opens
    the migrated store (gpuledger.cli.open_store)."""
    alerts = sub.add_parser("alerts", help="evaluate alert rules, test channels, manage silences")
    actions = alerts.add_subparsers(dest="alerts_action", required=True, metavar="ACTION")

    p = actions.add_parser("check", help="evaluate the rules once and print the alerts (a dry run unless --send)")
    p.add_argument("--send", action="store_true", help="record the new state and send the notifications it calls for")
    p.add_argument("--at", metavar="TIME", help="evaluate as of this UTC time (ISO 8601) instead of now")
    p.add_argument("--rule", action="append", metavar="NAME", help="only this rule (repeatable)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=partial(cmd_check, open_store=open_store))

    p = actions.add_parser("test", help="send a test notification through a channel")
    p.add_argument("channel", metavar="CHANNEL", help="a channel name from alerts.channels")
    p.set_defaults(func=partial(cmd_test, open_store=open_store))

    silence = actions.add_parser("silence", help="create, list and expire silences")
    ops = silence.add_subparsers(dest="silence_action", required=True, metavar="OP")
    p = ops.add_parser("add", help="silence the alerts matching every MATCHER (name=value, !=, =~, !~)")
    p.add_argument("matchers", nargs="+", metavar="MATCHER")
    p.add_argument("--comment", required=True, help="why (required)")
    p.add_argument("--duration", default="2h", help="how long, e.g. 30m, 2h, 3d (default 2h)")
    p.add_argument("--author", default=_user(), help="who (default: the current user)")
    p.add_argument("--start", metavar="TIME", help="start later, at this UTC time (ISO 8601)")
    p.set_defaults(func=partial(cmd_silence_add, open_store=open_store))
    p = ops.add_parser("list", help="list active and pending silences")
    p.add_argument("--all", action="store_true", help="include expired silences")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=partial(cmd_silence_list, open_store=open_store))
    p = ops.add_parser("expire", help="end a silence now")
    p.add_argument("id", metavar="ID")
    p.add_argument("--author", default=_user(), help="who (default: the current user)")
    p.set_defaults(func=partial(cmd_silence_expire, open_store=open_store))


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""
