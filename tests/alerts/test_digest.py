"""The waste digest: due once per period and team at the configured hour (weekday), sent through
the team's contact channel to a real receiver with figures the test works out from the rows it
inserted, never twice — not on a later round, not after a restart."""
from __future__ import annotations

import logging
from datetime import date, datetime, timedelta, timezone
from urllib.parse import parse_qs, urlsplit

import pytest

from alerts import outbox
from alerts.actions import engine_for
from alerts.config import AlertsConfig, ChannelConfig, DeliveryConfig, DigestConfig
from alerts.digest import Period, digest_key, due_period, period_at, send_digests
from alerts.grouping import plan
from gpuledger.config import Config, TeamConfig
from tests.alerts.conftest import FakeClock, slack_channel, webhook_channel

BASE_URL = "http://dash.example:8050"
WASTE_COLUMNS = ["day", "host", "gpu_uuid", "mig_instance", "environment", "region", "pool", "model", "team", "user",
                 "job_id", "k8s_namespace", "gpu_hours", "cost_usd", "idle_allocated_usd", "idle_unallocated_usd",
                 "unused_usd", "no_data_usd"]
WINDOW_COLUMNS = ["host", "gpu_uuid", "mig_instance", "start", "end", "duration_s", "covered_s", "kind", "environment",
                  "region", "pool", "instance_id", "model", "team", "user", "job_id", "k8s_namespace", "k8s_pod",
                  "slurm_account", "avg_util_gpu", "avg_util_mem", "cost_usd"]
PARTS = ("cost_usd", "idle_allocated_usd", "idle_unallocated_usd", "unused_usd", "no_data_usd")


def at(day: str, hour: int = 0, minute: int = 0) -> datetime:
    return datetime.fromisoformat(day).replace(hour=hour, minute=minute, tzinfo=timezone.utc)


def usd(v: float) -> str:
    return f"${v:,.2f}"


# --- what the test puts in the store, and what it expects from it ------------------------------

def waste(day: str, team: str, cost: float, allocated: float, unallocated: float, unused: float, no_data: float,
          gpu: str = "GPU-1") -> dict:
    return {"day": date.fromisoformat(day), "host": "h1", "gpu_uuid": gpu, "mig_instance": "", "environment": "onprem",
            "region": "dc1", "pool": "a100", "model": "A100", "team": team, "user": "", "job_id": "",
            "k8s_namespace": "", "gpu_hours": 24.0, "cost_usd": cost, "idle_allocated_usd": allocated,
            "idle_unallocated_usd": unallocated, "unused_usd": unused, "no_data_usd": no_data}


def window(team: str, start: datetime, hours: float, cost: float, *, kind: str = "allocated", user: str = "",
           job: str = "", ns: str = "", pod: str = "", gpu: str = "GPU-1", mig: str = "") -> dict:
    return {"host": "h1", "gpu_uuid": gpu, "mig_instance": mig, "start": start, "end": start + timedelta(hours=hours),
            "duration_s": hours * 3600, "covered_s": hours * 3600, "kind": kind, "environment": "onprem",
            "region": "dc1", "pool": "a100", "instance_id": "", "model": "A100", "team": team, "user": user,
            "job_id": job, "k8s_namespace": ns, "k8s_pod": pod, "slurm_account": "", "avg_util_gpu": 1.0,
            "avg_util_mem": 0.5, "cost_usd": cost}


def insert(store, waste_rows=(), windows=()) -> None:
    if waste_rows:
        store.insert("gpu_waste_day", [[r[c] for c in WASTE_COLUMNS] for r in waste_rows], WASTE_COLUMNS)
    if windows:
        store.insert("idle_windows", [[r[c] for c in WINDOW_COLUMNS] for r in windows], WINDOW_COLUMNS)


def parts(rows, team: str, start: date, end: date) -> dict:
    """The expected figures of ``team`` over [start, end), summed here from the rows inserted."""
    mine = [r for r in rows if r["team"] == team and start <= r["day"] < end]
    out = {p: sum(r[p] for r in mine) for p in PARTS}
    out["waste_usd"] = out["idle_allocated_usd"] + out["idle_unallocated_usd"] + out["unused_usd"]
    return out


def top(windows, team: str, start: date, end: date, n: int) -> list[dict]:
    lo, hi = (datetime.combine(d, datetime.min.time(), timezone.utc) for d in (start, end))
    overlapping = [w for w in windows if w["team"] == team and w["start"] < hi and w["end"] > lo]
    return sorted(overlapping, key=lambda w: -w["cost_usd"])[:n]


