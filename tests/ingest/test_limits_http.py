"""HTTP batches, remote_write and scrapes under issue #15's limits, over real HTTP on loopback: a
label over its length or a ts outside 2000-01-01 .. 1 day ahead is refused by row (400 naming the
row or series and the column), the good rows are stored; a scrape checks each row like a batch,
counts and logs what it refused, naming the target, and keeps scraping."""
from __future__ import annotations

import json
import logging
import time

import pytest
import requests

from base.errors import BatchRejected
from base.settings import Secret
from ingest.scrape import ScrapeJob
from ingest.telemetry_config import ScrapeTarget
from tests.helpers import series
from tests.ingest.test_receiver_hardening import AUTH, RW, TOKEN, TS, gpu, rw_body, served, stored  # noqa: F401
from tests.ingest.test_scrape import TextServer

NOW_MS = int(time.time() * 1000)
AHEAD_MS = NOW_MS + 3 * 86_400_000           # 3 days ahead: refused
SOON_MS = NOW_MS + 3 * 3_600_000             # 3 hours ahead: accepted


def post_batch(s, rows, columns=("ts", "host", "gpu_uuid", "team", "util_gpu")):
    body = json.dumps({"id": "node-1/gpu_samples/9", "table": "gpu_samples", "columns": columns, "rows": rows})
    return requests.post(s.url + "/api/v1/ingest/batch", data=body.encode(), headers=AUTH, timeout=60)


@pytest.mark.parametrize("row, column, reason", [
    ([TS, "node-1", "GPU-2", "t" * 900_000, 20.0], "team", "900,000 bytes, over the 256-byte limit of team"),
    ([TS, "node-1", "G" * 3000, "ml", 20.0], "gpu_uuid", "3,000 bytes, over the 2,048-byte limit of gpu_uuid"),
    ([AHEAD_MS, "node-1", "GPU-2", "ml", 20.0], "ts", "more than 1 day ahead of now"),
], ids=["team-900KB", "uuid-3000B", "ts-3-days-ahead"])
def test_batch_row_over_a_limit_gets_400_naming_row_and_column(served, store, row, column, reason):  # noqa: F811
    s = served(token=Secret(TOKEN, "test"))
    r = post_batch(s, [[TS, "node-1", "GPU-1", "ml", 10.0], row, [SOON_MS, "node-1", "GPU-3", "ml", 30.0]])
    print(column, r.status_code, r.text[:300], f"({len(r.content):,} bytes answered)")
    assert r.status_code == 400 and (r.json()["stored"], r.json()["refused"]) == (2, 1), r.text[:500]
    assert r.json()["problems"][0].startswith(f"row 1 column {column}: ") and reason in r.json()["problems"][0]
    assert len(r.content) < 2000                         # the refused value is not echoed back
    assert stored(store) == [("GPU-1", 10.0), ("GPU-3", 30.0)]


def test_remote_write_stores_good_series_and_reports_over_long_or_future_ones(served, store):  # noqa: F811
    s = served(token=Secret(TOKEN, "test"))
    good = [series({"__name__": "DCGM_FI_DEV_GPU_UTIL", **gpu(n)}, [(40.0 + n, TS)]) for n in (1, 2)]
    long_team = series({"__name__": "DCGM_FI_DEV_GPU_UTIL", **gpu(7, team="x" * 900_000)}, [(5.0, TS)])
    long_pod = series({"__name__": "DCGM_FI_DEV_GPU_UTIL", **gpu(8, pod="p" * 5000)}, [(5.0, TS)])
    future = series({"__name__": "DCGM_FI_DEV_GPU_UTIL", **gpu(9)}, [(5.0, AHEAD_MS)])
    soon = series({"__name__": "DCGM_FI_DEV_GPU_UTIL", **gpu(3)}, [(43.0, SOON_MS)])
    r = requests.post(s.url + "/api/v1/write", data=rw_body(*good, long_team, long_pod, future, soon),
                      headers=RW, timeout=60)
    print(r.status_code, r.text[:600])
    assert r.status_code == 400, r.text[:500]
    doc = r.json()
    assert (doc["stored"], doc["refused"]) == (3, 3), doc
    problems = sorted(doc["problems"])
    assert any("GPU-7" in p and "team: 900,000 bytes, over the 256-byte limit" in p for p in problems), problems
    assert any("GPU-8" in p and "k8s_pod: 5,000 bytes, over the 2,048-byte limit" in p for p in problems), problems
    assert any("GPU-9" in p and "ts: " in p and "more than 1 day ahead" in p for p in problems), problems
    assert stored(store) == [("GPU-1", 41.0), ("GPU-2", 42.0), ("GPU-3", 43.0)]


