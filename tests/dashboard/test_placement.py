"""Placement that adds up: cost per A100-equivalent utilized GPU-hour, one outcome per team and
pool, right-sizing, and a sentence with numbers for every recommendation. Each figure is checked
against its own computation in pandas over the hourly costs, not against the page's SQL."""
from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone

import pandas as pd
import pytest

from dashboard import queries
from dashboard.filters import Filters
from dashboard.throughput import DATASHEET_TFLOPS, SUBJECT
from tests.dashboard.browser import open_page, part, table_rows
from tests.dashboard.test_queries import derive_daily

MONTH_H = 24 * 365 / 12
# MIG compute slices per GPU (the whole-GPU profile excluded), written out independently of dashboard/throughput.py
SLICES = {m: [n / 7 for n in (1, 2, 3, 4)] for m in (
    "NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB", "NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe",
    "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA H200")}
SLICES["NVIDIA A30"] = [1 / 4, 2 / 4]
HOURLY = ("SELECT environment, pool, model, team, held, mig_instance, gpu_hours, utilized_gpu_hours, cost_usd "
          "FROM gpu_cost_hour WHERE hour >= {start:DateTime('UTC')} AND hour < {end:DateTime('UTC')}")


def demo_range(demo) -> Filters:
    end = demo.end.date() + timedelta(days=1)
    return Filters(end - timedelta(days=30), end)


def hourly(store, f: Filters) -> pd.DataFrame:
    return store.query_df(HOURLY, f.params())


def data_hours(store, f: Filters) -> int:
    return store.rows("SELECT uniqExact(hour) FROM gpu_cost_hour WHERE hour >= {start:DateTime('UTC')} "
                      "AND hour < {end:DateTime('UTC')}", f.params())[0][0]


def expected_rightsizing(df: pd.DataFrame, n_hours: int) -> dict:
    """(team, environment, pool, model) -> (utilization, share, savings per month) for the MIG slices that fit."""
    whole = df[(df["held"] == 1) & (df["mig_instance"] == "") & (df["team"] != "unallocated")]
    g = whole.groupby(["team", "environment", "pool", "model"])[["gpu_hours", "utilized_gpu_hours", "cost_usd"]].sum()
    out = {}
    for key, r in g.iterrows():
        util = r["utilized_gpu_hours"] / r["gpu_hours"]
        fits = [s for s in SLICES.get(key[3], []) if s >= util]
        if fits and r["cost_usd"] * (1 - fits[0]) > 0 and r["gpu_hours"] / n_hours >= 0.1:   # a tenth of a GPU
            out[key] = (util, fits[0], r["cost_usd"] * (1 - fits[0]) * MONTH_H / n_hours)
    return out


def test_cost_per_a100_equivalent_utilized_hour_equals_pandas(demo):
    f = demo_range(demo)
    models = queries.placement_models(demo.store, f)
    df = hourly(demo.store, f)
    g = df.groupby(["environment", "model"])[["cost_usd", "utilized_gpu_hours"]].sum()
    assert len(models) == len(g) and len(g) >= 4
    got = models.set_index(["environment", "model"])
    for (env, model), r in g.iterrows():
        row = got.loc[(env, model)]
        assert row["usd_per_utilized_gpu_hour"] == pytest.approx(r["cost_usd"] / r["utilized_gpu_hours"], rel=1e-9)
        if model in DATASHEET_TFLOPS:
            factor = round(DATASHEET_TFLOPS[model] / 312, 2)
            assert row["normalised"] and row["throughput"] == pytest.approx(factor)
            assert row["usd_per_a100e_utilized_gpu_hour"] == pytest.approx(
                r["cost_usd"] / (r["utilized_gpu_hours"] * factor), rel=1e-9)
        else:                                   # never silently an A100
            assert not row["normalised"] and pd.isna(row["usd_per_a100e_utilized_gpu_hour"])
    # an H100 does about 3.17 A100s' work: its A100-equivalent hour costs that much less than its utilized hour
    h100 = got[got.index.get_level_values("model") == "NVIDIA H100 80GB HBM3"]
    assert not h100.empty
    assert (h100["usd_per_a100e_utilized_gpu_hour"] < h100["usd_per_utilized_gpu_hour"] / 3).all()
    # [analytics.throughput] overrides a factor, and a model left out of the table is not normalised
    model = str(g.index[0][1])
    over = queries.placement_models(demo.store, f, {model: 2.0}).set_index(["environment", "model"])
    r = g.loc[g.index[0]]
    assert over.loc[g.index[0], "usd_per_a100e_utilized_gpu_hour"] == pytest.approx(
        r["cost_usd"] / (2 * r["utilized_gpu_hours"]), rel=1e-9)