DAILY_WASTE = [
    waste("2026-03-18", "research", 240.0, 60.0, 0.0, 40.0, 5.0),
    waste("2026-03-18", "research", 120.0, 0.0, 30.0, 10.0, 0.0, gpu="GPU-2"),
    waste("2026-03-19", "research", 240.0, 90.5, 0.0, 50.25, 12.0),
    waste("2026-03-19", "research", 120.0, 0.0, 20.0, 15.5, 0.0, gpu="GPU-2"),
    waste("2026-03-20", "research", 999.0, 500.0, 0.0, 100.0, 0.0),      # today: not in the digest
    waste("2026-03-17", "research", 999.0, 700.0, 0.0, 100.0, 0.0),      # before the day before
    waste("2026-03-19", "vision", 300.0, 100.0, 0.0, 0.0, 0.0),         # no contact
    waste("2026-03-19", "infra", 300.0, 100.0, 0.0, 0.0, 0.0),          # an Alertmanager contact
    waste("2026-03-19", "", 500.0, 0.0, 400.0, 0.0, 0.0),               # unallocated
]
DAILY_WINDOWS = [
    window("research", at("2026-03-19", 2), 9.5, 31.67, user="ana", job="81", ns="ml", pod="train-0"),
    window("research", at("2026-03-18", 20), 7.0, 45.0, user="bo", job="7"),            # began the day before
    window("research", at("2026-03-19", 12), 2.0, 12.0, kind="unallocated", gpu="GPU-2", mig="3"),
    window("research", at("2026-03-19", 15), 1.0, 5.0, user="cy", job="99"),            # 4th: over top_windows
    window("research", at("2026-03-18", 1), 4.0, 100.0, user="dee", job="11"),          # ended before the day
    window("research", at("2026-03-20", 0), 3.0, 200.0, user="ed", job="12"),           # began after it
    window("vision", at("2026-03-19", 3), 5.0, 500.0, user="fi", job="13"),             # another team
]


def config(receiver, contact: ChannelConfig, digest: DigestConfig | None = None, alertmanager_url: str = "") -> Config:
    channels = [contact, ChannelConfig(name="am", type="alertmanager", endpoint=alertmanager_url or receiver.url)]
    alerts = AlertsConfig(builtin=False, channels=channels, base_url=BASE_URL,
                          delivery=DeliveryConfig(inline_wait_max_s=0),
                          digest=digest or DigestConfig(every="daily", at_hour_utc=8, top_windows=3))
    teams = [TeamConfig("research", contact=contact.name), TeamConfig("vision"), TeamConfig("infra", contact="am")]
    return Config(teams=teams, alerts=alerts)


def engine(store, cfg, clock):
    return engine_for(cfg, store, clock=clock, sleep=clock.sleep)


# --- the period ----------------------------------------------------------------------------

@pytest.mark.parametrize("every,weekday,now,period,due", [
    ("daily", "mon", "2026-03-20T07:59", ("2026-03-19", "2026-03-20"), None),
    ("daily", "mon", "2026-03-20T08:00", ("2026-03-19", "2026-03-20"), True),
    ("daily", "mon", "2026-03-20T23:59", ("2026-03-19", "2026-03-20"), True),       # catch-up, same day
    ("daily", "mon", "2026-03-01T08:00", ("2026-02-28", "2026-03-01"), True),       # across a month
    ("weekly", "mon", "2026-03-23T08:00", ("2026-03-16", "2026-03-23"), True),      # Monday: last Mon-Sun
    ("weekly", "mon", "2026-03-22T23:00", ("2026-03-09", "2026-03-16"), True),      # Sunday: the week before
    ("weekly", "wed", "2026-03-24T12:00", ("2026-03-16", "2026-03-23"), None),      # Tuesday, before Wednesday
    ("weekly", "wed", "2026-03-25T08:00", ("2026-03-16", "2026-03-23"), True),
    ("weekly", "sun", "2026-03-28T08:00", ("2026-03-16", "2026-03-23"), None),      # goes out on Sunday the 29th
    ("weekly", "sun", "2026-03-29T08:00", ("2026-03-16", "2026-03-23"), True),
])
def test_the_period_and_when_its_digest_is_due(every, weekday, now, period, due):
    cfg = DigestConfig(every=every, weekday=weekday, at_hour_utc=8)
    moment = datetime.fromisoformat(now).replace(tzinfo=timezone.utc)
    expected = Period(every, date.fromisoformat(period[0]), date.fromisoformat(period[1]))
    assert period_at(cfg, moment)[0] == expected
    assert due_period(cfg, moment) == (expected if due else None)


