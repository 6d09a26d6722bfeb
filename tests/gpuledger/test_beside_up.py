"""Every command that needs the store works while ``gpuledger up`` holds it (issue #16, item 2):
``query``, ``alerts check``, ``alerts silence add|list|expire``, ``rollup``, ``ingest samples`` and
``ingest billing`` run inside the platform (gpuledger/remote.py) through the link file it writes
in the store directory (gpuledger/link.py). Real processes on loopback: one ``up`` for the module,
each command a ``python -m gpuledger`` of its own."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from gpuledger.link import LINK_FILE
from tests.helpers import ROOT, Proc, env, start_up, up_config

FOCUS = ROOT.parent / "shared" / "data" / "focus" / "focus_1.0_sample_first600rows.csv"
CSV = "ts,host,gpu_uuid,util_gpu,power_w\n" + "".join(
    f"2026-03-02 {h:02d}:{m:02d}:00,beside-1,GPU-b{g},{(h * 7 + m + g) % 100},{200 + g}\n"
    for h in range(0, 3) for m in range(0, 60, 5) for g in range(2))


def cli(store, *args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "gpuledger", "--store", f"chdb://{store}", *args], cwd=cwd,
                          env=env(), capture_output=True, text=True, timeout=300)


def rows(store, sql):
    out = cli(store, "query", sql, "--format", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def up(tmp_path_factory):
    base = tmp_path_factory.mktemp("beside")
    store = base / "store"
    proc, url = start_up(store, up_config(base / "gpuledger.toml"))
    yield store, url, base
    assert proc.stop() == 0, proc.tail()
    assert not (store / LINK_FILE).exists(), "a clean stop removes the link file"


def test_the_link_file_is_private_and_another_token_is_refused(up):
    store, url, _ = up
    path = store / LINK_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    info = json.loads(path.read_text())
    assert info["web"] == url and len(info["token"]) >= 32
    os.kill(info["pid"], 0)
    request = urllib.request.Request(url + "/api/v1/cli", data=b'{"argv": ["query", "SELECT 1"]}\n', method="POST",
                                     headers={"Authorization": "Bearer not-the-token"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 401


def test_query_reads_and_writes_through_the_platform(up):
    store, _, _ = up
    out = cli(store, "query", "SELECT number AS n FROM numbers(3)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "(3 rows)" and out.stdout.split()[:2] == ["n", "-"]
    refused = cli(store, "query", "SELECT 1 INTO OUTFILE '/tmp/gpuledger-beside.csv'")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.startswith("gpuledger: error: query refused: INTO OUTFILE") and refused.stderr.count("\n") == 1
    insert = "INSERT INTO ingested_files (kind, path, sha256, rows) VALUES ('beside', 'p', 'd', 7)"
    reader = cli(store, "query", insert)
    assert reader.returncode == 2 and "not allowed for a reader" in reader.stderr
    assert cli(store, "query", "--write", insert).returncode == 0
    assert rows(store, "SELECT sum(rows) AS r FROM ingested_files WHERE kind = 'beside'") == [{"r": 7}]


def test_silences_add_list_expire(up):
    store, _, _ = up
    added = cli(store, "alerts", "silence", "add", "team=beside", "--comment", "maintenance", "--duration", "1h")
    assert added.returncode == 0, added.stderr
    silence_id = added.stdout.split()[1]
    listed = cli(store, "alerts", "silence", "list", "--format", "json")
    assert [s["id"] for s in json.loads(listed.stdout) if s["matchers"] == "team=beside"] == [silence_id]
    expired = cli(store, "alerts", "silence", "expire", silence_id)
    assert expired.returncode == 0 and f"silence {silence_id} expired" in expired.stdout
    listed = cli(store, "alerts", "silence", "list", "--format", "json")
    assert silence_id not in [s["id"] for s in json.loads(listed.stdout)]


def test_alerts_check_evaluates_the_rules(up):
    store, _, _ = up
    out = cli(store, "alerts", "check")
    assert out.returncode == 0, out.stderr
    assert " rule(s) evaluated at " in out.stdout.splitlines()[-1]
    assert int(out.stdout.splitlines()[-1].split()[0]) > 0


def test_ingest_samples_once_then_rollup_derives(up):
    store, _, base = up
    (base / "beside.csv").write_text(CSV)
    (base / "bad.csv").write_text("ts,host,gpu_uuid,util_gpu\n2026-03-02 00:00:00,h,GPU-x,not-a-number\n")
    first = cli(store, "ingest", "samples", "beside.csv", cwd=base)
    assert first.returncode == 0, first.stderr
    assert first.stdout == f"loaded {CSV.count(chr(10)) - 1} rows from 1 file(s); 0 already loaded, skipped\n"
    assert "[1/1] beside.csv: 72 rows" in first.stderr
    again = cli(store, "ingest", "samples", "beside.csv", cwd=base)
    assert again.stdout == "loaded 0 rows from 0 file(s); 1 already loaded, skipped\n"
    assert "beside.csv: already loaded (as beside.csv), skipped" in again.stderr
    assert rows(store, "SELECT count() AS n FROM gpu_samples WHERE host = 'beside-1'") == [{"n": 72}]
    assert rows(store, "SELECT path FROM ingested_files WHERE kind = 'samples'") == [{"path": "beside.csv"}]
    bad = cli(store, "ingest", "samples", "bad.csv", cwd=base)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr == ("gpuledger: error: bad.csv, row 1, column 'util_gpu': cannot read 'not-a-number' as "
                          "Float32; nothing from this file was stored\n")
    missing = cli(store, "ingest", "samples", "nothere.csv", cwd=base)
    assert (missing.returncode, missing.stderr) == (2, "gpuledger: error: nothere.csv: no such file or directory\n")

    before = rows(store, "SELECT count() AS n FROM gpu_hour WHERE host = 'beside-1'")
    derived = cli(store, "rollup", "--since", "2026-03-01", "--until", "2026-03-03")
    assert derived.returncode == 0, derived.stderr
    assert derived.stdout.startswith("derived ") and " day(s), " in derived.stdout
    assert "derived 2026-03-02" in derived.stderr          # progress streamed back
    after = rows(store, "SELECT count() AS n FROM gpu_hour WHERE host = 'beside-1'")
    assert before == [{"n": 0}] and after[0]["n"] > 0


def test_ingest_billing_replaces_a_month(up):
    store, _, base = up
    lines = FOCUS.read_text().splitlines(keepends=True)
    (base / "bill").mkdir()
    (base / "bill" / "full.csv").write_text("".join(lines))
    (base / "restated.csv").write_text("".join(lines[:51]))
    month = "SELECT count() AS n FROM billing_line_items WHERE toYYYYMM(BillingPeriodStart) = 202409"
    first = cli(store, "ingest", "billing", "bill", cwd=base)
    assert first.returncode == 0, first.stderr
    assert rows(store, month) == [{"n": 600}]
    second = cli(store, "ingest", "billing", "restated.csv", cwd=base)
    assert second.returncode == 0, second.stderr
    assert "replaced" in second.stdout
    assert rows(store, month) == [{"n": 50}]
    assert rows(store, "SELECT DISTINCT source_file AS f FROM billing_line_items WHERE toYYYYMM(BillingPeriodStart) "
                       "= 202409") == [{"f": "restated.csv"}]


def test_a_store_held_by_another_process_says_so(tmp_path):
    store = tmp_path / "store"
    holder = Proc(["-c", "import time\nfrom ingest.store import connect\n"
                         f"s = connect('chdb://{store}')\nprint('held', flush=True)\ntime.sleep(120)"])
    try:
        holder.wait_for("held", timeout_s=60)
        out = cli(store, "query", "SELECT 1")
        assert out.returncode == 2 and out.stdout == ""
        assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
        assert f"the embedded store {store} is held by process {holder.p.pid}" in out.stderr
        assert "not a running gpuledger platform" in out.stderr
    finally:
        holder.kill()
