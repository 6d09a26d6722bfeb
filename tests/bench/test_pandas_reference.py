"""The derivation benchmark's pandas reference (bench/pandas_reference.py) computes the same
gpu_minute, gpu_hour and idle windows as the SQL derivation, so its timing is a fair reference.

The simulated samples are thinned and blanked at random first, so every rule of the rollup is
exercised: holds that spill over several minutes, the last sample before a long gap, lone
samples, missing values, owners known only by name, and holds across the day boundary."""
from __future__ import annotations

from datetime import date, datetime, timezone

import numpy as np
import pandas as pd
import pytest

import sim
from bench import pandas_reference
from gpuledger import config as configuration
from gpuledger.demo import config_text
from ingest.rollup.run import rollup
from ingest.samples import ingest_samples

END = datetime(2026, 11, 1, tzinfo=timezone.utc)
ENTITY = ["host", "gpu_uuid", "mig_instance"]
OWNER = ["team", "user", "job_id", "k8s_namespace", "k8s_pod", "slurm_account", "held"]


def roughen(path, rng) -> None:
    """Drop samples (short and long gaps, lone samples) and blank values, in place."""
    frame = pd.read_parquet(path)
    keep = rng.random(len(frame)) > 0.25
    minute = frame["ts"].dt.floor("min")
    keep &= ~((minute.dt.hour == 3) & (minute.dt.minute % 7 != 0))  # an hour of mostly lone samples
    frame = frame[keep].reset_index(drop=True)
    for column in ("util_gpu", "util_mem", "power_w", "mem_used_bytes", "temperature_c"):
        frame.loc[rng.random(len(frame)) < 0.05, column] = None
    frame.loc[rng.random(len(frame)) < 0.1, "process_count"] = None
    frame.to_parquet(path, index=False)


@pytest.fixture
def derived(store, tmp_path):
    fleet = sim.build_fleet(gpus=16, seed=11)
    files = sim.write_samples(fleet, tmp_path / "samples", days=2, interval_s=15, end=END)
    rng = np.random.default_rng(5)
    for path in files:
        roughen(path, rng)
    (tmp_path / "gpuledger.toml").write_text(config_text(sim.fleet_metadata(fleet)))
    cfg = configuration.load(str(tmp_path / "gpuledger.toml"), env={})
    ingest_samples(store, files, progress=lambda m: None)
    rollup(store, cfg, since=date(2026, 10, 29), until=date(2026, 11, 1), progress=lambda m: None, now=END)
    thresholds, rates, teams = pandas_reference.inputs(store)
    return store, pandas_reference.rollup_and_idle(files, cfg.analytics, thresholds, rates, teams)


def test_reference_computes_the_same_tables(derived):
    store, (minutes, hours, windows) = derived
    for table, reference, keys in (("gpu_minute", minutes, ENTITY + ["minute"]),
                                   ("gpu_hour", hours, ["hour"] + ENTITY + OWNER),
                                   ("idle_windows", windows, ENTITY + ["start"])):
        sql = store.client.query_df(f"SELECT * EXCEPT computed_at FROM {table}" if table == "idle_windows"
                                    else f"SELECT * FROM {table}")
        assert len(sql) > 0, table
        columns = [c for c in sql.columns if c not in keys]
        assert not set(columns) - set(reference.columns), table
        assert differences(sql, reference, keys, columns) == [], table
    assert {"allocated", "unallocated"} <= set(windows["kind"])
    # the roughening reached every rule: multi-minute holds, lone samples, missing values
    assert (minutes["covered_s"] < 59).any() and (minutes["samples"] == 0).any()
    assert (minutes["util_covered_s"] < minutes["covered_s"]).any()


def normalised(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for column in out.columns:
        if pd.api.types.is_datetime64_any_dtype(out[column]):
            out[column] = pd.to_datetime(out[column], utc=True).astype("datetime64[ns, UTC]")
        elif isinstance(out[column].dtype, pd.CategoricalDtype) or out[column].dtype == object:
            out[column] = out[column].astype(str)
    return out


def differences(sql: pd.DataFrame, reference: pd.DataFrame, keys: list[str], columns: list[str]) -> list[str]:
    """Rows only in one table, and columns whose values disagree (numbers to 1e-6 relative)."""
    joined = normalised(sql).merge(normalised(reference), on=keys, how="outer", suffixes=("_sql", "_ref"),
                                   indicator=True)
    problems = [f"{int((joined['_merge'] == side).sum())} rows only in {name}"
                for side, name in (("left_only", "SQL"), ("right_only", "pandas")) if (joined["_merge"] == side).any()]
    both = joined[joined["_merge"] == "both"]
    for column in columns:
        a, b = both[f"{column}_sql"], both[f"{column}_ref"]
        if pd.api.types.is_numeric_dtype(a) or pd.api.types.is_numeric_dtype(b):
            a, b = a.astype(float).to_numpy(), b.astype(float).to_numpy()
            bad = ~(np.isclose(a, b, rtol=1e-6, atol=1e-6) | (np.isnan(a) & np.isnan(b)))
        else:
            bad = (a.astype(str) != b.astype(str)).to_numpy()
        if bad.any():
            sample = both.loc[bad, keys + [f"{column}_sql", f"{column}_ref"]].head(3).to_dict("records")
            problems.append(f"{column}: {int(bad.sum())} rows differ, e.g. {sample}")
    return problems