# --- daily, through a webhook --------------------------------------------------------------

def test_daily_digest_goes_once_at_the_hour_through_the_teams_webhook(store, receiver, caplog):
    caplog.set_level(logging.INFO, logger="alerts.digest")
    insert(store, DAILY_WASTE, DAILY_WINDOWS)
    cfg = config(receiver, webhook_channel(receiver))
    clock = FakeClock(at("2026-03-20", 7, 59))
    eng = engine(store, cfg, clock)

    early = send_digests(store, cfg, eng, clock())
    assert early.period is None and early.enqueued == [] and receiver.requests == []

    clock.now = at("2026-03-20", 8, 0)
    report = send_digests(store, cfg, eng, clock())
    day, before = (date(2026, 3, 19), date(2026, 3, 20)), (date(2026, 3, 18), date(2026, 3, 19))
    want, prev = parts(DAILY_WASTE, "research", *day), parts(DAILY_WASTE, "research", *before)
    change = 100 * (want["waste_usd"] - prev["waste_usd"]) / prev["waste_usd"]
    assert want["waste_usd"] == pytest.approx(176.25) and change > 0         # the data are what the test means

    assert [n.group_labels["team"] for n in report.enqueued] == ["research"]
    assert report.skipped == {"vision": "no contact",
                              "infra": "channel am is an Alertmanager (alerts, not reports)"}
    assert "waste digest for team infra skipped: its contact am is an Alertmanager" in caplog.text
    (got,) = receiver.delivered("/hook")
    payload = got.json()
    assert payload["title"] == (f"gpuledger daily digest · team research · ${want['waste_usd']:,.0f} wasted on "
                                f"2026-03-19 (▲ {change:.0f}% vs the day before)")
    key = digest_key("hook", "research", Period("daily", *day))
    assert got.headers["idempotency-key"] == key == payload["idempotencyKey"]
    assert payload["groupKey"] == "digest:research" and payload["alerts"] == []
    assert f"total waste: {usd(want['waste_usd'])}" in payload["text"]

    (entry,) = outbox.entries(store)
    assert (entry.key, entry.status, entry.kind) == (key, "delivered", "digest")
    figures = entry.notification.extra["digest"]
    for name in ("idle_allocated_usd", "idle_unallocated_usd", "unused_usd", "no_data_usd", "waste_usd"):
        assert figures[name] == pytest.approx(want[name]), name
    assert figures["spend_usd"] == pytest.approx(want["cost_usd"])
    assert figures["efficiency_pct"] == pytest.approx(100 * (1 - want["waste_usd"] / want["cost_usd"]))
    assert figures["before_waste_usd"] == pytest.approx(prev["waste_usd"])
    assert figures["change_usd"] == pytest.approx(want["waste_usd"] - prev["waste_usd"])
    assert figures["change_pct"] == pytest.approx(change)
    expected_top = top(DAILY_WINDOWS, "research", *day, 3)
    assert [(w["gpu_uuid"], w["cost_usd"]) for w in figures["windows"]] == \
        [(w["gpu_uuid"], w["cost_usd"]) for w in expected_top]

    # a digest's group is not an alert group: a round of the engine decides nothing for it
    assert plan([], {}, outbox.last_per_group(store), eng.routing, clock(), BASE_URL, {}) == []
    assert eng.run_once().notifications == []

    for later in (at("2026-03-20", 8, 15), at("2026-03-20", 23, 59), at("2026-03-21", 7, 59)):
        clock.now = later
        assert send_digests(store, cfg, eng, clock()).enqueued == []
    clock.now = at("2026-03-20", 9)
    restarted = engine(store, cfg, clock)                                      # a restart: a new engine
    again = send_digests(store, cfg, restarted, clock())
    assert again.enqueued == [] and again.skipped["research"] == "already recorded"
    assert len(receiver.requests) == 1


# --- the content, through Slack (whose text carries the digest's lines) ----------------------

