"""The dashboard's reader (dashboard/reader.py): a bounded pool of read-only handles on a real
embedded store, and a result cache that a finished rollup empties."""
from __future__ import annotations

import threading
import time
from datetime import date, timedelta

import pytest

from dashboard import queries
from dashboard.filters import parse
from dashboard.reader import RECENT_S, ReadPool, ResultCache, reader_for


def test_the_pool_opens_at_most_its_size_and_its_handles_refuse_writes(store):
    opened = []

    def open_handle():
        opened.append(store.read_only())
        return opened[-1]

    pool = ReadPool(open_handle, size=2)
    results = []
    threads = [threading.Thread(target=lambda: results.append(pool.scalar("SELECT sum(number) FROM numbers(2000000)")))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [1999999000000] * 8
    assert 1 <= len(opened) <= 2
    with pytest.raises(Exception, match="readonly"):
        pool.rows("CREATE TABLE refused (x UInt8) ENGINE = Memory")
    pool.close()


def test_concurrent_requests_for_one_key_run_the_query_once():
    cache, calls = ResultCache(), []

    def load():
        calls.append(1)
        time.sleep(0.2)
        return {"rows": [1, 2]}

    got = []
    threads = [threading.Thread(target=lambda: got.append(cache.get("q", {"a": [1]}, load))) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and got == [{"rows": [1, 2]}] * 10
    got[0]["rows"].append(3)                                     # each caller has its own copy
    assert cache.get("q", {"a": [1]}, load) == {"rows": [1, 2]} and len(calls) == 1
    assert cache.get("q", {"a": [2]}, load) and len(calls) == 2   # other parameters, other result


def test_a_result_read_while_a_derivation_finishes_is_not_kept():
    cache = ResultCache()

    def load_during_derivation():
        cache.invalidate()
        return "old"

    assert cache.get("q", {}, load_during_derivation) == "old"
    assert cache.get("q", {}, lambda: "new") == "new"


def test_results_expire_after_their_age():
    now = [0.0]
    cache = ResultCache(max_age_s=300, clock=lambda: now[0])
    cache.get("alerts", {}, lambda: 1, max_age_s=5)
    now[0] = 4.0
    assert cache.get("alerts", {}, lambda: 2, max_age_s=5) == 1
    now[0] = 6.0
    assert cache.get("alerts", {}, lambda: 3, max_age_s=5) == 3
    assert cache.get("fleet", {}, lambda: 4) == 4
    now[0] = 200.0
    assert cache.get("fleet", {}, lambda: 5) == 4
    now[0] = 400.0
    assert cache.get("fleet", {}, lambda: 6) == 6


def test_a_finished_rollup_empties_the_cache_of_its_store_only(store, tmp_path):
    from gpuledger.config import Config
    from ingest.rollup.run import rollup
    from ingest.schema import prepare
    from ingest.store import connect

    reader = reader_for(store)
    f = parse({"range": "7d"}, date(2026, 3, 10))
    assert queries.fleet(reader, f).empty
    store.client.insert("gpu_cost_day", [[date(2026, 3, 9), "h", "GPU-1", "", "onprem", "r", "p", "", "", "A100",
                                          "550", "12.4", "t", 1, 24.0, 12.0, 5.0, 24.0, 0.0, 0.0, 0.0, 24.0, 0]],
                        column_names=store.columns("gpu_cost_day"))
    assert queries.fleet(reader, f).empty                       # cached: nothing derived since
    other = connect(f"chdb://{store.target.path}?database=other_{tmp_path.name[-8:]}")
    prepare(other)
    rollup(other, Config(), since=date(2026, 3, 9), until=date(2026, 3, 9))
    assert queries.fleet(reader, f).empty                       # another store's derivation
    rollup(store, Config(), since=date(2026, 3, 9), until=date(2026, 3, 9))
    assert int(queries.fleet(reader, f)["gpus"].sum()) == 1      # its own: read again
    other.command(f"DROP DATABASE IF EXISTS `{other.target.database}`")
    reader.close()


def test_a_handle_that_cannot_be_opened_fails_its_request_and_frees_its_place(store):
    tries = []

    def open_handle():
        tries.append(1)
        if len(tries) == 1:
            raise OSError("no handle")
        return store.read_only()

    pool = ReadPool(open_handle, size=1)
    with pytest.raises(OSError):
        pool.scalar("SELECT 1")
    assert pool.scalar("SELECT 2") == 2
    pool.close()


def test_users_opening_a_page_at_once_build_it_once_until_the_window_the_minute_the_data_or_its_age_changes(site, monkeypatch):
    """dashboard.state.shared: concurrent requests of a page's callback with the same filters get one
    build of its tables and figures; another team filter, the next clock minute, a finished
    derivation (the cache emptied) or the page's age limit builds it again."""
    from base.events import ROLLUP_FINISHED, announce
    from dashboard import probe, state

    st = site.platform.web.extensions[state.KEY]
    now = st.clock().replace(second=10, microsecond=0)
    monkeypatch.setattr(st, "clock", lambda: now)
    tick = 0.0                                                       # the rendered cache's own clock (ages)
    monkeypatch.setattr(st.store.rendered, "clock", lambda: tick)
    built, build = [], queries.with_rightsizing

    def counted(*args, **kwargs):          # a step of the Placement callback that no query cache covers
        built.append(1)
        time.sleep(0.3)                    # the others ask while it is built
        return build(*args, **kwargs)

    monkeypatch.setattr(queries, "with_rightsizing", counted)

    def client():
        c = site.platform.web.test_client()
        c.environ_base["HTTP_AUTHORIZATION"] = site.auth
        return c

    dep = next(d for d in probe.page_callbacks(client(), "placement") if "placement-recommendations" in d["output"])
    data = parse({"range": "7d"}, now).to_data()

    def ask(filters_data=data):
        call = probe.call(client(), "placement", dep, filters_data)
        assert call.status == 200, call
        return call.response

    announce(ROLLUP_FINISHED, st.store.target)                      # as a finished derivation does: nothing kept
    got = []
    threads = [threading.Thread(target=lambda: got.append(ask())) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 6 and len(built) == 1
    assert all(r == got[0] for r in got) and "Savings if every positive recommendation" in str(got[0])
    assert ask() == got[0] and len(built) == 1                       # kept
    ask(parse({"range": "7d", "team": "llm-finetune"}, now).to_data())
    assert len(built) == 2                                           # another team: its own build
    now = now.replace(second=50)
    assert ask() == got[0] and len(built) == 2                       # the same minute
    now += timedelta(minutes=1)
    ask()
    assert len(built) == 3                                           # the next minute: built again
    announce(ROLLUP_FINISHED, st.store.target)
    ask()                                  # (not compared: sums of floats may differ in their last digit)
    assert len(built) == 4
    tick += RECENT_S - 1
    ask()
    assert len(built) == 4                                           # Placement's parts are kept 5 s (its queue pressure)
    tick += 2
    ask()
    assert len(built) == 5
