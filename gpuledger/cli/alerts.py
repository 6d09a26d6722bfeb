"""``gpuledger alerts check | test | silence add | list | expire``: the alerts engine by hand.

    gpuledger alerts check [--send] [--at TIME] [--rule NAME]... [--format table|json]
    gpuledger alerts test CHANNEL
    gpuledger alerts digest [--at TIME] [--team NAME]... [--send]
    gpuledger alerts silence add MATCHER... --comment TEXT [--duration 2h] [--author NAME] [--start TIME]
    gpuledger alerts silence list [--all] [--format table|json]
    gpuledger alerts silence expire ID [--author NAME]
"""
from __future__ import annotations

import getpass
from datetime import datetime, timezone

from base.errors import AlertsError, ChannelError, SilenceError
from gpuledger.cli.common import beside, open_store
from gpuledger.cli.output import render

CHECK_COLUMNS = ["state", "severity", "alertname", "value", "labels", "summary", "delivered_to", "note"]
NOWHERE = "nowhere"


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise AlertsError(f"time {text!r} is not ISO 8601, e.g. 2026-03-01T12:00:00Z") from None
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)



def check_rows(report) -> list[tuple]:
    """One row per alert of an ``alerts.engine.RoundReport``: firing first."""
    order = {"firing": 0, "pending": 1, "resolved": 2}
    rows = []
    for st, _ in sorted(report.alerts, key=lambda p: (order.get(p[0].state, 3), p[0].rule, sorted(p[0].labels.items()))):
        labels = " ".join(f"{k}={v}" for k, v in sorted(st.labels.items())
                          if v and k not in ("alertname", "severity", "category"))
        to = ", ".join(report.destinations.get(st.fingerprint, [])) or NOWHERE
        rows.append((st.state, st.severity, st.rule, st.annotations.get("value") or round(st.value, 3), labels,
                     st.summary, to, report.muted.get(st.fingerprint, "")))
    return rows


def run_check(args, cfg, store, con) -> int:
    from alerts.actions import check
    from alerts.clock import iso

    report = check(store, cfg, send=args.send, at=parse_time(args.at), rules=args.rule)
    con.out(render(CHECK_COLUMNS, check_rows(report), args.format))
    if args.format == "table":
        firing = len(report.firing)
        con.print(f"{report.rules} rule(s) evaluated at {iso(report.at)} in {report.duration_s:.2f} s: "
                  f"{firing} firing, {len(report.in_state('pending'))} pending"
                  + (f", {len(report.muted)} silenced or inhibited" if report.muted else ""))
        lost = [st for st in report.firing if not report.destinations.get(st.fingerprint)]
        if lost:
            con.print(f"{len(lost)} firing alert(s) would be delivered nowhere: no rule channel, route, team contact "
                      "([[teams]] contact) or alerts.default_channels sends them anywhere")
        if args.send and report.delivery is not None:
            d = report.delivery
            con.print(f"{len(report.notifications)} notification(s) decided; {len(d.delivered)} delivered, "
                      f"{len(d.retrying)} to retry, {len(d.failed)} failed")
        elif report.notifications:
            con.print(f"{len(report.notifications)} notification(s) would be sent (run with --send to send them)")
    for error in report.errors.values():
        con.err(f"gpuledger: rule error: {error}\n")
    return 1 if report.errors else 0


def cmd_test(args, cfg) -> int:
    from alerts.actions import send_test

    store = open_store(cfg, args.store)
    report = send_test(store, cfg, args.channel)
    kind = next(c.type for c in cfg.alerts.channels if c.name == args.channel)
    if report.delivered:
        print(f"sent a test notification to {args.channel} ({kind})")
        return 0
    error = next(iter({**report.failed, **report.retrying}.values()), "not delivered")
    raise ChannelError(f"the test notification to {args.channel} ({kind}) was not delivered: {error}")


def cmd_digest(args, cfg) -> int:
    """Print each team's waste digest for the period a round at ``--at`` (default now) reports on,
    and where it goes; with ``--send``, record and send those that are due and not yet sent."""
    from alerts.actions import engine_for
    from alerts.clock import iso, system_clock
    from alerts.digest import build_digest, period_at, send_digests

    store = open_store(cfg, args.store)
    now = parse_time(args.at) or system_clock()
    teams = [t for t in cfg.teams if not args.team or t.name in args.team]
    unknown = sorted(set(args.team or ()) - {t.name for t in cfg.teams})
    if unknown:
        raise AlertsError(f"no team named {unknown[0]!r} under [[teams]]; teams: "
                          f"{', '.join(t.name for t in cfg.teams) or 'none'}")
    if args.send:
        engine = engine_for(cfg, store, clock=lambda: now)
        report = send_digests(store, cfg, engine, now)
        if report.period is None:
            _, due = period_at(cfg.alerts.digest, now)
            print(f"no digest is due at {iso(now)}; the next goes out at {iso(due)}")
            return 0
        for n in report.enqueued:
            print(f"team {n.group_labels['team']}: recorded, to {n.channel}")
        for team, why in sorted(report.skipped.items()):
            print(f"team {team}: not sent ({why})")
        d = report.delivery
        if d is not None:
            print(f"{len(d.delivered)} delivered, {len(d.retrying)} to retry, {len(d.failed)} failed")
        return 1 if d is not None and d.failed else 0
    period, due = period_at(cfg.alerts.digest, now)
    print(f"{cfg.alerts.digest.every} digest {period.name}, due {iso(due)} (a preview: nothing is recorded or sent)\n")
    for team in teams:
        digest = build_digest(store, team.name, team.contact, period, cfg.alerts.digest.top_windows)
        print(f"--- team {team.name}, to {team.contact or 'nowhere ([[teams]] contact is not set)'}")
        print(digest.notification(now, cfg.alerts.base_url).text() + "\n")
    return 0


