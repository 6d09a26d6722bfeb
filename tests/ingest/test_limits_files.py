"""Sample files under issue #15's limits: text lengths (``ingest.limits``) in every format, a
multi-MB cell refused before it is parsed, the checks of the server path (``fill_sent``, run here
on the embedded store: the same code a ClickHouse server gets), and .prom samples stored once."""
from __future__ import annotations

import os
import time

import pytest

from base.errors import InputError
from collector.records import GPU_SAMPLE_COLUMNS
from ingest import limits
from ingest.samples import TABLE, fill_sent, ingest_samples, read_types
from tests.ingest.test_samples_hardening import FORMATS, count, write


def _refused(store, path):
    with pytest.raises(InputError) as info:
        ingest_samples(store, [path], progress=lambda m: None)
    return info.value


def rows_with(column: str, value: str) -> list[dict]:
    return [{"ts": f"2026-03-01 00:00:{s:02d}", "host": "a", "gpu_uuid": "GPU-1", "team": "ml", column: v}
            for s, v in ((0, "x"), (15, value), (30, "y"))]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("column, size", [("team", limits.LABEL_MAX + 1), ("pool", 4000),
                                          ("k8s_pod", limits.ID_MAX + 1)])
def test_text_over_its_column_limit_is_refused_by_row_and_column(store, tmp_path, fmt, column, size):
    error = _refused(store, write(tmp_path, fmt, rows_with(column, "é" * (size // 2) + "z" * (size % 2))))
    print(f"{fmt}, {column} of {size} bytes: {error}; rows stored: {count(store)}")
    assert (error.row, error.column) == (2, column)
    assert f"{size:,} bytes, over the {limits.max_bytes(column):,}-byte limit of {column}" in str(error)
    assert count(store) == 0


@pytest.mark.parametrize("fmt", FORMATS)
def test_text_at_its_limit_loads(store, tmp_path, fmt):
    rows = [dict(r, k8s_pod="p" * limits.ID_MAX) for r in rows_with("team", "t" * limits.LABEL_MAX)]
    ingest_samples(store, [write(tmp_path, fmt, rows)], progress=lambda m: None)
    assert store.rows("SELECT max(length(team)), max(length(k8s_pod)), count() FROM gpu_samples") == \
        [(limits.LABEL_MAX, limits.ID_MAX, 3)]


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl"])
def test_a_multi_megabyte_cell_is_refused_before_parsing(store, tmp_path, fmt):
    path = write(tmp_path, fmt, rows_with("team", "A" * (5 << 20)))
    started = time.perf_counter()
    error = _refused(store, path)
    took = time.perf_counter() - started
    print(f"{fmt}: {path.stat().st_size:,}-byte file refused in {took:.2f}s: {str(error)[:200]}")
    assert (error.row, error.column) == (2, "team")
    assert f"a line of over {limits.LINE_MAX:,} bytes" in str(error)
    assert count(store) == 0


def test_the_server_path_checks_numbers_lengths_and_names_the_row(store, tmp_path):
    """``fill_sent`` is what a ClickHouse server store runs; before, it inserted the bytes
    unchecked (a -1 byte count wrapped to 2^64-1)."""
    types = store.column_types(TABLE)
    columns = ["ts", "host", "gpu_uuid", "mem_used_bytes", "team"]
    read = read_types(tmp_path / "x.csv", "CSVWithNames", columns, types)
    good = b"2026-03-01 00:00:00,a,GPU-1,5,ml\n2026-03-01 00:00:15,a,GPU-1,6,ml\n"
    for bad, column, reason in [
        (b"2026-03-01 00:00:30,a,GPU-1,-1,ml\n", "mem_used_bytes", "cannot read '-1' as UInt64"),
        (b"2026-03-01 00:00:30,a,GPU-1,7," + b"t" * 300 + b"\n", "team", "300 bytes, over the 256-byte limit of team"),
        (b"1999-12-31 00:00:30,a,GPU-1,7,ml\n", "ts", "ts_plausible"),
    ]:
        data = b"ts,host,gpu_uuid,mem_used_bytes,team\n" + good + bad
        with store.staging(TABLE) as stage, pytest.raises(InputError) as info:
            fill_sent(store, stage, data, "CSVWithNames", columns, types, read, tmp_path / "sent.csv")
        print(f"server path, {column}: {info.value}")
        assert (info.value.row, info.value.column) == (3, column) and reason in str(info.value)
    with store.staging(TABLE) as stage:
        fill_sent(store, stage, b"ts,host,gpu_uuid,mem_used_bytes,team\n" + good, "CSVWithNames", columns, types,
                  read, tmp_path / "sent.csv")
        assert store.rows(f"SELECT mem_used_bytes, team FROM `{stage.name}` ORDER BY ts") == [(5, "ml"), (6, "ml")]
    assert count(store) == 0


PROM_REPEATS = """\
DCGM_FI_DEV_GPU_UTIL{UUID="GPU-1",Hostname="h",gpu="0"} 5 1772323200000
gpuledger_sample_timestamp_seconds{UUID="GPU-1",Hostname="h",gpu="0"} 1772323200
DCGM_FI_DEV_POWER_USAGE{UUID="GPU-1",Hostname="h",gpu="0"} 100
DCGM_FI_DEV_GPU_UTIL{UUID="GPU-1",Hostname="h",gpu="0"} 5 1772323200000
DCGM_FI_DEV_GPU_UTIL{UUID="GPU-2",Hostname="h",gpu="1"} 7 1772323200000
"""


def test_a_sample_repeated_in_a_prom_file_is_stored_once(store, tmp_path):
    """Series of one GPU with and without their own timestamp landing on the same time used to be
    two rows for one sample; now they are one row, with the values of both."""
    path = tmp_path / "repeats.prom"
    path.write_text(PROM_REPEATS)
    os.utime(path, (1772323200, 1772323200))
    report = ingest_samples(store, [path], progress=lambda m: None)
    got = store.rows("SELECT gpu_uuid, toString(ts), util_gpu, power_w FROM gpu_samples ORDER BY gpu_uuid")
    print(f"rows stored {report.rows}, repeats dropped {report.duplicates}: {got}")
    assert got == [("GPU-1", "2026-03-01 00:00:00.000", 5.0, 100.0), ("GPU-2", "2026-03-01 00:00:00.000", 7.0, None)]
    assert (report.rows, report.duplicates) == (2, 1)


@pytest.mark.parametrize("line, column", [
    ('DCGM_FI_DEV_FB_USED{UUID="GPU-2",Hostname="h"} -5 1772323200000', "mem_used_bytes"),
    ('DCGM_FI_DEV_GPU_UTIL{UUID="GPU-2",Hostname="h",namespace="' + "n" * 300 + '"} 5 1772323200000', "k8s_namespace"),
    ('DCGM_FI_DEV_GPU_UTIL{UUID="GPU-2",Hostname="h"} 5 ' + str(int(time.time() * 1000) + 3 * 86_400_000), "ts"),
])
def test_a_bad_sample_in_a_prom_file_refuses_the_file_naming_gpu_and_column(store, tmp_path, line, column):
    path = tmp_path / "bad.prom"
    path.write_text('DCGM_FI_DEV_GPU_UTIL{UUID="GPU-1",Hostname="h"} 5 1772323200000\n' + line + "\n")
    error = _refused(store, path)
    print(f"{column}: {str(error)[:300]}")
    assert error.column == column and "GPU GPU-2 on h" in str(error) and "nothing from this file" in str(error)
    assert count(store) == 0


def test_limits_name_every_text_column_of_the_telemetry_tables(store):
    """Every text column has a limit, and the id-like ones are the ones named in ingest.limits."""
    for table in ("gpu_samples", "gpu_processes", "gpu_health_events"):
        text = [c for c, t in store.column_types(table).items() if "String" in t]
        assert text and all(limits.max_bytes(c) in (limits.LABEL_MAX, limits.ID_MAX, limits.TEXT_MAX) for c in text)
    assert {c for c in GPU_SAMPLE_COLUMNS if limits.max_bytes(c) == limits.ID_MAX} == \
        {"instance_id", "gpu_uuid", "mig_instance", "pci_bus_id", "image", "k8s_pod"}


def test_a_multi_megabyte_line_in_a_prom_file_is_refused_before_parsing(store, tmp_path):
    path = tmp_path / "huge.prom"
    path.write_text('DCGM_FI_DEV_GPU_UTIL{UUID="GPU-1",Hostname="h"} 5\n'
                    'DCGM_FI_DEV_GPU_UTIL{UUID="GPU-2",Hostname="h",pod="' + "p" * (3 << 20) + '"} 5\n')
    error = _refused(store, path)
    print(f"{path.stat().st_size:,}-byte .prom: {str(error)[-160:]}")
    assert error.row == 2 and f"a line of over {limits.LINE_MAX:,} bytes" in str(error)
    assert count(store) == 0
