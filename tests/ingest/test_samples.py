import gzip

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from base.errors import InputError
from collector.records import GPU_SAMPLE_COLUMNS
from ingest.samples import ingest_samples


def sample_frame(n=500, hosts=("dgx-01", "dgx-02")):
    rows = []
    for i in range(n):
        rows.append({
            "ts": pd.Timestamp("2026-03-01T00:00:00Z") + pd.Timedelta(seconds=15 * i),
            "host": hosts[i % len(hosts)], "gpu_uuid": f"GPU-{i % 8:08x}-aaaa-bbbb-cccc-000000000000",
            "environment": "onprem", "pool": "h100", "gpu_index": i % 8, "model": "NVIDIA H100 80GB HBM3",
            "util_gpu": float(i % 101), "mem_used_bytes": i * 1_000_000, "mem_total_bytes": 85_899_345_920,
            "power_w": 100.0 + i % 600, "energy_j": 1000.5 * i, "xid_count": 0, "team": "vision",
        })
    return pd.DataFrame(rows)


def stored(store, columns):
    cols = ", ".join(columns)
    return store.query_df(f"SELECT {cols} FROM gpu_samples ORDER BY ts, host, gpu_uuid")


def test_parquet_round_trips_exactly(store, tmp_path):
    frame = sample_frame()
    path = tmp_path / "day.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
    report = ingest_samples(store, [path], progress=lambda m: None)
    assert (report.files_loaded, report.rows) == (1, len(frame))
    back = stored(store, frame.columns)
    expected = frame.sort_values(["ts", "host", "gpu_uuid"]).reset_index(drop=True)
    assert back["host"].tolist() == expected["host"].tolist()
    assert (pd.to_datetime(back["ts"], utc=True) == expected["ts"]).all()
    for column in ("util_gpu", "power_w", "energy_j", "mem_used_bytes", "gpu_index"):
        assert back[column].astype(float).tolist() == pytest.approx(expected[column].astype(float).tolist()), column
    # absent optional columns default: NULL telemetry, empty labels
    rest = store.rows("SELECT countIf(temperature_c IS NULL), countIf(k8s_pod = '') FROM gpu_samples")
    assert rest == [(len(frame), len(frame))]


def test_csv_gz_with_iso_times_loads(store, tmp_path):
    path = tmp_path / "samples.csv.gz"
    with gzip.open(path, "wt") as handle:
        handle.write("ts,host,gpu_uuid,util_gpu,mig_instance\n")
        handle.write("2026-03-01T00:00:00Z,a,GPU-1,12.5,\n2026-03-01T00:00:15.250Z,a,GPU-1,,3\n")
    ingest_samples(store, [path], progress=lambda m: None)
    rows = store.rows("SELECT toString(ts), util_gpu, mig_instance FROM gpu_samples ORDER BY ts")
    assert rows == [("2026-03-01 00:00:00.000", 12.5, ""), ("2026-03-01 00:00:15.250", None, "3")]


def test_reloading_the_same_file_does_not_double(store, tmp_path):
    path = tmp_path / "a.csv"
    sample_frame(50).to_csv(path, index=False)
    ingest_samples(store, [path], progress=lambda m: None)
    copy = tmp_path / "renamed.csv"
    copy.write_bytes(path.read_bytes())
    report = ingest_samples(store, [path, copy, tmp_path], progress=lambda m: None)
    assert (report.files_loaded, report.files_skipped) == (0, 2)
    assert store.scalar("SELECT count() FROM gpu_samples") == 50


