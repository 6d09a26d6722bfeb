"""The query policy (ingest/sqlguard.py): what `gpuledger query` lets a reader and an admin run.

The refusals are checked on ClickHouse's own parse, so comments, case and quoting do not get
around them; the command itself is run as a real process against an embedded store."""
from __future__ import annotations

import subprocess
import sys

import pytest

from base.errors import QueryRefused
from ingest.sqlguard import ADMIN, READER, check_query
from tests.helpers import env


@pytest.fixture
def guard_store(store_dsn):
    from ingest.store import connect

    handle = connect(store_dsn)
    handle.command("CREATE TABLE t (a Int32) ENGINE = Memory")
    yield handle
    handle.command(f"DROP DATABASE IF EXISTS `{handle.target.database}`")


REFUSED = [
    (READER, "SELECT 1 INTO OUTFILE 'x.csv'", "INTO OUTFILE"),
    (READER, "sElEcT 1 iNtO /* hidden */ OuTfIlE 'x.csv' -- tail", "INTO OUTFILE"),
    (ADMIN, "SELECT 1 INTO OUTFILE 'x.csv'", "INTO OUTFILE"),
    (ADMIN, "INSERT INTO t FROM INFILE '/etc/passwd' FORMAT CSV", "FROM INFILE"),
    (READER, "SELECT * FROM file('/etc/passwd', 'LineAsString')", "file() reads or writes files"),
    (READER, "SELECT * FROM /**/ FiLe('/etc/passwd', 'LineAsString')", "FiLe() reads or writes files"),
    (READER, "SELECT file('/etc/passwd')", "file() reads or writes files"),
    (READER, "WITH a AS (SELECT * FROM url('http://127.0.0.1:1/x', CSV, 'a Int32')) SELECT * FROM a", "url()"),
    (READER, "SELECT * FROM numbers(3) WHERE number IN (SELECT dummy FROM remote('127.0.0.1', system.one))", "remote()"),
    (READER, "SELECT * FROM s3('http://127.0.0.1:1/b/k.csv')", "s3()"),
    (READER, "SELECT * FROM executable('cat', 'CSV', 'a String')", "executable()"),
    (READER, "SELECT * FROM mysql('127.0.0.1:1', 'd', 't', 'u', 'p')", "mysql()"),
    (READER, "SELECT * FROM merge(currentDatabase(), '.*')", "table function merge() is not allowed"),
    (READER, "SELECT 1 SETTINGS readonly = 0", "query settings"),
    (READER, "SELECT 1 SETTINGS max_execution_time = 100000", "query settings"),
    (READER, "SET readonly = 0", "SET statements are not allowed for a reader"),
    (READER, "SELECT 1; SELECT 2", "more than one statement"),
    (READER, "SELECT 1; SELECT 1 INTO OUTFILE 'x.csv'", "more than one statement"),
    (READER, "SYSTEM FLUSH LOGS", "SYSTEM statements"),
    (ADMIN, "SYSTEM SHUTDOWN", "SYSTEM statements are not allowed for an admin"),
    (ADMIN, "KILL QUERY WHERE 1", "KILL statements"),
    (ADMIN, "ATTACH TABLE x FROM '/tmp' (a Int32) ENGINE = MergeTree ORDER BY a", "ATTACH statements"),
    (ADMIN, "BACKUP TABLE t TO File('/tmp/b')", "BACKUP statements"),
    (READER, "INSERT INTO t SELECT 1", "INSERT statements are not allowed for a reader"),
    (ADMIN, "INSERT INTO t SELECT * FROM url('http://127.0.0.1:1/x', CSV, 'a Int32')", "url()"),
    (ADMIN, "INSERT INTO t SELECT * FROM input('a Int32') FORMAT CSV", "input()"),
    (ADMIN, "CREATE TABLE x (a Int32) ENGINE = File(CSV)", "File() reads or writes"),
    (ADMIN, "CREATE TABLE x (a Int32) ENGINE = URL('http://127.0.0.1:1/x', CSV)", "URL() reads or writes"),
    (ADMIN, "CREATE TABLE x AS file('x.csv', 'CSV', 'a Int32')", "file() reads or writes"),
    (ADMIN, "CREATE DICTIONARY d (a UInt64) PRIMARY KEY a SOURCE(FILE(path '/etc/passwd' format 'CSV')) "
            "LAYOUT(FLAT()) LIFETIME(0)", "dictionaries are not allowed"),
    (READER, "SELECT query FROM system.query_log", "outside the store's database"),
    (READER, "SELECT * FROM system.processes", "outside the store's database"),
    (ADMIN, "INSERT INTO FUNCTION file('w.csv', 'CSV', 'a Int32') SELECT 1", "file() reads or writes"),
    (ADMIN, "CREATE TABLE x (a Int32) ENGINE = MergeTree ORDER BY a SETTINGS disk = disk(type = local, path = '/tmp/d/')",
     "disk(...) puts a table's data in any directory"),
    (READER, "SELECT * FROM `file`('x')", "file() reads or writes"),
]


