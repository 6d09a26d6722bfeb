"""The SQL port (#16 item 1): a running ``gpuledger up`` answers ClickHouse's HTTP interface on its
embedded store, for real clients on loopback: clickhouse-connect's HTTP client and curl."""
from __future__ import annotations

import base64
import datetime as dt
import gzip
import io
import json
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from decimal import Decimal

import pytest

from tests.helpers import ROOT, env, free_port, start_up

clickhouse_connect = pytest.importorskip("clickhouse_connect")

EXAMPLES = re.findall(r"```sql\n(.*?)```", (ROOT / "sql" / "README.md").read_text(), re.S)
READER_PW, ADMIN_PW = "finance-pw-7", "ops-pw-9"
CURL = shutil.which("curl")


@pytest.fixture(scope="module")
def up(tmp_path_factory):
    """A small demo store (16 GPUs × 7 days) served by ``gpuledger up`` with a reader and an admin."""
    work = tmp_path_factory.mktemp("sqlport")
    store = work / "store"
    demo = subprocess.run([sys.executable, "-m", "gpuledger", "--store", f"chdb://{store}", "demo", "--no-serve",
                           "--gpus", "16", "--days", "7"], cwd=ROOT, env=env(), capture_output=True, text=True,
                          timeout=300)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    port = free_port()
    import hashlib

    config = work / "up.toml"
    config.write_text((work / "store-input" / "gpuledger.toml").read_text() + f"""
[collector]
local_sampling = false

[sql]
port = {port}
max_result_rows = 100000

[[sql.users]]
name = "finance"
password = {{ env = "SQL_FINANCE_PASSWORD" }}
role = "reader"

[[sql.users]]
name = "ops"
password_hash = "{hashlib.sha256(ADMIN_PW.encode()).hexdigest()}"
role = "admin"
""")
    proc, url = start_up(store, config, extra_env={"SQL_FINANCE_PASSWORD": READER_PW})
    try:
        yield {"port": port, "sql": f"http://127.0.0.1:{port}/", "web": url, "proc": proc}
    finally:
        assert proc.stop() == 0, proc.tail()


def reader(up, **kw):
    return clickhouse_connect.get_client(host="127.0.0.1", port=up["port"], username="finance", password=READER_PW, **kw)


def admin(up):
    return clickhouse_connect.get_client(host="127.0.0.1", port=up["port"], username="ops", password=ADMIN_PW)


