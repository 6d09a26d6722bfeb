"""Sample loads under hostile but fair input (issue #15): repeated rows, long backfills, timestamps
out of range, numeric epochs and bad numbers read the same way in every format."""
import csv
import json
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from base.errors import InputError
from ingest.samples import ingest_samples

FORMATS = ["csv", "tsv", "jsonl", "parquet"]


def write(tmp_path, fmt, rows, name="samples"):
    """``rows`` (dicts, same keys) as a file of format ``fmt``; Parquet keeps each column's Python type."""
    path = tmp_path / f"{name}.{fmt}"
    if fmt == "parquet":
        pq.write_table(pa.Table.from_pylist(rows), path)
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        with open(path, "w", newline="") as handle:
            out = csv.DictWriter(handle, fieldnames=list(rows[0]), delimiter="\t" if fmt == "tsv" else ",",
                                 lineterminator="\n")
            out.writeheader()
            out.writerows(rows)
    return path


def count(store):
    return store.scalar("SELECT count() FROM gpu_samples")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_row_repeated_inside_a_file_is_stored_once(store, tmp_path, fmt):
    rows = [{"ts": f"2026-03-01 00:00:{s:02d}", "host": "a", "gpu_uuid": "GPU-1", "mig_instance": "", "util_gpu": s}
            for s in (0, 15, 30)]
    rows += [rows[1], rows[1], rows[2]]                               # 3 repeats
    rows += [dict(rows[0], mig_instance="1")]                         # another GPU entity, same ts: kept
    lines = []
    report = ingest_samples(store, [write(tmp_path, fmt, rows)], progress=lines.append)
    print(f"{fmt}: file rows {len(rows)}, stored {count(store)}, repeats dropped {report.duplicates}")
    assert (report.rows, report.duplicates, count(store)) == (4, 3, 4)
    assert store.scalar("SELECT uniqExact(host, gpu_uuid, mig_instance, ts) FROM gpu_samples") == 4
    assert "4 rows (3 repeated rows dropped)" in lines[-1]


def test_a_150_day_backfill_loads_with_progress(store, tmp_path):
    start = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=160)
    rows = [{"ts": (start + timedelta(hours=h)).strftime("%Y-%m-%d %H:%M:%S"), "host": "a", "gpu_uuid": "GPU-1",
             "util_gpu": h % 100} for h in range(150 * 24)]
    lines = []
    report = ingest_samples(store, [write(tmp_path, "csv", rows)], progress=lines.append)
    days = store.scalar("SELECT uniqExact(toDate(ts)) FROM gpu_samples")
    print(f"150-day file: {len(rows)} rows, stored {count(store)} over {days} days; progress: {lines}")
    assert (report.rows, count(store), days) == (3600, 3600, 150)
    assert any("attached 100/150 days" in line for line in lines)


def _refused(store, path):
    with pytest.raises(InputError) as info:
        ingest_samples(store, [path], progress=lambda m: None)
    return info.value


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("future", [timedelta(days=3), timedelta(days=365 * 300)])
def test_a_timestamp_beyond_one_day_ahead_is_refused_by_row(store, tmp_path, fmt, future):
    ahead = (datetime.now(timezone.utc) + future).strftime("%Y-%m-%d %H:%M:%S")
    rows = [{"ts": "2026-03-01 00:00:00", "host": "a", "gpu_uuid": "GPU-1"},
            {"ts": "2026-03-01 00:00:15", "host": "a", "gpu_uuid": "GPU-1"},
            {"ts": ahead, "host": "a", "gpu_uuid": "GPU-1"}]
    error = _refused(store, write(tmp_path, fmt, rows))
    print(f"{fmt}, ts {ahead}: {error}")
    assert (error.row, error.column) == (3, "ts")
    assert "accepted" in str(error) and "nothing from this file was stored" in str(error)
    assert count(store) == 0
    # a sample a few hours ahead (a clock a little fast) is accepted
    soon = (datetime.now(timezone.utc) + timedelta(hours=3)).strftime("%Y-%m-%d %H:%M:%S")
    ingest_samples(store, [write(tmp_path, fmt, rows[:2] + [dict(rows[2], ts=soon)], "soon")], progress=lambda m: None)
    assert count(store) == 3


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("epoch", [1772323200, 1772323200000, 1772323200.25])
def test_a_numeric_epoch_means_the_same_in_every_format(store, tmp_path, fmt, epoch):
    rows = [{"ts": epoch, "host": "a", "gpu_uuid": "GPU-1"}]
    ingest_samples(store, [write(tmp_path, fmt, rows)], progress=lambda m: None)
    stored = store.rows("SELECT toString(ts) FROM gpu_samples")
    print(f"{fmt}: {epoch!r} stored as {stored}")
    expected = "2026-03-01 00:00:00.250" if isinstance(epoch, float) else "2026-03-01 00:00:00.000"
    assert stored == [(expected,)]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("column, good, bad, reason", [
    ("mem_used_bytes", 5, -1, "cannot read '-1' as UInt64"),
    ("util_gpu", "5", "n/a", "cannot read 'n/a' as Float32"),
    ("process_count", 3, 70000, "cannot read '70000' as UInt16"),
])
def test_a_bad_number_is_refused_the_same_in_every_format(store, tmp_path, fmt, column, good, bad, reason):
    rows = [{"ts": f"2026-03-01 00:00:{s:02d}", "host": "a", "gpu_uuid": "GPU-1", column: value}
            for s, value in ((0, good), (15, bad), (30, good))]
    error = _refused(store, write(tmp_path, fmt, rows))
    print(f"{fmt}, {column}={bad!r}: {error}")
    assert (error.row, error.column) == (2, column)
    assert reason in str(error)
    assert count(store) == 0