@pytest.mark.parametrize("role, sql, reason", REFUSED, ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(REFUSED)])
def test_refused_with_the_reason(guard_store, role, sql, reason):
    with pytest.raises(QueryRefused) as info:
        check_query(guard_store, sql, role)
    assert str(info.value).startswith("query refused: ") and reason in str(info.value)
    assert "\n" not in str(info.value)


ALLOWED = [
    (READER, "SELECT count() FROM t"), (READER, "SELECT * FROM numbers(3)"), (READER, "SHOW TABLES"),
    (READER, "DESCRIBE TABLE t"), (READER, "EXISTS TABLE t"), (READER, "EXPLAIN SELECT 1"),
    (READER, "WITH x AS (SELECT 1 AS a) SELECT a FROM x"), (READER, "SELECT 'INTO OUTFILE' AS `FROM INFILE`"),
    (READER, "SELECT a /* file('x') */ FROM t -- INTO OUTFILE 'x'"),
    (READER, "SELECT name, type FROM system.columns WHERE database = currentDatabase()"),   # BI tools' catalog
    (READER, "SELECT name, value, readonly FROM system.settings LIMIT 10000"),              # clickhouse-connect
    (ADMIN, "INSERT INTO t VALUES (1)"), (ADMIN, "INSERT INTO t SELECT toInt32(number) FROM numbers(3)"),
    (ADMIN, "ALTER TABLE t DELETE WHERE a = 1"), (ADMIN, "CREATE TABLE u (a Int32) ENGINE = MergeTree ORDER BY a"),
    (ADMIN, "SELECT 1 SETTINGS max_threads = 1"), (ADMIN, "DROP TABLE IF EXISTS u"),
]


@pytest.mark.parametrize("role, sql", ALLOWED, ids=[f"{r}-{i}" for i, (r, _) in enumerate(ALLOWED)])
def test_allowed(guard_store, role, sql):
    assert check_query(guard_store, sql, role)


def test_the_reader_runs_the_statement_that_was_checked(guard_store):
    assert check_query(guard_store, "select  a   /* why */ from t -- tail", READER) == "SELECT a FROM t"


def run_query(store_dir, *args, cwd):
    return subprocess.run([sys.executable, "-m", "gpuledger", "--store", f"chdb://{store_dir}", "query", *args],
                          cwd=cwd, env=env(), capture_output=True, text=True, timeout=180)


def test_query_command_writes_no_file_and_says_why(tmp_path):
    target = tmp_path / "out.csv"
    for args in (["SELECT 1 INTO OUTFILE 'out.csv'"], [f"select 1 into /* x */ OUTFILE '{target}' format CSV"],
                 ["--write", f"SELECT 1 INTO OUTFILE '{target}'"]):
        done = run_query(tmp_path / "store", *args, cwd=tmp_path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.strip().splitlines()[-1].startswith("gpuledger: error: query refused: INTO OUTFILE")
        assert not target.exists() and not list(tmp_path.rglob("out.csv"))
    done = run_query(tmp_path / "store", "--format", "csv", "SELECT 40 + 2 AS answer", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "42", done.stderr