LINE = '{name}{{gpu="{n}",UUID="GPU-{n}",Hostname="dgx-1"{extra}}} {value}{ts}\n'


def dcgm(n: int, value, name="DCGM_FI_DEV_GPU_UTIL", extra="", ts=None) -> str:
    return LINE.format(name=name, n=n, value=value, extra=extra, ts=f" {ts}" if ts is not None else "")


def test_a_scrape_refuses_bad_rows_by_name_and_keeps_going(store, caplog):
    text = (dcgm(1, 50) + dcgm(1, 2000, "DCGM_FI_DEV_FB_USED")
            + dcgm(2, -5, "DCGM_FI_DEV_FB_USED")                           # negative bytes
            + dcgm(3, 2.0 ** 33, "DCGM_FI_DEV_XID_ERRORS")                 # XID above 2^32
            + dcgm(4, "+Inf", "DCGM_FI_DEV_SM_CLOCK")                      # infinite clock
            + dcgm(5, 50, extra=',namespace="' + "n" * 300 + '"')          # label over 256 bytes
            + dcgm(6, 50, ts=AHEAD_MS)                                     # 3 days ahead
            + dcgm(7, 50, ts=946_684_799_000)                              # before 2000
            + dcgm(8, 60) + dcgm(8, 60))                                   # a line repeated
    with TextServer(text) as server, caplog.at_level(logging.WARNING, logger="ingest.scrape"):
        job = ScrapeJob(store, ScrapeTarget("dcgm-rack-4", server.url, format="dcgm"), clock=lambda: NOW_MS / 1000)
        first = job()
        second = job()                                 # the next round goes on (the same rows: stored once)
    got = store.rows("SELECT gpu_uuid, util_gpu, mem_used_bytes FROM gpu_samples ORDER BY gpu_uuid")
    warnings = [r.getMessage() for r in caplog.records]
    print(f"stored {first} + {second}, refused {job.rows_refused}; {got}; log: {warnings[0][:300]}")
    assert (first, job.rows_refused) == (2, 12) and second == 2
    assert got == [("GPU-1", 50.0, 2000 * 1024 * 1024), ("GPU-8", 60.0, None)]
    assert all("dcgm-rack-4" in w and "6 of 8 rows refused, 2 stored" in w for w in warnings), warnings
    assert "GPU-2" in warnings[0] and "mem_used_bytes" in warnings[0]


def test_a_scrape_answer_over_the_cap_is_refused_whole(store):
    from ingest.limits import SCRAPE_MAX
    from ingest.scrape import ScrapeError

    with TextServer(dcgm(1, 50) + "# " + "x" * SCRAPE_MAX + "\n") as server:
        job = ScrapeJob(store, ScrapeTarget("huge", server.url, format="dcgm"))
        with pytest.raises(ScrapeError, match="over 64 MiB of metrics"):
            job()
    assert store.scalar("SELECT count() FROM gpu_samples") == 0


def test_an_agent_writing_straight_to_the_store_gets_the_same_checks(store):
    """``StoreDestination`` (an agent with a ClickHouse server DSN) and local sampling insert
    through ``insert_batch``: a bad row is refused by name, the good rows are stored once."""
    from collector.records import GPU_SAMPLE_COLUMNS
    from ingest.writer import StoreDestination
    from tests.helpers import batch as make_batch

    b = make_batch(1, rows=3)
    b.rows[1][GPU_SAMPLE_COLUMNS.index("team")] = "t" * 1000
    destination = StoreDestination(lambda: store)
    for _ in range(2):                                     # a resend stores nothing twice
        with pytest.raises(BatchRejected) as info:
            destination.send(b)
    print(info.value)
    assert "1 of 3 rows refused, 2 stored" in str(info.value) and "row 1 column team: 1,000 bytes" in str(info.value)
    assert store.rows("SELECT gpu_uuid FROM gpu_samples ORDER BY gpu_uuid") == [("GPU-0",), ("GPU-2",)]
