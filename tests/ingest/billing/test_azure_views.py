"""Azure actual vs amortized exports told apart by content (issue #18, item 3).

Through the real command, ``gpuledger ingest billing``, with Microsoft's own small EA exports
of one month in both views (finops-toolkit; see data/SOURCES.md): the view read is stored in
``source_kind``; a load meeting the other view of a stored account and month warns.
"""
from __future__ import annotations

import csv
import io
import shutil
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import pytest

from tests.ingest.billing.test_partial_bills import gpuledger

DATA = Path(__file__).parent / "data"


@pytest.fixture
def exports(tmp_path, shared_data):
    """The two views under names that do not tell them apart (so only content can)."""
    actual, amortized = tmp_path / "export_a.csv", tmp_path / "export_b.csv"
    shutil.copy(shared_data / "billing_native" / "azure_actual_cost_export_sample.csv", actual)
    shutil.copy(DATA / "azure_amortized_cost_export_sample.csv", amortized)
    return actual, amortized


def stored_views(dsn: str, cwd: Path) -> list[list[str]]:
    done = gpuledger(dsn, "query", "--format", "csv",
                     "SELECT source_kind, source_file, count(), toString(sum(BilledCost)), toString(sum(EffectiveCost)) "
                     "FROM billing_line_items GROUP BY 1, 2 ORDER BY 1, 2", cwd=cwd)
    assert done.returncode == 0, done.stderr
    return list(csv.reader(io.StringIO(done.stdout)))[1:]


def cost(path: Path, keep=lambda row: True) -> str:
    """Σ Cost of the rows kept, each cell rounded half-even to the store's 12 decimals, as the store prints it."""
    with path.open(encoding="utf-8-sig", newline="") as handle:
        total = sum(Decimal(r["Cost"]).quantize(Decimal("1e-12"), ROUND_HALF_EVEN) for r in csv.DictReader(handle) if keep(r))
    return f"{total.normalize():f}"


def covered(row) -> bool:
    return row["ChargeType"] == "Usage" and row["PricingModel"] in ("Reservation", "SavingsPlan")


def load(dsn, cwd, *args):
    done = gpuledger(dsn, "ingest", "billing", *args, cwd=cwd)
    print(f"\n$ ingest billing {' '.join(map(str, args))}\n{done.stdout}{done.stderr}")
    return done


def test_each_view_is_told_by_content_and_stored_as_such(tmp_path, exports):
    actual, amortized = exports
    dsn = f"chdb://{tmp_path / 'store'}"
    assert load(dsn, tmp_path, str(actual)).returncode == 0         # sniffed as --format azure
    assert stored_views(dsn, tmp_path) == [["azure-actual", str(actual), "11", cost(actual), cost(actual)]]
    done = load(dsn, tmp_path, str(amortized), "--format", "azure")
    assert done.returncode == 0, done.stderr
    # amortized: the reservation / savings plan covered usage (0.493152 + 0.006000000468) is not billed
    assert stored_views(dsn, tmp_path) == [["azure-amortized", str(amortized), "28",
                                            cost(amortized, lambda r: not covered(r)), cost(amortized)]]
    # the stored actual view of that month was replaced: warned, naming account, month and both files
    assert "warning: Azure billing account 8611537, 2023-09: the amortized cost view" in done.stdout
    assert str(amortized) in done.stdout and f"actual view stored from {actual}" in done.stdout


def test_both_views_in_one_load_warn_that_costs_count_twice(tmp_path, exports):
    actual, amortized = exports
    dsn = f"chdb://{tmp_path / 'store'}"
    done = load(dsn, tmp_path, str(actual), str(amortized))
    assert done.returncode == 0, done.stderr
    assert [r[0] for r in stored_views(dsn, tmp_path)] == ["azure-actual", "azure-amortized"]
    line = next(x for x in done.stdout.splitlines() if "warning:" in x)
    for text in ("8611537", "2023-09", str(actual), str(amortized), "counted twice"):
        assert text in line


def test_the_same_view_again_does_not_warn(tmp_path, exports):
    actual, _ = exports
    dsn = f"chdb://{tmp_path / 'store'}"
    assert load(dsn, tmp_path, str(actual)).returncode == 0
    done = load(dsn, tmp_path, str(actual))
    assert done.returncode == 0 and "warning" not in done.stdout


def test_an_explicit_format_wins_over_content(tmp_path, exports):
    actual, _ = exports
    dsn = f"chdb://{tmp_path / 'store'}"
    assert load(dsn, tmp_path, str(actual), "--format", "azure-amortized").returncode == 0
    # the 3.25 reservation purchase is no effective cost when amortized
    assert stored_views(dsn, tmp_path) == [["azure-amortized", str(actual), "11", cost(actual),
                                            cost(actual, lambda r: r["ChargeType"] != "Purchase")]]


def rows_of(path: Path, keep) -> list[str]:
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    return [lines[0], *[line for line, row in zip(lines[1:], csv.DictReader(lines)) if keep(row)]]


def test_without_commitment_rows_the_file_name_decides_else_actual(tmp_path, exports):
    _, amortized = exports
    on_demand = rows_of(amortized, lambda r: r["PricingModel"] == "OnDemand")
    dsn = f"chdb://{tmp_path / 'store'}"
    for name, kind in (("costs_amortized_2023-09.csv", "azure-amortized"), ("costs_actual_2023-09.csv", "azure-actual"),
                       ("part_0001.csv", "azure-actual")):
        (tmp_path / name).write_text("\n".join(on_demand) + "\n")
        assert load(dsn, tmp_path, str(tmp_path / name)).returncode == 0
        assert [r[:3] for r in stored_views(dsn, tmp_path)] == [[kind, str(tmp_path / name), "26"]]


def test_content_beats_a_misleading_file_name(tmp_path, exports):
    actual, _ = exports
    named = tmp_path / "amortized_cost.csv"
    shutil.copy(actual, named)
    dsn = f"chdb://{tmp_path / 'store'}"
    assert load(dsn, tmp_path, str(named)).returncode == 0
    assert stored_views(dsn, tmp_path)[0][0] == "azure-actual"


def test_a_file_holding_both_views_is_refused_unless_its_name_tells(tmp_path, exports):
    actual, amortized = exports
    # the actual view of the amortized sample's reservation-covered usage (row 1): cost 0
    reserved = rows_of(amortized, lambda r: r["PricingModel"] == "Reservation")[1].replace(",0.493152,", ",0,", 1)
    mixed = rows_of(actual, lambda r: True) + [reserved] + rows_of(amortized, lambda r: True)[1:]
    dsn = f"chdb://{tmp_path / 'store'}"
    both = tmp_path / "export_c.csv"
    both.write_text("\n".join(mixed) + "\n")
    done = load(dsn, tmp_path, str(both))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    for text in (str(both), "both Azure cost views", "row 13: covered usage with a cost", "row 12: covered usage at cost 0",
                 "--format azure-actual or azure-amortized"):
        assert text in done.stderr
    assert stored_views(dsn, tmp_path) == []
    named = tmp_path / "export_amortized.csv"
    shutil.copy(both, named)
    assert load(dsn, tmp_path, str(named)).returncode == 0
    assert stored_views(dsn, tmp_path)[0][:3] == ["azure-amortized", str(named), "40"]