def test_right_sizing_equals_an_independent_computation(demo):
    f = demo_range(demo)
    n_hours = data_hours(demo.store, f)
    expected = expected_rightsizing(hourly(demo.store, f), n_hours)
    sized = queries.placement_rightsize(demo.store, f)
    mig = sized[sized["alternative_kind"] == "MIG slice"]
    assert expected, "the demo has no team holding whole MIG-capable GPUs below a slice's share"
    got = {(r["team"], r["environment"], r["pool"], r["model"]): (r["utilization_pct"] / 100, r["share"],
                                                                 r["savings_usd_month"]) for _, r in mig.iterrows()}
    assert got.keys() == expected.keys()
    for key, (util, share, month) in expected.items():
        assert got[key] == pytest.approx((util, share, month), rel=1e-9)
    for _, r in sized.iterrows():                # one sentence with its numbers
        assert r["why"].startswith(f"Team {r['team']} holds {r['gpus']:,.1f} {r['model']}")
        assert f"{r['utilization_pct']:.0f} % utilization" in r["why"]
        assert f"save about ${r['savings_usd_month']:,.0f} a month" in r["why"]


def kinds_per_subject(recs: pd.DataFrame) -> dict[str, set]:
    out: dict[str, set] = {}
    for kind, team, pool in zip(recs["kind"], recs["team"], recs["pool"]):
        subject = f"team:{team}" if SUBJECT[kind] == "team" else f"pool:{pool}"
        out.setdefault(subject, set()).add(kind)
    return out


def test_no_team_or_pool_gets_contradicting_advice_on_the_demo(demo):
    f = demo_range(demo)
    recs = queries.placement(demo.store, f, 0.1, 85.0)
    assert not recs.empty
    assert {s: k for s, k in kinds_per_subject(recs).items() if len(k) > 1} == {}
    consolidated = set(recs.loc[recs["kind"] == "consolidate pool", "pool"])
    needed = set(recs.loc[recs["kind"].isin(["burst to cloud", "burst queued demand"]), "pool"])
    assert not consolidated & needed
    assert all(re.search(r"\d", why) for why in recs["why"])


@pytest.fixture
def mixed_fleet(store):
    """48 hours. Pool dgx (4 on-prem A100s, $1.6/GPU-hour): held at 80 % on day 1 (saturated), idle
    and unheld on day 2 (under-used). Team nlp holds 2 AWS H100s all the time at 38 % ($4/GPU-hour):
    it could move on-prem and it could use 3g MIG slices."""
    cols = ["hour", "host", "gpu_uuid", "environment", "pool", "model", "team", "held", "gpu_hours",
            "utilized_gpu_hours", "cost_usd"]
    rows, t0 = [], datetime(2026, 3, 1)
    for h in range(48):
        hour = t0 + timedelta(hours=h)
        rows += [[hour, "ip-1", f"GPU-n{g}", "aws", "aws-p5", "NVIDIA H100 80GB HBM3", "nlp", 1, 1.0, 0.38, 4.0]
                 for g in range(2)]
        busy = h < 24
        rows += [[hour, "dgx-1", f"GPU-r{g}", "onprem", "dgx", "NVIDIA A100-SXM4-80GB",
                  "research" if busy else "unallocated", int(busy), 1.0, 0.8 if busy else 0.0, 1.6] for g in range(4)]
    store.client.insert("gpu_cost_hour", rows, column_names=cols)
    derive_daily(store, [date(2026, 3, 1), date(2026, 3, 2)])
    return store, Filters(date(2026, 3, 1), date(2026, 3, 3)), pd.DataFrame(rows, columns=cols)


def test_one_outcome_per_team_and_pool_on_a_constructed_case(mixed_fleet):
    store, f, df = mixed_fleet
    recs = queries.placement(store, f, 0.1, 85.0)
    kinds = kinds_per_subject(recs)
    assert {s: k for s, k in kinds.items() if len(k) > 1} == {}
    # the pool was saturated on day 1 and under-used on day 2: the need for capacity wins
    assert kinds["pool:dgx"] == {"burst to cloud"}
    # nlp: whichever of its two moves saves more, computed here from the rows
    env = df.groupby("environment")[["cost_usd", "utilized_gpu_hours"]].sum()
    rate = env["cost_usd"] / env["utilized_gpu_hours"]
    nlp = df[df["team"] == "nlp"]
    move = nlp["utilized_gpu_hours"].sum() * (rate["aws"] - rate["onprem"])
    slice_saving = nlp["cost_usd"].sum() * (1 - 3 / 7)
    assert kinds["team:nlp"] == {"move baseline on-prem" if move > slice_saving else "right-size"}
    chosen = recs[recs["team"] == "nlp"]
    assert chosen["savings_usd"].sum() == pytest.approx(max(move, slice_saving), rel=1e-9)
    # both candidates exist: the rule, not a missing candidate, keeps one
    sized = queries.placement_rightsize(store, f)
    assert sized[["team", "alternative"]].values.tolist() == [["nlp", "3g.40gb MIG slice"]]
    assert sized["savings_usd"].iloc[0] == pytest.approx(slice_saving, rel=1e-9)
    assert sized["savings_usd_month"].iloc[0] == pytest.approx(slice_saving * MONTH_H / 48, rel=1e-9)
    assert "Team nlp holds 2.0 NVIDIA H100 80GB HBM3 on aws-p5 (aws) at 38 % utilization; 3g.40gb MIG slices" \
        in sized["why"].iloc[0]


