import os
import subprocess
import sys
import textwrap

import pytest

from base.errors import StoreError, StoreUnreachable
from ingest.store import connect, parse_dsn


def test_chdb_dsn_forms(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    absolute = parse_dsn("chdb:///var/lib/gpuledger")
    assert (absolute.mode, str(absolute.path), absolute.database) == ("chdb", "/var/lib/gpuledger", "gpuledger")
    home = parse_dsn("chdb://~/store?database=lab")
    assert (home.path, home.database) == (tmp_path / "store", "lab")
    assert home.embedded


def test_http_dsn_keeps_password_out_of_text():
    target = parse_dsn("https://finance:s3cret%21@ch.example:8443/ledger")
    assert (target.mode, target.host, target.port, target.user, target.database, target.secure) == (
        "http", "ch.example", 8443, "finance", "ledger", True)
    assert target.password == "s3cret!"
    assert "s3cret" not in str(target) and "s3cret" not in repr(target)
    assert parse_dsn("http://ch:8123").port == 8123 and parse_dsn("http://ch").database == "gpuledger"


@pytest.mark.parametrize("dsn, words", [
    ("postgres://u:pw@h/db", "expected chdb:///dir"),
    ("chdb://", "names no directory"),
    ("http:///db", "names no host"),
])
def test_bad_dsn_says_what_is_expected(dsn, words):
    with pytest.raises(StoreError, match=words) as info:
        parse_dsn(dsn)
    assert "pw" not in str(info.value)


def test_unreachable_server_names_it():
    with pytest.raises(StoreUnreachable, match=r"127\.0\.0\.1:1/gpuledger does not answer") as info:
        connect("http://default:topsecret@127.0.0.1:1/gpuledger")
    assert "topsecret" not in str(info.value)


def test_locked_directory_names_the_owner(tmp_path):
    """A second process opening a directory held by another gets StoreLocked naming the holder."""
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from ingest.store import connect
            held = connect('chdb://{tmp_path}/store')
            print('ready', flush=True)
            sys.stdin.read()
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=os.getcwd(),
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        probe = subprocess.run(
            [sys.executable, "-c", f"from ingest.store import connect; connect('chdb://{tmp_path}/store')"],
            capture_output=True, text=True, timeout=120,
        )
        assert "StoreLocked" in probe.stderr
        assert f"in use by process {holder.pid}" in probe.stderr
        assert "--store" in probe.stderr
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
