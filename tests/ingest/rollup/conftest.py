"""Builders for hand-computable analytics scenarios."""
from __future__ import annotations

import csv
from datetime import datetime, timedelta, timezone

import pytest

from collector.records import GPU_SAMPLE_COLUMNS, GpuSample
from gpuledger.config import Config, TeamConfig
from ingest.rollup.config import AnalyticsConfig, ListPrice, PoolConfig
from ingest.writer import Writer

UTC = timezone.utc
FOCUS_COLUMNS = ["BillingAccountId", "BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart",
                 "ChargePeriodEnd", "BilledCost", "EffectiveCost", "ListCost", "ChargeCategory", "ChargeDescription",
                 "ProviderName", "PublisherName", "InvoiceIssuerName", "ServiceName", "ServiceCategory", "ResourceId",
                 "RegionId", "SubAccountId", "ConsumedQuantity", "ConsumedUnit", "Tags"]


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def series(start: str, end: str, step_s: int = 60, **values) -> list[dict]:
    """One sample every ``step_s`` in [start, end) with the given column values."""
    rows, t, stop = [], at(start), at(end)
    while t < stop:
        rows.append({"ts": t, **values})
        t += timedelta(seconds=step_s)
    return rows


def insert_samples(store, rows: list[dict], **common) -> None:
    """Through the writer every producer uses, as GpuSample records."""
    with Writer(store, "gpu_samples", GPU_SAMPLE_COLUMNS) as writer:
        writer.add_many(GpuSample(**{**common, **r}) for r in rows)


def focus_file(path, lines: list[dict]) -> str:
    """A minimal FOCUS 1.0 CSV with the given line items."""
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, FOCUS_COLUMNS)
        writer.writeheader()
        for line in lines:
            start = at(line["start"])
            end = at(line.get("end") or (start + timedelta(hours=1)).isoformat())
            writer.writerow({
                "BillingAccountId": "111111111111", "BillingCurrency": line.get("currency", "USD"),
                "BillingPeriodStart": start.replace(day=1, hour=0).strftime("%Y-%m-%d %H:%M:%S"),
                "BillingPeriodEnd": (start.replace(day=1, hour=0) + timedelta(days=32)).replace(day=1).strftime("%Y-%m-%d %H:%M:%S"),
                "ChargePeriodStart": start.strftime("%Y-%m-%d %H:%M:%S"), "ChargePeriodEnd": end.strftime("%Y-%m-%d %H:%M:%S"),
                "BilledCost": line["cost"], "EffectiveCost": line.get("effective", line["cost"]), "ListCost": line["cost"],
                "ChargeCategory": "Usage", "ChargeDescription": line.get("description", "GPU instance hour"),
                "ProviderName": line.get("provider", "AWS"), "PublisherName": "AWS", "InvoiceIssuerName": "AWS",
                "ServiceName": line.get("service", "Amazon Elastic Compute Cloud"),
                "ServiceCategory": line.get("category", "Compute"), "ResourceId": line["resource"],
                "RegionId": line.get("region", "us-east-1"), "SubAccountId": line.get("account", "222222222222"),
                "ConsumedQuantity": "1", "ConsumedUnit": "Hours", "Tags": line.get("tags", "{}"),
            })
    return str(path)


@pytest.fixture
def cfg() -> Config:
    config = Config()
    config.analytics = AnalyticsConfig(capital_usd_per_gpu=36500.0, depreciation_months=50,  # $1/GPU-hour
                                       operations_usd_per_gpu_month=365.0,                  # $0.5/GPU-hour
                                       pue=1.5, energy_usd_per_kwh=0.10)
    config.pools = [PoolConfig(name="dgx")]
    config.list_prices = [ListPrice(instance_type="p4d.24xlarge", gpus=8, usd_per_hour=32.0)]
    config.teams = [TeamConfig(name="nlp", budget_usd_month=1000.0)]
    return config
