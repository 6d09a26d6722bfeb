"""``gpuledger ingest billing`` answers a bad input with one line naming it and exit 2, never a traceback."""
from __future__ import annotations

import gzip

import pytest

from tests.ingest.billing.test_partial_bills import gpuledger


def xml_file(tmp_path, sample):
    (tmp_path / "bill.xml").write_text("<bill/>\n")
    return tmp_path / "bill.xml", "unknown file type"


def empty_dir(tmp_path, sample):
    (tmp_path / "empty").mkdir()
    return tmp_path / "empty", "no billing files found"


def dir_without_bills(tmp_path, sample):
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "bill.xml").write_text("<bill/>\n")
    (tmp_path / "other" / "notes.txt").write_text("hello\n")
    return tmp_path / "other", "no billing files found"


def header_over_128k(tmp_path, sample):
    head, rest = sample.read_bytes().split(b"\n", 1)
    path = tmp_path / "wide_header.csv"
    path.write_bytes(head + b",x_" + b"a" * 140_000 + b"\n" + rest)
    return path, "the header row is not valid CSV"


def header_over_1m(tmp_path, sample):
    head, rest = sample.read_bytes().split(b"\n", 1)
    path = tmp_path / "huge_header.csv"
    path.write_bytes(head + b"".join(b",x_%d" % i for i in range(200_000)) + b"\n" + rest)
    return path, "the header row is longer than 1 MiB"


def truncated_gzip(tmp_path, sample):
    data = gzip.compress(sample.read_bytes())
    path = tmp_path / "cut.csv.gz"
    path.write_bytes(data[: len(data) * 6 // 10])
    return path, "truncated or corrupt"


def broken_jsonl(tmp_path, sample):
    path = tmp_path / "export.jsonl"
    path.write_text('{"cost": 1}\n{broken\n')
    return path, "row 2: is not valid JSON"


def ragged_row(tmp_path, sample):
    head, rest = sample.read_bytes().split(b"\n", 1)
    path = tmp_path / "ragged.csv"
    path.write_bytes(head + b"\n" + b"1,2,3\n" + rest)
    return path, "row 1 BillingPeriodEnd: missing required value"


@pytest.mark.parametrize("make", [xml_file, empty_dir, dir_without_bills, header_over_128k, header_over_1m,
                                  truncated_gzip, broken_jsonl, ragged_row])
def test_one_line_error_and_exit_2(tmp_path, focus_sample, make):
    path, why = make(tmp_path, focus_sample)
    done = gpuledger(f"chdb://{tmp_path / 'store'}", "ingest", "billing", str(path), cwd=tmp_path)
    said = [line for line in done.stderr.splitlines() if " INFO " not in line]   # the store's migrations log
    print(f"\n{path.name}: exit {done.returncode}: {said[:3]}")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and len(said) == 1 and said[0].startswith("gpuledger: error: ")
    assert f"{path}" in said[0] and why in said[0]
