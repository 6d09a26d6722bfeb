"""gpu_idle_window through the scheduler of `gpuledger up` with a controlled clock: samples arrive,
the platform's own "rollup" and "alerts" jobs run, a real webhook receiver gets what is sent.
A window that ended before never fires; an open one fires, grows without a new notification,
then resolves when a busy sample closes it; a GPU that stopped reporting does not keep paging."""
from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs, urlparse

from alerts.config import AlertsConfig, DeliveryConfig, DigestConfig
from gpuledger.config import Config, TeamConfig
from gpuledger.platform import build_platform
from ingest.rollup.config import AnalyticsConfig, PoolConfig
from tests.ingest.rollup.conftest import at, insert_samples, series

from .conftest import FakeClock, webhook_channel

GPU = {"host": "dgx-1", "gpu_uuid": "GPU-1", "environment": "onprem", "pool": "dgx", "process_count": 1,
       "team": "research", "user": "ana", "job_id": "job-7", "model": "NVIDIA H100 80GB HBM3"}
GONE = {**GPU, "gpu_uuid": "GPU-2", "job_id": "job-8"}          # stops reporting at 10:00


def idle(start, end, **kw):
    return series(start, end, step_s=60, util_gpu=0.0, util_mem=0.0, **kw)


def busy(start, end, **kw):
    return series(start, end, step_s=60, util_gpu=70.0, util_mem=40.0, **kw)


def config(receiver) -> Config:
    cfg = Config()
    cfg.analytics = AnalyticsConfig(capital_usd_per_gpu=36500.0, depreciation_months=50,      # $1/GPU-hour
                                    operations_usd_per_gpu_month=365.0, pue=1.5, energy_usd_per_kwh=0.0)
    cfg.pools = [PoolConfig(name="dgx")]
    cfg.teams = [TeamConfig(name="research", contact="hook")]
    cfg.alerts = AlertsConfig(channels=[webhook_channel(receiver)], base_url="http://dash.example:8050",
                              delivery=DeliveryConfig(inline_wait_max_s=0), digest=DigestConfig(enabled=False))
    return cfg


def idle_alerts(receiver) -> list[dict]:
    """Every gpu_idle_window alert in every notification the receiver got, in order."""
    return [dict(a, notification=r.json()["title"]) for r in receiver.delivered() for a in r.json()["alerts"]
            if a["labels"]["alertname"] == "gpu_idle_window"]


def test_an_open_window_fires_then_resolves_and_an_ended_one_never_fires(store, receiver):
    clock = FakeClock(at("2026-03-02T12:00:00"))
    platform = build_platform(config(receiver), store, auth=False, clock=clock)

    def tick(minutes: float = 0) -> None:
        clock.advance(minutes=minutes)
        for job in ("rollup", "alerts"):
            platform.scheduler.get_job(job).func()
            assert platform.parts[job]["last_error"] is None, platform.parts[job]["last_error"]

    # GPU-1: idle 02:00-05:00 (a window that ended), busy to 09:00, idle since 09:00 (open);
    # GPU-2: idle since 07:00 until it stopped reporting at 10:00 (its data is 2 h old)
    insert_samples(store, idle("2026-03-02T02:00:00", "2026-03-02T05:00:00")
                   + busy("2026-03-02T05:00:00", "2026-03-02T09:00:00")
                   + idle("2026-03-02T09:00:00", "2026-03-02T12:00:00"), **GPU)
    insert_samples(store, idle("2026-03-02T07:00:00", "2026-03-02T10:00:00"), **GONE)
    tick()
    assert store.rows("SELECT gpu_uuid, toString(start), toString(end), is_open FROM idle_windows ORDER BY gpu_uuid, start") == [
        ("GPU-1", "2026-03-02 02:00:00.000", "2026-03-02 05:00:00.000", 0),
        ("GPU-1", "2026-03-02 09:00:00.000", "2026-03-02 12:00:00.000", 1),
        ("GPU-2", "2026-03-02 07:00:00.000", "2026-03-02 10:00:00.000", 1)]
    [fired] = idle_alerts(receiver)
    assert fired["status"] == "firing" and fired["labels"]["gpu_uuid"] == "GPU-1"
    assert fired["labels"]["window_start"] == "2026-03-02T09:00:00Z"
    assert fired["annotations"]["summary"] == (
        "job job-7 of user ana (team research) has held an idle NVIDIA H100 80GB HBM3 on dgx-1 since "
        "2026-03-02 09:00 UTC for 3.0 h ($1.50/h, $4.50 so far): stop the job or release the GPU")
    assert fired["annotations"]["value"] == "3 h"
    assert fired["notification"] == "[FIRING:1] team research · gpu_idle_window · $4.50 so far, $1.50/h"
    link = urlparse(fired["generatorURL"])
    assert link.path == "/idle" and parse_qs(link.query) == {
        "team": ["research"], "env": ["onprem"], "gpu": ["GPU-1"], "window": ["2026-03-02T09:00:00Z"],
        "from": ["2026-03-02"], "to": ["2026-03-02"]}

    # five more idle minutes: the same alert, grown, and no new notification
    insert_samples(store, idle("2026-03-02T12:00:00", "2026-03-02T12:05:00"), **GPU)
    tick(5)
    assert len(receiver.delivered()) == 1
    assert store.scalar("SELECT value FROM alert_state FINAL WHERE rule = 'gpu_idle_window'") == 3 + 5 / 60

    # a busy sample at 12:05 ends the window: the alert resolves, once
    insert_samples(store, busy("2026-03-02T12:05:00", "2026-03-02T12:10:00"), **GPU)
    tick(5)
    assert store.rows("SELECT toString(end), is_open FROM idle_windows WHERE gpu_uuid = 'GPU-1' ORDER BY start") == [
        ("2026-03-02 05:00:00.000", 0), ("2026-03-02 12:05:00.000", 0)]
    resolved = idle_alerts(receiver)[1:]
    assert [(a["status"], a["labels"]["window_start"]) for a in resolved] == [("resolved", "2026-03-02T09:00:00Z")]
    tick(5)
    assert len(idle_alerts(receiver)) == 2

    # neither the window that ended at 05:00 nor the stale one on GPU-2 ever fired
    assert store.rows("SELECT DISTINCT labels['window_start'], labels['gpu_uuid'] "
                      "FROM alert_events WHERE rule = 'gpu_idle_window'") == [("2026-03-02T09:00:00Z", "GPU-1")]
    # a window opening again fires again, as a new alert (its own start)
    insert_samples(store, idle("2026-03-02T12:10:00", "2026-03-02T14:20:00"), **GPU)
    tick(130)
    assert [(a["status"], a["labels"]["window_start"]) for a in idle_alerts(receiver)[2:]] == \
        [("firing", "2026-03-02T12:10:00Z")]
    assert clock.now - at("2026-03-02T12:00:00") == timedelta(minutes=145)
