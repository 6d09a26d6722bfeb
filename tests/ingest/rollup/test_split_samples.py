"""Samples that arrive in parts derive exactly as whole samples do. Prometheus remote_write spreads
one scrape's series over several requests, so one GPU's sample is stored as several rows at the
same ts, each with some of the columns (sql/rollup/split_samples.sql, ingest/rollup/run.py
sample_parts). Two GPUs with the same samples: one stored whole, one in two parts (utilization
in one request, power and memory in another); every derived number of the two must agree."""
from __future__ import annotations

from datetime import date

from ingest.rollup.run import rollup, sample_parts
from tests.ingest.rollup.conftest import at, insert_samples, series

LABELS = {"gpu_uuid": "GPU-1", "environment": "onprem", "pool": "dgx", "team": "nlp", "user": "ana", "job_id": "job-7"}
UTILIZATION = ("util_gpu", "util_mem", "process_count")
POWER = ("power_w", "mem_used_bytes", "mem_total_bytes", "temperature_c")
GIB = 1 << 30


def samples() -> list[dict]:
    """Every 15 s with jitter-free times: 40 minutes busy, 40 idle, 40 busy (an idle window between)."""
    common = {"process_count": 1, "mem_total_bytes": 80 * GIB, "temperature_c": 50.0}
    return (series("2026-03-02T10:00:00", "2026-03-02T10:40:00", 15, util_gpu=70.0, util_mem=40.0, power_w=300.0,
                   mem_used_bytes=60 * GIB, **common)
            + series("2026-03-02T10:40:00", "2026-03-02T11:20:00", 15, util_gpu=0.0, util_mem=0.0, power_w=80.0,
                     mem_used_bytes=2 * GIB, **common)
            + series("2026-03-02T11:20:00", "2026-03-02T12:00:00", 15, util_gpu=55.0, util_mem=20.0, power_w=250.0,
                     mem_used_bytes=40 * GIB, **common))


def part(rows: list[dict], keep: tuple[str, ...]) -> list[dict]:
    """The rows with only the ``keep`` columns of the measured ones (the others not sent)."""
    return [{k: v for k, v in r.items() if k == "ts" or k in keep} for r in rows]


def derived(store, table: str, columns: str, order: str) -> dict[str, list[tuple]]:
    out = {}
    for host in ("whole-1", "split-1"):
        out[host] = store.rows(f"SELECT {columns} FROM {table} WHERE host = {{h:String}} ORDER BY {order}", {"h": host})
    return out


def test_a_sample_stored_in_parts_derives_as_the_whole_sample(store, cfg):
    rows = samples()
    insert_samples(store, rows, host="whole-1", **LABELS)
    insert_samples(store, part(rows, UTILIZATION), host="split-1", **LABELS)      # one request ...
    insert_samples(store, part(rows, POWER), host="split-1", **LABELS)            # ... and another
    assert store.scalar("SELECT count() FROM gpu_samples WHERE host = 'split-1'") == 2 * len(rows)
    # every other host as stored, then split-1 merged
    assert [(fills["samples"] == "gpu_samples", p) for fills, p in sample_parts(store, date(2026, 3, 2), 600, 300)] == [
        (True, {"split_hosts": ["split-1"], "merged": False}), (False, {"split_hosts": ["split-1"], "merged": True})]
    rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 3), now=at("2026-03-03T00:00:00"))

    minute = derived(store, "gpu_minute", "minute, team, held, samples, covered_s, util_covered_s, util_gpu_s, "
                     "util_mem_s, mem_covered_s, mem_used_s, mem_total_bytes, power_covered_s, energy_j, "
                     "temperature_max", "minute")
    assert len(minute["whole-1"]) == 120 and minute["split-1"] == minute["whole-1"]
    assert all(r[3] == 4 for r in minute["split-1"])          # four samples a minute, not eight rows
    hour = derived(store, "gpu_hour", "hour, covered_s, util_gpu_s, energy_j", "hour")
    assert hour["split-1"] == hour["whole-1"]
    idle = derived(store, "gpu_idle_segments", "toString(start), toString(end), covered_s", "start")
    assert idle["split-1"] == idle["whole-1"] and len(idle["whole-1"]) >= 1
    windows = derived(store, "idle_windows", "toString(start), toString(end), duration_s", "start")
    assert windows["split-1"] == windows["whole-1"] == [("2026-03-02 10:40:00.000", "2026-03-02 11:20:00.000", 2400.0)]
    costs = derived(store, "gpu_cost_hour", "hour, round(cost_usd, 9), round(utilized_gpu_hours, 9)", "hour")
    assert costs["split-1"] == costs["whole-1"]


def test_whole_samples_are_read_from_the_table_itself(store):
    insert_samples(store, samples(), host="whole-1", **LABELS)
    assert sample_parts(store, date(2026, 3, 2), 600, 300) == [({"samples": "gpu_samples"},
                                                                {"split_hosts": [], "merged": False})]


def test_an_hour_more_in_parts_derives_incrementally_as_whole_samples(store, cfg):
    rows = samples()
    later = series("2026-03-02T12:00:00", "2026-03-02T13:00:00", 15, util_gpu=30.0, util_mem=10.0, power_w=150.0,
                   mem_used_bytes=20 * GIB, process_count=1, mem_total_bytes=80 * GIB, temperature_c=45.0)
    for batch in (rows, later):                       # the day, then one more hour: an incremental run
        insert_samples(store, batch, host="whole-1", **LABELS)
        insert_samples(store, part(batch, UTILIZATION), host="split-1", **LABELS)
        insert_samples(store, part(batch, POWER), host="split-1", **LABELS)
        report = rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 3), now=at("2026-03-03T00:00:00"))
        assert report.days == [date(2026, 3, 2)]
    minute = derived(store, "gpu_minute", "minute, samples, covered_s, util_gpu_s, energy_j, mem_used_s", "minute")
    assert len(minute["whole-1"]) == 180 and minute["split-1"] == minute["whole-1"]
    windows = derived(store, "idle_windows", "toString(start), toString(end)", "start")
    assert windows["split-1"] == windows["whole-1"]