# --- silences --------------------------------------------------------------------------------

SILENCE_COLUMNS = ["id", "state", "matchers", "starts_at", "ends_at", "created_by", "comment"]


def run_silence_add(args, cfg, store, con) -> int:
    from alerts.clock import iso, system_clock
    from alerts.durations import parse_duration
    from alerts.silences import create_silence

    try:
        duration = parse_duration(args.duration)
    except ValueError as exc:
        raise SilenceError(str(exc)) from None
    silence = create_silence(store, args.matchers, author=args.author, comment=args.comment,
                             now=system_clock(), duration_s=duration, starts_at=parse_time(args.start))
    con.print(f"silence {silence.id} created: {' '.join(map(str, silence.matchers))} until "
              f"{iso(silence.ends_at)} by {silence.created_by}")
    return 0


def run_silence_list(args, cfg, store, con) -> int:
    from alerts.clock import iso, system_clock
    from alerts.silences import list_silences

    now = system_clock()
    rows = [(s.id, s.state(now), " ".join(map(str, s.matchers)), iso(s.starts_at), iso(s.ends_at), s.created_by,
             s.comment) for s in list_silences(store, now, include_expired=args.all)]
    con.out(render(SILENCE_COLUMNS, rows, args.format))
    return 0


def run_silence_expire(args, cfg, store, con) -> int:
    from alerts.clock import system_clock
    from alerts.silences import expire_silence

    silence = expire_silence(store, args.id, now=system_clock(), author=args.author)
    con.print(f"silence {silence.id} expired; the alerts it held back are notified on the next round")
    return 0


def add_commands(sub) -> None:
    alerts = sub.add_parser("alerts", help="evaluate alert rules, test channels, manage silences")
    actions = alerts.add_subparsers(dest="alerts_action", required=True, metavar="ACTION")

    p = actions.add_parser("check", help="evaluate the rules once and print the alerts (a dry run unless --send)")
    p.add_argument("--send", action="store_true", help="record the new state and send the notifications it calls for")
    p.add_argument("--at", metavar="TIME", help="evaluate as of this UTC time (ISO 8601) instead of now")
    p.add_argument("--rule", action="append", metavar="NAME", help="only this rule (repeatable)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=beside(run_check))

    p = actions.add_parser("test", help="send a test notification through a channel")
    p.add_argument("channel", metavar="CHANNEL", help="a channel name from alerts.channels")
    p.set_defaults(func=cmd_test)

    p = actions.add_parser("digest", help="preview each team's waste digest, or send the ones that are due")
    p.add_argument("--at", metavar="TIME", help="as a round at this UTC time (ISO 8601) would, instead of now")
    p.add_argument("--team", action="append", metavar="NAME", help="only this team (repeatable; preview)")
    p.add_argument("--send", action="store_true", help="record and send the digests due and not yet sent")
    p.set_defaults(func=cmd_digest)

    silence = actions.add_parser("silence", help="create, list and expire silences")
    ops = silence.add_subparsers(dest="silence_action", required=True, metavar="OP")
    p = ops.add_parser("add", help="silence the alerts matching every MATCHER (name=value, !=, =~, !~)")
    p.add_argument("matchers", nargs="+", metavar="MATCHER")
    p.add_argument("--comment", required=True, help="why (required)")
    p.add_argument("--duration", default="2h", help="how long, e.g. 30m, 2h, 3d (default 2h)")
    p.add_argument("--author", default=_user(), help="who (default: the current user)")
    p.add_argument("--start", metavar="TIME", help="start later, at this UTC time (ISO 8601)")
    p.set_defaults(func=beside(run_silence_add))
    p = ops.add_parser("list", help="list active and pending silences")
    p.add_argument("--all", action="store_true", help="include expired silences")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=beside(run_silence_list))
    p = ops.add_parser("expire", help="end a silence now")
    p.add_argument("id", metavar="ID")
    p.add_argument("--author", default=_user(), help="who (default: the current user)")
    p.set_defaults(func=beside(run_silence_expire))


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""
