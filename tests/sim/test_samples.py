"""Sample frames: schema, dtypes, determinism, Parquet output, size and speed."""
from __future__ import annotations

import time
from datetime import datetime, timezone

import pandas as pd
import pyarrow.parquet as pq
import pytest

from collector.records import GPU_SAMPLE_COLUMNS
from sim import build_fleet, sample_frames, write_samples

from .conftest import END

EXPECTED_DTYPES = {
    "ts": "datetime64[ms, UTC]", "gpu_index": "uint16", "util_gpu": "float32",
    "util_mem": "float32", "mem_used_bytes": "UInt64", "mem_total_bytes": "UInt64",
    "power_w": "float32", "energy_j": "float64", "temperature_c": "float32",
    "sm_clock_mhz": "UInt32", "mem_clock_mhz": "UInt32", "throttle_reasons": "UInt64",
    "ecc_corrected_volatile": "UInt64", "ecc_uncorrected_volatile": "UInt64",
    "ecc_corrected_aggregate": "UInt64", "ecc_uncorrected_aggregate": "UInt64",
    "xid_count": "uint32", "xid_last": "UInt32", "process_count": "UInt16",
}


def two_days(seed: int, traces_dir) -> list[pd.DataFrame]:
    return list(sample_frames(build_fleet(64, seed, traces_dir=traces_dir), 2, 60, END))


def test_columns_and_dtypes_match_the_schema(fleet):
    frame = next(sample_frames(fleet, 1, 60, END))
    assert tuple(frame.columns) == GPU_SAMPLE_COLUMNS
    for column, dtype in EXPECTED_DTYPES.items():
        assert str(frame[column].dtype) == dtype, column
    strings = set(GPU_SAMPLE_COLUMNS) - set(EXPECTED_DTYPES)
    for column in strings:
        assert frame[column].map(type).eq(str).all(), column
    assert (frame["source"] == "sim").all()
    assert frame["ts"].dt.second.eq(0).all()


def test_default_history_size_and_timing(history, fleet):
    print(f"\nsim default size: {len(fleet.entities)} entities, {history['rows']:,} rows in "
          f"{history['frames']} daily frames, generated in {history['seconds']:.2f} s")
    assert 2_400_000 < history["rows"] < 3_200_000
    assert history["frames"] == 31  # 30 days ending 13:00: 30 full-or-partial calendar days + 1


def test_frames_cover_the_window_on_the_sample_grid(samples):
    assert samples["ts"].min() == pd.Timestamp("2024-04-20 13:00", tz="UTC")
    assert samples["ts"].max() == pd.Timestamp("2024-05-20 12:59", tz="UTC")
    onprem = samples[samples["environment"] == "onprem"]
    per_entity = onprem.groupby(["host", "gpu_uuid", "mig_instance"]).size()
    assert per_entity.eq(30 * 24 * 60).all()


def test_same_seed_gives_identical_frames_and_files(traces_dir, tmp_path):
    first, second = two_days(7, traces_dir), two_days(7, traces_dir)
    for a, b in zip(first, second, strict=True):
        pd.testing.assert_frame_equal(a, b)
    fleet = build_fleet(64, 7, traces_dir=traces_dir)
    paths_a = write_samples(fleet, tmp_path / "a", 2, 60, END)
    paths_b = write_samples(build_fleet(64, 7, traces_dir=traces_dir), tmp_path / "b", 2, 60, END)
    assert [p.name for p in paths_a] == [p.name for p in paths_b]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(paths_a, paths_b))


def test_different_seed_gives_different_frames(traces_dir):
    a, b = two_days(7, traces_dir)[0], two_days(8, traces_dir)[0]
    assert set(a["gpu_uuid"]).isdisjoint(set(b["gpu_uuid"]))
    assert not a["util_gpu"].reset_index(drop=True).equals(b["util_gpu"].reset_index(drop=True))


def test_parquet_files_round_trip(fleet, tmp_path):
    paths = write_samples(fleet, tmp_path, 1, 300, END)
    assert [p.name for p in paths] == ["gpu_samples_2024-05-19.parquet",
                                       "gpu_samples_2024-05-20.parquet"]
    meta = pq.ParquetFile(paths[0]).metadata
    assert meta.row_group(0).column(0).compression == "ZSTD"
    back = pd.read_parquet(paths[0])
    assert tuple(back.columns) == GPU_SAMPLE_COLUMNS
    assert str(back["ts"].dtype) == "datetime64[ms, UTC]"
    assert back["xid_last"].isna().any()


def test_energy_counters_only_grow(fleet):
    frames = list(sample_frames(fleet, 2, 300, END))
    data = pd.concat(frames, ignore_index=True)
    steps = data.groupby(["host", "gpu_uuid", "mig_instance"])["energy_j"].diff().dropna()
    assert (steps > 0).all()


def test_large_fleet_day_at_15s_is_one_chunk(traces_dir):
    big = build_fleet(256, 7, traces_dir=traces_dir)
    started = time.perf_counter()
    frame = next(sample_frames(big, 30, 15, datetime(2024, 5, 20, tzinfo=timezone.utc)))
    seconds = time.perf_counter() - started
    print(f"\nsim 256 GPUs at 15 s: one day = {len(frame):,} rows, "
          f"{frame.memory_usage(deep=True).sum() / 2**20:.0f} MiB, {seconds:.1f} s")
    assert 1_000_000 < len(frame) < 2_500_000


def test_interval_must_divide_an_hour(fleet):
    with pytest.raises(ValueError, match="divide 3600"):
        next(sample_frames(fleet, 1, 7, END))