def http(up, sql: str = "", params: dict | None = None, user=("finance", READER_PW), headers: dict | None = None,
         method: str = "POST"):
    """(status, headers, body bytes) of one request to the SQL port."""
    url = up["sql"] + ("?" + urllib.parse.urlencode(params) if params else "")
    request = urllib.request.Request(url, data=sql.encode() if method == "POST" else None, method=method,
                                     headers=dict(headers or {}))
    if user:
        request.add_header("Authorization", "Basic " + base64.b64encode(":".join(user).encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


@pytest.mark.parametrize("sql", EXAMPLES, ids=[f"example{i}" for i in range(len(EXAMPLES))])
def test_clickhouse_connect_runs_every_readme_example_with_typed_results(up, sql):
    client = reader(up)
    started = time.perf_counter()
    result = client.query(sql)
    elapsed_ms = (time.perf_counter() - started) * 1000
    assert result.result_rows, sql
    print(f"{elapsed_ms:.1f} ms  {len(result.result_rows)} rows  {sql.split(chr(10))[0][:60]}")
    for name, kind, value in zip(result.column_names, result.column_types, result.result_rows[0]):
        base = kind.base_type
        if base.startswith(("Float", "Decimal", "Int", "UInt")):
            assert isinstance(value, (int, float, Decimal)) and not isinstance(value, bool), (name, base, value)
        elif base.startswith("DateTime"):
            assert isinstance(value, dt.datetime), (name, value)
        elif base.startswith("Date"):
            assert isinstance(value, dt.date), (name, value)


def test_clickhouse_connect_binds_parameters_and_reads_arrow_and_dataframes(up):
    client = reader(up)
    rows = client.query("SELECT team, budget_usd_month FROM config_teams WHERE budget_usd_month > {floor:Float64} ORDER BY team",
                        parameters={"floor": 0.0}).result_rows
    assert rows and all(isinstance(b, float) and b > 0 for _, b in rows)
    frame = client.query_df("SELECT day, coverage_pct FROM v_allocation_coverage ORDER BY day")
    assert len(frame) >= 7 and str(frame["coverage_pct"].dtype) == "float64"
    table = client.query_arrow("SELECT environment, count() AS n FROM gpu_samples GROUP BY environment")
    assert set(table.column("environment").to_pylist()) == {"aws", "azure", "gcp", "onprem"}


@pytest.mark.skipif(CURL is None, reason="curl is not installed")
def test_curl_runs_a_query_in_tsv_and_in_json(up):
    sql = "SELECT environment, count() AS n FROM gpu_samples GROUP BY environment ORDER BY environment"
    tsv = subprocess.run([CURL, "-sS", "--fail-with-body", "-u", f"finance:{READER_PW}", up["sql"], "--data-binary", sql],
                         capture_output=True, text=True, timeout=60)
    assert tsv.returncode == 0, tsv.stdout + tsv.stderr
    lines = [line.split("\t") for line in tsv.stdout.splitlines()]
    assert [env_ for env_, _ in lines] == ["aws", "azure", "gcp", "onprem"] and all(int(n) > 0 for _, n in lines)
    js = subprocess.run([CURL, "-sS", "--fail-with-body", "-H", "X-ClickHouse-User: finance", "-H",
                         f"X-ClickHouse-Key: {READER_PW}", "--get", "--data-urlencode", f"query={sql} FORMAT JSON",
                         up["sql"]], capture_output=True, text=True, timeout=60)
    assert js.returncode == 0, js.stdout + js.stderr
    doc = json.loads(js.stdout)
    assert [c["name"] for c in doc["meta"]] == ["environment", "n"] and doc["rows"] == 4
    assert doc["data"][0]["environment"] == "aws"


def test_formats_default_format_and_query_parameters(up):
    sql = "SELECT team, budget_usd_month FROM config_teams WHERE team != {skip:String} ORDER BY team"
    p = {"param_skip": "nobody"}
    status, headers, body = http(up, sql, {**p, "default_format": "CSVWithNames"})
    assert status == 200 and headers["X-ClickHouse-Format"] == "CSVWithNames"
    assert body.decode().splitlines()[0] == '"team","budget_usd_month"'
    status, headers, body = http(up, sql + " FORMAT JSONEachRow", p)
    assert status == 200 and json.loads(body.splitlines()[0])["team"]
    status, _, body = http(up, sql, {**p, "default_format": "TabSeparatedWithNamesAndTypes"})
    assert body.decode().splitlines()[:2] == ["team\tbudget_usd_month", "String\tFloat64"]
    status, _, body = http(up, sql, {**p, "default_format": "RowBinaryWithNamesAndTypes"})
    assert status == 200 and body[:1] == b"\x02" and b"budget_usd_month" in body and b"Float64" in body
    status, _, body = http(up, sql, {**p, "default_format": "Native"})
    assert status == 200 and body[:1] == b"\x02"
    import pyarrow.ipc

    status, _, body = http(up, sql, {**p, "default_format": "Arrow"})
    table = pyarrow.ipc.open_file(io.BytesIO(body)).read_all()
    assert table.column_names == ["team", "budget_usd_month"] and table.num_rows >= 1
    # the query in the URL and in the body, joined as ClickHouse joins them
    status, _, body = http(up, "FROM config_teams", {"query": "SELECT count()"})
    assert status == 200 and int(body) >= 1
    status, _, body = http(up, method="GET", params={"query": "SELECT 1 + {n:UInt8}", "param_n": "41"})
    assert (status, body) == (200, b"42\n")


def test_ping_root_and_gzip(up):
    assert http(up, method="GET", user=None)[2] == b"Ok."[:3] + b"\n"
    with urllib.request.urlopen(up["sql"].rstrip("/") + "/ping", timeout=10) as r:
        assert r.read() == b"Ok.\n"
    sql = "SELECT * FROM gpu_samples LIMIT 2000 FORMAT TSV"
    status, headers, body = http(up, sql, {"enable_http_compression": "1"}, headers={"Accept-Encoding": "gzip"})
    assert status == 200 and headers["Content-Encoding"] == "gzip"
    plain = gzip.decompress(body)
    assert len(plain.splitlines()) == 2000 and len(body) < len(plain) / 3
    status, headers, body = http(up, sql, headers={"Accept-Encoding": "gzip"})   # not asked for: not compressed
    assert "Content-Encoding" not in headers and len(body.splitlines()) == 2000


REFUSED = {
    "INSERT INTO config_teams (team) VALUES ('x')": (403, 164, "INSERT statements are not allowed for a reader"),
    "CREATE TABLE t (a UInt8) ENGINE = Memory": (403, 164, "CREATE statements are not allowed for a reader"),
    "SELECT * FROM file('/etc/passwd', 'LineAsString')": (403, 497, "file() reads or writes files"),
    "SELECT * FROM url('http://127.0.0.1:1/x', 'CSV')": (403, 497, "url() reads or writes files"),
    "SELECT 1 INTO OUTFILE '/tmp/gpuledger-outfile'": (403, 497, "INTO OUTFILE"),
    "SELECT 1 SETTINGS readonly = 0": (403, 497, "query settings (SETTINGS / SET) are not allowed for a reader"),
    "SELECT * FROM remote('127.0.0.1', system.one)": (403, 497, "remote() reads or writes"),
}


@pytest.mark.parametrize("sql", REFUSED, ids=[s.split("(")[0][:30] for s in REFUSED])
def test_a_reader_is_refused_writes_files_urls_and_settings(up, sql):
    status, headers, body = http(up, sql)
    want_status, want_code, text = REFUSED[sql]
    assert (status, headers["X-ClickHouse-Exception-Code"]) == (want_status, str(want_code)), body
    assert body.decode().startswith(f"Code: {want_code}. DB::Exception: query refused: ") and text in body.decode()
    with pytest.raises(Exception) as caught:
        reader(up).query(sql)
    assert getattr(caught.value, "code", None) == want_code


def test_a_reader_browses_the_catalog_as_bi_tools_do_but_not_other_system_tables(up):
    tables = {r[0] for r in reader(up).query(
        "SELECT name FROM system.tables WHERE database = currentDatabase()").result_rows}
    columns = reader(up).query("SELECT name, type FROM system.columns WHERE database = currentDatabase() "
                               "AND table = 'v_team_spend'").result_rows
    assert {"v_team_spend", "gpu_samples"} <= tables and "team" in {c[0] for c in columns}
    status, headers, body = http(up, "SELECT query FROM system.query_log")
    assert (status, headers["X-ClickHouse-Exception-Code"]) == (403, "497"), body


def test_a_reader_cannot_lift_readonly_or_the_limits(up):
    for params, code in [({"readonly": "0"}, 164), ({"max_execution_time": "0"}, 452),
                         ({"max_execution_time": "3600"}, 452), ({"max_result_rows": "1000000000"}, 452),
                         ({"max_memory_usage": "0"}, 452), ({"allow_ddl": "1"}, 164), ({"database": "system"}, 291)]:
        status, headers, body = http(up, "SELECT 1", params)
        assert (status, headers["X-ClickHouse-Exception-Code"]) == (403, str(code)), (params, body)
    # the configured result-row limit holds; lowering a limit is allowed
    status, headers, body = http(up, "SELECT number FROM numbers(200000)")
    assert (status, headers["X-ClickHouse-Exception-Code"]) == (500, "396"), body
    status, headers, body = http(up, "SELECT number FROM numbers(10)", {"max_result_rows": "5"})
    assert headers["X-ClickHouse-Exception-Code"] == "396"
    status, _, body = http(up, "SELECT count() FROM numbers(10)", {"max_execution_time": "5",
                                                                  "output_format_json_quote_64bit_integers": "1"})
    assert (status, body) == (200, b"10\n")


def test_wrong_credentials_get_401_and_code_516(up):
    for user in [("finance", "wrong"), ("nobody", READER_PW), None]:
        status, headers, body = http(up, "SELECT 1", user=user)
        assert (status, headers["X-ClickHouse-Exception-Code"]) == (401, "516"), (user, body)
        assert b"Code: 516. DB::Exception:" in body and b"(AUTHENTICATION_FAILED)" in body
    status, _, _ = http(up, "SELECT 1", user=None, headers={"X-ClickHouse-User": "finance", "X-ClickHouse-Key": "no"})
    assert status == 401
    status, _, body = http(up, "SELECT 1", {"user": "finance", "password": READER_PW}, user=None)
    assert (status, body) == (200, b"1\n")
    with pytest.raises(Exception) as caught:
        clickhouse_connect.get_client(host="127.0.0.1", port=up["port"], username="finance", password="wrong")
    assert getattr(caught.value, "code", None) == 516


def test_an_admin_writes_and_reads_anything_and_get_is_read_only(up):
    client = admin(up)
    client.command("CREATE TABLE IF NOT EXISTS scratch_sql_port (a UInt32, s String) ENGINE = MergeTree ORDER BY a")
    client.insert("scratch_sql_port", [[1, "x"], [2, "y"]], column_names=["a", "s"])
    assert client.query("SELECT a, s FROM scratch_sql_port ORDER BY a").result_rows == [(1, "x"), (2, "y")]
    assert client.query("SELECT count() FROM system.tables WHERE name = 'scratch_sql_port'").result_rows == [(1,)]
    status, headers, _ = http(up, method="GET", user=("ops", ADMIN_PW),
                              params={"query": "INSERT INTO scratch_sql_port VALUES (3, 'z')"})
    assert (status, headers["X-ClickHouse-Exception-Code"]) == (403, "164")
    client.command("DROP TABLE scratch_sql_port")


def test_syntax_errors_are_clickhouse_errors_and_health_shows_the_port(up):
    status, headers, body = http(up, "SELEC 1")
    assert status == 400 and headers["X-ClickHouse-Exception-Code"] == "62" and body.startswith(b"Code: 62. DB::Exception:")
    status, headers, body = http(up, "SELECT * FROM no_such_table")
    assert status == 404 and headers["X-ClickHouse-Exception-Code"] == "60"
    with urllib.request.urlopen(up["web"] + "/healthz", timeout=10) as r:
        health = json.loads(r.read())
    assert health["parts"]["sql"]["last_ok"] and f"port {up['port']}" in health["parts"]["sql"]["detail"]
