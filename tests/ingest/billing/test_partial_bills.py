"""A truncated or half-bad bill never replaces a stored month (issue #15, item 2).

The fault tests run the real command, ``gpuledger ingest billing``, as a process against its own
store, and print their figures: rows and USD stored before and after, rows quarantined.
"""
from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from base.errors import InputError
from ingest.billing.load import ingest_billing


def gpuledger(dsn: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "GPULEDGER_CONFIG"}
    return subprocess.run([sys.executable, "-m", "gpuledger", "--store", dsn, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def figures(dsn: str, cwd: Path) -> tuple[int, str, int]:
    """(rows stored, USD BilledCost stored, quarantine rows) through ``gpuledger query``."""
    done = gpuledger(dsn, "query", "--format", "csv",
                     "SELECT (SELECT count() FROM billing_line_items), (SELECT toString(sum(BilledCost)) "
                     "FROM billing_line_items), (SELECT count() FROM billing_quarantine)", cwd=cwd)
    assert done.returncode == 0, done.stderr
    rows, usd, quarantined = next(csv.reader(io.StringIO(done.stdout.splitlines()[1])))
    return int(rows), usd, int(quarantined)


@pytest.fixture
def stored(tmp_path, focus_sample):
    """A store of its own holding the sample's month (2024-09, AWS), loaded by the command."""
    dsn = f"chdb://{tmp_path / 'store'}"
    done = gpuledger(dsn, "ingest", "billing", str(focus_sample), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return dsn, figures(dsn, tmp_path)


def refused(dsn, before, path: Path, cwd: Path, *why: str) -> str:
    done = gpuledger(dsn, "ingest", "billing", str(path), cwd=cwd)
    after = figures(dsn, cwd)
    print(f"\n{path.name}: exit {done.returncode}; rows stored {before[0]} -> {after[0]}, "
          f"USD {before[1]} -> {after[1]}, quarantine rows {before[2]} -> {after[2]}\n  {done.stderr.strip()}")
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert str(path) in done.stderr
    for text in why:
        assert text in done.stderr
    assert after == before, "the stored month changed"
    return done.stderr


def test_a_bill_cut_at_60_percent_is_refused_and_the_month_kept(stored, focus_sample, tmp_path):
    dsn, before = stored
    data = focus_sample.read_bytes()
    cut = tmp_path / "cut_at_60.csv"
    cut.write_bytes(data[: int(len(data) * 0.6)])
    refused(dsn, before, cut, tmp_path, "ends mid-record", "line ")


def test_a_bill_whose_last_record_is_short_is_refused(stored, focus_sample, tmp_path):
    # cut after a complete field of the last row: quotes balance, the row lacks fields
    dsn, before = stored
    lines = focus_sample.read_text().splitlines()
    last = lines[400]
    short = tmp_path / "short_last_row.csv"
    short.write_text("\n".join([*lines[:400], last[: last.index('"USD"') + 5]]))
    refused(dsn, before, short, tmp_path, "ends mid-record", "line 401")


def test_an_unterminated_quote_is_refused_and_the_month_kept(stored, focus_sample, tmp_path):
    dsn, before = stored
    lines = focus_sample.read_text().splitlines()
    assert lines[-1].endswith('"')
    lines[-1] = lines[-1][:-1]          # the last field's closing quote is missing
    broken = tmp_path / "unterminated.csv"
    broken.write_text("\n".join(lines) + "\n")
    refused(dsn, before, broken, tmp_path, "unterminated quote", f"line {len(lines)}")


def test_a_quarantined_row_keeps_the_month_by_default(stored, focus_sample, tmp_path):
    dsn, before = stored
    frame = pd.read_csv(focus_sample, dtype=str, keep_default_na=False)
    frame.loc[41, "BilledCost"] = "12,5O"
    bad = tmp_path / "one_bad_row.csv"
    frame.to_csv(bad, index=False)
    message = refused(dsn, before, bad, tmp_path, "1 of 600 row(s) quarantined",
                      "row 42 BilledCost: not a number", "max_quarantined_share")
    assert "2024-09" in message


def test_the_quarantine_share_is_configurable(store, focus_sample, tmp_path, quiet):
    frame = pd.read_csv(focus_sample, dtype=str, keep_default_na=False)
    frame.loc[[3, 7], "BilledCost"] = "n/a"
    path = tmp_path / "two_bad_rows.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(InputError, match="2 of 600 row"):
        ingest_billing(store, [path], progress=quiet, max_quarantined_share=0.001)
    assert store.scalar("SELECT count() FROM billing_quarantine") == 0
    report = ingest_billing(store, [path], progress=quiet, max_quarantined_share=0.01)
    assert report.rows == 598 and report.quarantined_rows == 2
    assert store.scalar("SELECT uniqExact(source_row) FROM billing_quarantine") == 2


@pytest.mark.parametrize("alias", ["Amazon Web Services", "aws", " Amazon Web Services "])
def test_provider_aliases_are_one_partition(store, focus_sample, tmp_path, quiet, alias):
    frame = pd.read_csv(focus_sample, dtype=str, keep_default_na=False)
    assert set(frame["ProviderName"]) == {"AWS"}
    ingest_billing(store, [focus_sample], progress=quiet)
    before = store.rows("SELECT count(), sum(BilledCost) FROM billing_line_items")[0]
    frame["ProviderName"] = alias
    renamed = tmp_path / "renamed.csv"
    frame.to_csv(renamed, index=False)
    report = ingest_billing(store, [renamed], progress=quiet)
    after = store.rows("SELECT count(), sum(BilledCost) FROM billing_line_items")[0]
    print(f"\n{alias!r}: rows {before[0]} -> {after[0]}, USD {before[1]} -> {after[1]}")
    assert after == before
    assert report.periods == ["2024-09 AWS 1234567890123"]
    assert store.rows("SELECT DISTINCT ProviderName FROM billing_line_items") == [("AWS",)]
