"""Group commit over real HTTP on loopback (issue #16 item 4): requests of many senders are
stored together in few inserts, each exactly once by key; one request's refused row answers that
request 400 and stores the others of its group; a store failure answers the whole group 503 and
their resends store every row once; a resend of an acknowledged batch stores nothing twice."""
from __future__ import annotations

import gzip
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from base.settings import Secret
from gpuledger.platform import Platform
from ingest.group_commit import LEDGER
from ingest.receiver import register_receiver
from ingest.telemetry_config import ReceiverConfig
from tests.helpers import ServedPlatform, agent_batch, batch, platform_config, series, snappy_literal, wait_until, write_request

TOKEN = "grouping-token"
BATCH = {"Content-Type": "application/json", "Content-Encoding": "gzip", "Authorization": f"Bearer {TOKEN}"}
RW = {"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy",
      "X-Prometheus-Remote-Write-Version": "0.1.0", "Authorization": f"Bearer {TOKEN}"}
TS = 1_784_000_000_000


class GatedStore:
    """The real store, except that inserts into gpu_samples wait until ``gate`` is set, may fail
    with ``fail`` (before storing, or after: the rows land, the answer is lost), and are counted
    in ``inserts`` (rows per insert)."""

    def __init__(self, store):
        self.store, self.gate, self.entered = store, threading.Event(), threading.Event()
        self.fail: Exception | None = None
        self.fail_after_storing = False
        self.inserts: list[int] = []
        self.gate.set()

    def __getattr__(self, name):
        return getattr(self.store, name)

    def insert(self, table, rows, columns=None, **kwargs):
        if table != "gpu_samples":
            return self.store.insert(table, rows, columns, **kwargs)
        self.entered.set()
        assert self.gate.wait(30)
        if self.fail is not None and not self.fail_after_storing:
            raise self.fail
        stored = self.store.insert(table, rows, columns, **kwargs)
        self.inserts.append(len(rows))
        if self.fail is not None:
            raise self.fail
        return stored


@pytest.fixture
def served(store):
    """``served()``: (loopback platform with the receiver on a GatedStore, the receiver, the gate)."""
    started = []

    def make():
        gated = GatedStore(store)
        platform = Platform(platform_config(), store)
        receiver = register_receiver(platform, gated, ReceiverConfig(token=Secret(TOKEN, "test")))
        started.append(ServedPlatform(platform).__enter__())
        return started[-1].url, receiver, gated
    yield make
    for s in started:
        s.__exit__(None, None, None)


def push(url: str, body: bytes) -> requests.Response:
    return requests.post(url + "/api/v1/ingest/batch", data=body, headers=BATCH, timeout=60)


def gz(b) -> bytes:
    return gzip.compress(b.to_json())


def counts_by_key(store) -> tuple[int, int]:
    return tuple(store.rows("SELECT count(), uniqExact(host, gpu_uuid, mig_instance, ts) FROM gpu_samples")[0])


def held_back(url, receiver, gated, bodies: list[bytes]):
    """Send ``bodies`` while an insert is held at the gate, so they queue and go in as one group;
    return (the futures of their answers, the pool), once all are queued."""
    gated.gate.clear()
    gated.entered.clear()
    pool = ThreadPoolExecutor(max_workers=len(bodies) + 1)
    first = pool.submit(push, url, gz(batch(999, host="opener")))
    wait_until(gated.entered.is_set, 30, 0.01, "the opening insert to start")
    futures = [pool.submit(push, url, b) for b in bodies]
    wait_until(lambda: receiver.groups.queued() == len(bodies), 30, 0.01, "the requests to queue")
    gated.entered.clear()
    gated.gate.set()
    assert first.result().status_code == 200
    return futures, pool


def test_many_concurrent_senders_are_stored_once_each_in_few_inserts(served, store):
    url, receiver, gated = served()
    senders, rounds = 100, 3
    bodies = [agent_batch(a, r, 8)[1] for a in range(senders) for r in range(rounds)]

    def send(body):                    # every batch sent twice, the second while others arrive
        return push(url, body).status_code, push(url, body).status_code

    with ThreadPoolExecutor(max_workers=senders) as pool:
        answers = list(pool.map(send, bodies))
    assert set(answers) == {(200, 200)}
    assert counts_by_key(store) == (senders * rounds * 8, senders * rounds * 8)
    assert len(gated.inserts) < senders * rounds      # grouped: fewer inserts than requests
    assert store.scalar(f"SELECT count() FROM {LEDGER}") == senders * rounds


def test_requests_arriving_during_an_insert_go_in_as_one(served, store):
    url, receiver, gated = served()
    futures, pool = held_back(url, receiver, gated, [gz(batch(n, rows=4, host=f"n{n}")) for n in range(5)])
    assert [f.result().json()["stored"] for f in futures] == [4] * 5
    pool.shutdown()
    assert gated.inserts == [3, 20]
    assert counts_by_key(store) == (23, 23)