def test_digest_text_has_waste_by_part_the_trend_and_the_top_windows_with_links(store, receiver):
    insert(store, DAILY_WASTE, DAILY_WINDOWS)
    cfg = config(receiver, slack_channel(receiver))
    clock = FakeClock(at("2026-03-20", 10))
    send_digests(store, cfg, engine(store, cfg, clock), clock())
    (got,) = receiver.delivered()
    text = got.json()["text"]
    day = (date(2026, 3, 19), date(2026, 3, 20))
    want, prev = parts(DAILY_WASTE, "research", *day), parts(DAILY_WASTE, "research", date(2026, 3, 18), day[0])
    efficiency = 100 * (1 - want["waste_usd"] / want["cost_usd"])
    assert f"{usd(want['waste_usd'])} wasted of {usd(want['cost_usd'])} GPU spend" in text
    assert f"efficiency {efficiency:.1f}%" in text
    assert f"idle, allocated (held by a job or process, unused): {usd(want['idle_allocated_usd'])}" in text
    assert f"idle, unallocated (held by nothing): {usd(want['idle_unallocated_usd'])}" in text
    assert f"unused (busy GPUs below full use): {usd(want['unused_usd'])}" in text
    assert f"total waste: {usd(want['waste_usd'])}" in text
    assert f"no data (not counted as waste): {usd(want['no_data_usd'])}" in text
    change = want["waste_usd"] - prev["waste_usd"]
    assert f"Trend: waste +{usd(change)} ({100 * change / prev['waste_usd']:+.1f}%) vs the day before: " \
           f"{usd(prev['waste_usd'])} wasted of {usd(prev['cost_usd'])}" in text

    expected = top(DAILY_WINDOWS, "research", *day, 3)
    lines = text.splitlines()
    listed = [i for i, line in enumerate(lines) if line.lstrip()[:3] in ("1. ", "2. ", "3. ", "4. ")]
    assert len(listed) == 3
    for i, w in zip(listed, expected):
        assert f"{w['start']:%Y-%m-%d %H:%M} UTC, {w['duration_s'] / 3600:.1f} h, {usd(w['cost_usd'])}:" in lines[i]
        if w["kind"] == "allocated":
            assert f"job {w['job_id']} of user {w['user']}" in lines[i]
        else:
            assert "nothing allocated" in lines[i] and f"MIG {w['mig_instance']}" in lines[i]
        link = urlsplit(lines[i + 1].strip())
        assert f"{link.scheme}://{link.netloc}{link.path}" == f"{BASE_URL}/idle"
        assert parse_qs(link.query) == {
            "team": ["research"], "env": ["onprem"], "gpu": [w["gpu_uuid"]],
            "window": [w["start"].strftime("%Y-%m-%dT%H:%M:%SZ")], "from": [w["start"].date().isoformat()],
            "to": [w["end"].date().isoformat()], **({"mig": [w["mig_instance"]]} if w["mig_instance"] else {})}
    assert "(began before the period)" in lines[listed[0]]                      # the $45 one began on the 18th
    for job in ("99", "11", "12", "13"):                                        # 4th, outside the day, not theirs
        assert f"job {job} " not in text
    first = expected[0]
    assert (f"What to do: the top window: job {first['job_id']} of user {first['user']} held an idle A100 on h1 "
            f"for {first['duration_s'] / 3600:.1f} h ({usd(first['cost_usd'])}): stop idle jobs") in text
    assert f"{BASE_URL}/idle?team=research&from=2026-03-19&to=2026-03-19" in text


# --- weekly ----------------------------------------------------------------------------------

def test_weekly_digest_covers_monday_to_sunday_and_goes_on_its_weekday(store, receiver):
    rows = [waste(f"2026-03-{d:02d}", "research", 100.0 + d, 10.0 + d, 2.0, 5.0, 1.0) for d in range(8, 24)]
    insert(store, rows, [window("research", at("2026-03-22", 20), 6.0, 40.0, user="ana", job="5")])
    cfg = config(receiver, webhook_channel(receiver), DigestConfig(every="weekly", weekday="wed", at_hour_utc=6))
    clock = FakeClock(at("2026-03-23", 10))                                    # Monday
    eng = engine(store, cfg, clock)
    for moment in (at("2026-03-23", 10), at("2026-03-24", 23), at("2026-03-25", 5, 59)):
        clock.now = moment
        assert send_digests(store, cfg, eng, clock()).period is None
    assert receiver.requests == []

    clock.now = at("2026-03-25", 6)                                            # Wednesday, 06:00
    report = send_digests(store, cfg, eng, clock())
    assert report.period == Period("weekly", date(2026, 3, 16), date(2026, 3, 23))
    want = parts(rows, "research", date(2026, 3, 16), date(2026, 3, 23))
    prev = parts(rows, "research", date(2026, 3, 9), date(2026, 3, 16))
    change = 100 * (want["waste_usd"] - prev["waste_usd"]) / prev["waste_usd"]
    (got,) = receiver.delivered("/hook")
    assert got.json()["title"] == (f"gpuledger weekly digest · team research · ${want['waste_usd']:,.0f} wasted in "
                                   f"the week of 2026-03-16 to 2026-03-22 (▲ {change:.0f}% vs the week before)")
    figures = outbox.entries(store)[0].notification.extra["digest"]
    assert figures["waste_usd"] == pytest.approx(want["waste_usd"])
    assert figures["spend_usd"] == pytest.approx(want["cost_usd"])
    assert figures["before_waste_usd"] == pytest.approx(prev["waste_usd"])
    assert [w["cost_usd"] for w in figures["windows"]] == [40.0]              # went on into Monday: still listed

    for moment in (at("2026-03-26", 9), at("2026-03-29", 23), at("2026-03-30", 9)):   # Thursday .. next Monday
        clock.now = moment
        assert send_digests(store, cfg, eng, clock()).enqueued == []
    assert len(receiver.requests) == 1