def test_a_model_without_a_factor_is_not_normalised(store):
    cols = ["hour", "host", "gpu_uuid", "environment", "pool", "model", "team", "held", "gpu_hours",
            "utilized_gpu_hours", "cost_usd"]
    rows = [[datetime(2026, 3, 1, h), "x-1", "GPU-x", "aws", "p", "Mystery GPU", "t", 1, 1.0, 0.5, 3.0] for h in range(24)]
    store.client.insert("gpu_cost_hour", rows, column_names=cols)
    derive_daily(store, [date(2026, 3, 1)])
    f = Filters(date(2026, 3, 1), date(2026, 3, 2))
    row = queries.placement_models(store, f).iloc[0]
    assert row["model"] == "Mystery GPU" and not row["normalised"] and pd.isna(row["throughput"])
    assert row["usd_per_utilized_gpu_hour"] == pytest.approx(6.0)
    row = queries.placement_models(store, f, {"Mystery GPU": 0.5}).iloc[0]
    assert row["normalised"] and row["usd_per_a100e_utilized_gpu_hour"] == pytest.approx(12.0)
    assert queries.placement_rightsize(store, f).empty      # no MIG, no smaller model known: nothing advised


@pytest.mark.usefixtures("no_console_errors")
def test_the_page_explains_every_recommendation_with_numbers(site, browser):
    open_page(browser, site.url + "/placement", "placement")
    recs = table_rows(part(browser, "placement", "recommendations"))
    assert recs
    for r in recs:
        assert re.search(r"\d", r[11]) and len(r[11]) > 30, r
    kinds: dict[str, set] = {}
    for r in recs:
        kinds.setdefault(f"team:{r[1]}" if SUBJECT[r[0]] == "team" else f"pool:{r[2]}", set()).add(r[0])
    assert {s: k for s, k in kinds.items() if len(k) > 1} == {}
    end = datetime.now(timezone.utc).date() + timedelta(days=1)
    f = Filters(end - timedelta(days=30), end)
    sized = table_rows(part(browser, "placement", "rightsize"))
    expected = expected_rightsizing(hourly(site.store, f), data_hours(site.store, f))
    shown = {(r[0], r[1], r[2], r[3]): r for r in sized}
    assert expected and set(expected) <= set(shown)
    team_kind = {r[1]: r[0] for r in recs if r[1]}
    for key, (util, _, month) in expected.items():
        assert shown[key][11] == team_kind[key[0]]          # the one outcome its team gets
        why = shown[key][10]
        assert why.startswith(f"Team {key[0]} holds ") and f"{100 * util:.0f} % utilization" in why
        assert f"save about ${month:,.0f} a month" in why
    models = table_rows(part(browser, "placement", "models"))
    assert {r[1] for r in models} == set(hourly(site.store, f)["model"])


def test_throughput_overrides_are_read_and_checked(tmp_path):
    from base.errors import ConfigError
    from gpuledger.config import load

    path = tmp_path / "g.toml"
    path.write_text('[analytics.throughput]\n"NVIDIA A10G" = 0.45\n"Mystery GPU" = 0.2\n')
    assert load(str(path), env={}).analytics.throughput == {"NVIDIA A10G": 0.45, "Mystery GPU": 0.2}
    env = {"GPULEDGER_ANALYTICS_THROUGHPUT": '{ "NVIDIA L4" = 0.5 }'}
    assert load(str(path), env=env).analytics.throughput == {"NVIDIA L4": 0.5}
    path.write_text('[analytics.throughput]\n"NVIDIA A10G" = 0\n')
    with pytest.raises(ConfigError, match=r"analytics\.throughput\.NVIDIA A10G.*above 0"):
        load(str(path), env={})


def test_a_range_without_gpu_time_gives_empty_tables_not_an_error(store):
    """Before the first derivation (or for a range with no data) every placement table is empty,
    with its columns; the page renders its empty states instead of failing."""
    f = Filters(date(2026, 3, 1), date(2026, 3, 2))
    assert queries.placement_usage(store, f).empty
    assert list(queries.placement_rates(store, f)[["environment", "usd_per_utilized_gpu_hour"]].columns)
    models = queries.placement_models(store, f)
    assert models.empty and {"normalised", "usd_per_a100e_utilized_gpu_hour"} <= set(models.columns)
    assert queries.placement_rightsize(store, f).empty
    assert queries.placement(store, f, 0.1, 85.0).empty
    assert queries.placement(store, Filters(date(2026, 3, 1), date(2026, 3, 2), teams=("nlp",)), 0.1, 85.0).empty