def test_a_bad_request_in_a_group_is_answered_400_and_the_others_are_stored(served, store):
    url, receiver, gated = served()
    bad = batch(1, rows=4, host="bad")
    bad.rows[2][bad.columns.index("util_gpu")] = 150.0           # passes the type check; the CHECK refuses it
    negative = batch(2, rows=4, host="negative")
    negative.rows[0][negative.columns.index("mem_used_bytes")] = -5    # refused before the insert
    bodies = [gz(batch(0, rows=4, host="good-0")), gz(bad), gz(negative), gz(batch(3, rows=4, host="good-3"))]
    futures, pool = held_back(url, receiver, gated, bodies)
    answers = [f.result() for f in futures]
    pool.shutdown()
    assert [a.status_code for a in answers] == [200, 400, 400, 200]
    assert {k: answers[1].json()[k] for k in ("stored", "refused")} == {"stored": 3, "refused": 1}
    assert answers[1].json()["problems"][0].startswith("row 2: the store refused it")
    assert {k: answers[2].json()[k] for k in ("stored", "refused")} == {"stored": 3, "refused": 1}
    assert "row 0 column mem_used_bytes" in answers[2].json()["problems"][0]
    hosts = dict(store.rows("SELECT host, count() FROM gpu_samples GROUP BY host"))
    assert hosts == {"opener": 3, "good-0": 4, "bad": 3, "negative": 3, "good-3": 4}


def test_a_resent_acknowledged_batch_stores_nothing_twice(served, store):
    url, receiver, gated = served()
    first = [gz(batch(n, rows=4, host=f"n{n}")) for n in range(4)]
    assert [push(url, b).status_code for b in first] == [200] * 4
    # resent together with new ones, in one group, and once more alone
    futures, pool = held_back(url, receiver, gated, first[:2] + [gz(batch(9, rows=4, host="new"))] + first[2:])
    assert [f.result().status_code for f in futures] == [200] * 5
    pool.shutdown()
    assert push(url, first[0]).json() == {"id": "n0/gpu_samples/0", "stored": 4}
    assert counts_by_key(store) == (3 + 5 * 4, 3 + 5 * 4)
    assert receiver.groups.counts["resends"] == 5


@pytest.mark.parametrize("after_storing", [False, True], ids=["insert-failed", "stored-then-answer-lost"])
def test_a_store_failure_answers_the_whole_group_503_and_resends_store_once(served, store, after_storing):
    url, receiver, gated = served()
    gated.gate.clear()
    gated.entered.clear()
    pool = ThreadPoolExecutor(max_workers=8)
    opener = pool.submit(push, url, gz(batch(999, host="opener")))
    wait_until(gated.entered.is_set, 30, 0.01, "the opening insert to start")
    bodies = [gz(batch(n, rows=4, host=f"n{n}")) for n in range(4)]
    rw = snappy_literal(write_request(series({"__name__": "DCGM_FI_DEV_GPU_UTIL", "UUID": "GPU-rw",
                                              "Hostname": "rw-node", "gpu": "0"}, [(42.0, TS)])))
    futures = [pool.submit(push, url, b) for b in bodies]
    futures.append(pool.submit(requests.post, url + "/api/v1/write", data=rw, headers=RW, timeout=60))
    wait_until(lambda: receiver.groups.queued() == 5, 30, 0.01, "the requests to queue")
    gated.fail, gated.fail_after_storing = ConnectionError("the store went away"), after_storing
    gated.entered.clear()
    gated.gate.set()
    answers = [f.result() for f in [opener] + futures]
    assert [a.status_code for a in answers] == [503] * 6
    assert "retry later" in answers[1].json()["error"]
    gated.fail = None
    assert [push(url, b).status_code for b in bodies] == [200] * 4
    assert requests.post(url + "/api/v1/write", data=rw, headers=RW, timeout=60).status_code == 204
    assert push(url, gz(batch(999, host="opener"))).status_code == 200
    pool.shutdown()
    assert counts_by_key(store) == (3 + 16 + 1, 3 + 16 + 1)


def test_column_checks_refuse_the_same_rows_as_value_by_value_checks(store):
    from datetime import datetime, timezone

    from ingest.writer import split_valid, value_problem
    b = batch(1, rows=8)
    cols = b.columns
    bad = {1: ("gpu_index", 2.0), 2: ("gpu_index", True), 3: ("power_w", float("nan")), 4: ("host", None),
           5: ("gpu_uuid", "x" * 3000), 6: ("ts", datetime(1999, 1, 1, tzinfo=timezone.utc)), 7: ("xid_last", 2**33)}
    for n, (column, value) in bad.items():
        b.rows[n][cols.index(column)] = value
    good, problems = split_valid(store.column_types("gpu_samples"), cols, b.rows)
    assert [n for n, _ in good] == [0, 1]                    # 2.0 fits an integer column
    assert [(p.row, p.column) for p in problems] == [(n, bad[n][0]) for n in range(2, 8)]
    types = store.column_types("gpu_samples")
    assert problems[0].reason == value_problem(types["gpu_index"], True)


def test_requests_arriving_within_the_gather_time_go_in_as_one_insert(store):
    """A group is taken at most every ``gather_s``: the first request goes in at once, the ones
    sent right after it wait for the gather time and go in together."""
    from ingest.group_commit import GroupCommit, Request

    gated = GatedStore(store)
    groups = GroupCommit(gated, gather_s=2.0)
    columns = tuple(batch(0).columns)

    def send(n: int):
        b = batch(n, rows=2, host=f"g{n}")
        return groups.store_request(Request(b.id, "gpu_samples", columns, list(enumerate(b.rows)))).stored

    assert send(0) == 2
    with ThreadPoolExecutor(max_workers=6) as pool:
        assert list(pool.map(send, range(1, 7))) == [2] * 6
    assert gated.inserts == [2, 12]
    assert counts_by_key(store) == (14, 14)