# --- no spend, late data, the scheduler job --------------------------------------------------

def test_no_spend_means_no_digest_until_the_data_arrive(store, receiver):
    cfg = config(receiver, webhook_channel(receiver))
    clock = FakeClock(at("2026-03-20", 8))
    eng = engine(store, cfg, clock)
    report = send_digests(store, cfg, eng, clock())
    assert report.enqueued == [] and report.skipped["research"] == "no spend in either period"
    assert outbox.entries(store) == []                                         # nothing recorded

    late = [waste("2026-03-19", "research", 50.0, 4.0, 0.0, 1.5, 0.0)]
    insert(store, late)                                                        # the rollup catches up
    clock.now = at("2026-03-20", 9, 30)
    send_digests(store, cfg, eng, clock())
    (got,) = receiver.delivered("/hook")
    assert got.json()["title"] == "gpuledger daily digest · team research · $5.50 wasted on 2026-03-19 " \
                                  "(none the day before)"


def test_scheduler_registers_the_digest_job_that_sends_with_the_injected_clock(store, receiver):
    from alerts.scheduler import install
    from gpuledger.platform import Platform

    insert(store, DAILY_WASTE)
    cfg = config(receiver, webhook_channel(receiver))
    cfg.alerts.interval_s = 60
    clock = FakeClock(at("2026-03-20", 8, 5))
    platform = Platform(cfg, store)
    install(platform, cfg, clock=clock, sleep=clock.sleep)
    job = platform.scheduler.get_job("alerts-digest")
    assert job.trigger.interval.total_seconds() == 60
    job.func()
    job.func()
    assert platform.parts["alerts-digest"]["last_error"] is None
    assert len(receiver.delivered("/hook")) == 1

    cfg.alerts.digest.enabled = False
    quiet = Platform(cfg, store)
    install(quiet, cfg, clock=clock, sleep=clock.sleep)
    assert quiet.scheduler.get_job("alerts-digest") is None and quiet.scheduler.get_job("alerts") is not None


def test_the_digest_command_previews_then_sends_once(store, receiver, capsys):
    from tests.alerts.test_commands import run

    insert(store, DAILY_WASTE, DAILY_WINDOWS)
    cfg = config(receiver, webhook_channel(receiver))
    want = parts(DAILY_WASTE, "research", date(2026, 3, 19), date(2026, 3, 20))
    assert run(["alerts", "digest", "--at", "2026-03-20T09:00:00Z"], store, cfg.alerts, cfg.teams) == 0
    preview = capsys.readouterr().out
    assert preview.startswith("daily digest on 2026-03-19, due 2026-03-20T08:00:00Z (a preview")
    assert "--- team research, to hook\ngpuledger daily digest · team research · " in preview
    assert f"total waste: {usd(want['waste_usd'])}" in preview
    assert "--- team vision, to nowhere ([[teams]] contact is not set)" in preview
    assert receiver.requests == [] and outbox.entries(store) == []

    send = ["alerts", "digest", "--at", "2026-03-20T09:00:00Z", "--send"]
    assert run(send, store, cfg.alerts, cfg.teams) == 0
    out = capsys.readouterr().out
    assert "team research: recorded, to hook" in out and "1 delivered, 0 to retry, 0 failed" in out
    assert "team vision: not sent (no contact)" in out
    assert run(send, store, cfg.alerts, cfg.teams) == 0
    assert "team research: not sent (already recorded)" in capsys.readouterr().out
    assert len(receiver.delivered("/hook")) == 1
    assert run(["alerts", "digest", "--at", "2026-03-21T07:00:00Z", "--send"], store, cfg.alerts, cfg.teams) == 0
    assert capsys.readouterr().out == "no digest is due at 2026-03-21T07:00:00Z; the next goes out at 2026-03-21T08:00:00Z\n"