@pytest.mark.parametrize("body, row, column, reason", [
    ("2026-03-01 00:00:00,a,GPU-1,5\n2026-03-01 00:00:15,a,GPU-1,n/a\n", 2, "util_gpu", "cannot read 'n/a' as Float32"),
    ("2026-03-01 00:00:00,a,GPU-1,5\n2026-03-01 00:00:15,a,GPU-1,5\nyesterday,a,GPU-1,5\n", 3, "ts", "cannot read 'yesterday'"),
    ("2026-03-01 00:00:00,a,GPU-1,5\n2026-03-01 00:00:15,a,GPU-1,140\n", 2, "util_gpu", "breaks the check util_gpu_percent"),
    ("2026-03-01 00:00:00,a,,5\n", 1, "host, gpu_uuid", "breaks the check identity_given"),
])
def test_bad_row_is_named_and_nothing_is_stored(store, tmp_path, body, row, column, reason):
    good = tmp_path / "good.csv"
    good.write_text("ts,host,gpu_uuid,util_gpu\n2026-02-01 00:00:00,b,GPU-2,1\n")
    ingest_samples(store, [good], progress=lambda m: None)
    bad = tmp_path / "bad.csv"
    bad.write_text("ts,host,gpu_uuid,util_gpu\n" + body)
    with pytest.raises(InputError) as info:
        ingest_samples(store, [bad], progress=lambda m: None)
    assert (info.value.path, info.value.row, info.value.column) == (str(bad), row, column)
    assert reason in str(info.value)
    assert store.scalar("SELECT count() FROM gpu_samples") == 1  # earlier data intact, nothing partial
    assert store.scalar("SELECT count() FROM ingested_files WHERE kind = 'samples'") == 1
    fixed = tmp_path / "fixed.csv"
    fixed.write_text("ts,host,gpu_uuid,util_gpu\n2026-03-01 00:00:00,a,GPU-1,5\n")
    ingest_samples(store, [fixed], progress=lambda m: None)
    assert store.scalar("SELECT count() FROM gpu_samples") == 2


def test_unknown_and_missing_columns_are_named(store, tmp_path):
    unknown = tmp_path / "u.csv"
    unknown.write_text("ts,host,gpu_uuid,gpu_util,temp\n")
    with pytest.raises(InputError, match=r"u\.csv: unknown column\(s\) 'gpu_util', 'temp'; the columns of gpu_samples are: ts, host"):
        ingest_samples(store, [unknown], progress=lambda m: None)
    missing = tmp_path / "m.parquet"
    pq.write_table(pa.table({"ts": [1], "host": ["a"]}), missing)
    with pytest.raises(InputError, match=r"m\.parquet: missing required column\(s\) 'gpu_uuid'"):
        ingest_samples(store, [missing], progress=lambda m: None)
    empty = tmp_path / "e.csv"
    empty.write_text("")
    with pytest.raises(InputError, match="the file is empty"):
        ingest_samples(store, [empty], progress=lambda m: None)
    with pytest.raises(InputError, match="no such file"):
        ingest_samples(store, [tmp_path / "nothing-*.csv"], progress=lambda m: None)


def test_every_documented_column_is_a_table_column(store):
    types = store.column_types("gpu_samples")
    assert list(types) == list(GPU_SAMPLE_COLUMNS) or set(types) == set(GPU_SAMPLE_COLUMNS)


def test_a_load_killed_after_attaching_some_days_is_finished_not_doubled(store, tmp_path):
    """What a SIGKILL between attaching a file's days and recording the file leaves behind: the
    intent record and some of its days. The next run attaches only the missing days."""
    from ingest.samples import INTENT, record_loaded, sha256

    frame = pd.concat([sample_frame(400), sample_frame(400).assign(ts=lambda f: f["ts"] + pd.Timedelta(days=1))])
    path = tmp_path / "two-days.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
    record_loaded(store, INTENT, path, sha256(path), 0)
    first_day = frame[frame["ts"] < pd.Timestamp("2026-03-02T00:00:00Z")]
    store.insert("gpu_samples", first_day)                  # the day the killed run had attached
    lines = []
    report = ingest_samples(store, [path], progress=lines.append)
    assert report.files_loaded == 1 and "an earlier load of it did not finish" in lines[0]
    assert store.scalar("SELECT count() FROM gpu_samples") == len(frame) == 800
    assert store.scalar("SELECT uniqExact(host, gpu_uuid, ts) FROM gpu_samples") == 800
    # a file loaded in full and then loaded again with --force is loaded again, as asked
    assert ingest_samples(store, [path], progress=lambda m: None, force=True).rows == 800
    assert store.scalar("SELECT count() FROM gpu_samples") == 1600
