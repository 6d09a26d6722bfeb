"""FOCUS 1.0 billing for the simulated cloud instances, one CSV per provider.

Columns, their order and value conventions follow the FinOps Foundation sample
(``focus_1.0_sample_first600rows.csv``): missing values are the literal ``NULL``, timestamps
``YYYY-MM-DD HH:MM:SS``, costs with 11 decimals, ``Tags`` a JSON object string.

* one compute usage line per instance per running hour: ResourceId is the ``instance_id`` of
  its samples, ConsumedQuantity 1 hour, so billed hours equal sampled running hours exactly;
* the first AWS fine-tuning instance is covered by a Compute Savings Plan: BilledCost 0,
  EffectiveCost the discounted rate, PricingCategory ``Committed``, plus one daily recurring
  ``Purchase`` line of the plan (BilledCost = that day's covered cost, EffectiveCost 0);
* daily storage and egress lines per team and cloud region it uses, tagged with the team;
* ``Tags`` carries ``team`` everywhere except on the planted untagged instance.
"""
from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path

from . import catalog
from .catalog import INSTANCE_TYPES, PROVIDER_ACCOUNTS, REGIONS
from .fleet import Fleet, Instance
from .planted import overlays, planted_windows
from .timeline import Timeline, Window, day_starts, resolve_window, utc

FOCUS_COLUMNS = (
    "AvailabilityZone", "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency",
    "BillingPeriodEnd", "BillingPeriodStart", "ChargeCategory", "ChargeClass",
    "ChargeDescription", "ChargeFrequency", "ChargePeriodEnd", "ChargePeriodStart",
    "CommitmentDiscountCategory", "CommitmentDiscountId", "CommitmentDiscountName",
    "CommitmentDiscountStatus", "CommitmentDiscountType", "ConsumedQuantity", "ConsumedUnit",
    "ContractedCost", "ContractedUnitPrice", "EffectiveCost", "InvoiceIssuerName", "ListCost",
    "ListUnitPrice", "PricingCategory", "PricingQuantity", "PricingUnit", "ProviderName",
    "PublisherName", "RegionId", "RegionName", "ResourceId", "ResourceName", "ResourceType",
    "ServiceCategory", "Id", "ServiceName", "SkuId", "SkuPriceId", "SubAccountId",
    "SubAccountName", "Tags",
)
# Unquoted numbers and their decimals, as in the sample; everything else is a quoted string.
NUMERIC = {"BilledCost": 11, "ConsumedQuantity": 15, "ContractedCost": 11,
           "ContractedUnitPrice": 11, "EffectiveCost": 11, "ListCost": 11,
           "PricingQuantity": 11, "Id": 0}
HOUR = 3600
STORAGE_TB = {"research": 20, "llm-finetune": 40, "search-inference": 5, "data-science": 8,
              "applied-ml": 10, "clinical-ai": 12}
STORAGE = {"aws": ("Amazon Simple Storage Service", 0.023), "gcp": ("Cloud Storage", 0.020),
           "azure": ("Storage", 0.0184)}
EGRESS = {"aws": ("AWS Data Transfer", 0.09), "gcp": ("Networking", 0.12),
          "azure": ("Bandwidth", 0.087)}
EGRESS_GB_PER_DAY = 60.0


def write_billing(fleet: Fleet, out_dir, days: int = 30, end: datetime | None = None) -> list[Path]:
    """``focus_<provider>.csv`` for aws, gcp and azure; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for provider, lines in billing_lines(fleet, days, end).items():
        path = out / f"focus_{provider}.csv"
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(",".join(f'"{c}"' for c in FOCUS_COLUMNS) + "\n")
            for line in lines:
                fh.write(",".join(_cell(c, line.get(c)) for c in FOCUS_COLUMNS) + "\n")
        paths.append(path)
    return paths


def billing_lines(fleet: Fleet, days: int = 30, end: datetime | None = None) -> dict[str, list[dict]]:
    """FOCUS lines per provider as dicts of column -> value (None for NULL)."""
    window = resolve_window(days, HOUR, end)
    timeline = Timeline(fleet, window.start, window.end, overlays(planted_windows(fleet, window)))
    lines: dict[str, list[dict]] = {p: [] for p in PROVIDER_ACCOUNTS}
    for inst_no, inst in enumerate(fleet.instances):
        for start in instance_hours(fleet, timeline, inst_no, window):
            lines[inst.provider].append(_compute_line(inst, start))
    lines["aws"].extend(_savings_plan_purchases(lines["aws"], fleet))
    for provider, region, team in _team_regions(fleet):
        for d0, d1 in _days(window):
            lines[provider].extend(_team_lines(fleet, provider, region, team, d0, d1))
    for rows in lines.values():
        for n, row in enumerate(rows, start=1):
            row["Id"] = n
    return lines


def instance_hours(fleet: Fleet, timeline: Timeline, inst_no: int, window: Window) -> list[int]:
    """Epoch seconds of each whole hour the instance ran inside the window."""
    first = next(k for k, e in enumerate(fleet.entities) if e.instance == inst_no)
    hours = []
    for s, e in timeline.runs(first, window.start, window.end):
        hours.extend(range(s, e, HOUR))
    return hours


def _compute_line(inst: Instance, start: int) -> dict:
    itype = INSTANCE_TYPES[inst.instance_type]
    price = itype.price_hour
    line = _common(inst.provider, inst.region, inst.account, inst.team, start, start + HOUR)
    line.update({
        "AvailabilityZone": inst.zone or None,
        "ChargeCategory": "Usage", "ChargeFrequency": "Usage-Based",
        "ChargeDescription": f"${price} per On Demand Linux {itype.name} Instance Hour",
        "ConsumedQuantity": 1.0, "ConsumedUnit": "Hours", "PricingQuantity": 1.0,
        "PricingUnit": "Hours", "ListCost": price, "ListUnitPrice": str(price),
        "ContractedCost": price, "ContractedUnitPrice": price,
        "BilledCost": price, "EffectiveCost": price, "PricingCategory": "Standard",
        "ResourceId": inst.instance_id,
        "ResourceName": None if inst.provider == "aws" else inst.name,
        "ResourceType": PROVIDER_ACCOUNTS[inst.provider]["resource_type"],
        "ServiceCategory": "Compute", "ServiceName": PROVIDER_ACCOUNTS[inst.provider]["service"],
        "SkuId": _sku(inst.provider, itype.name, inst.region),
        "Tags": json.dumps(dict(inst.tags)),
    })
    line["SkuPriceId"] = f"{line['SkuId']}.{_sku('price', itype.name, 'od')[:10]}"
    if inst.committed:
        effective = round(price * (1 - catalog.SAVINGS_PLAN_DISCOUNT), 6)
        line.update({"BilledCost": 0.0, "EffectiveCost": effective, "PricingCategory": "Committed",
                     "CommitmentDiscountCategory": "Spend", "CommitmentDiscountId": _plan_arn(inst),
                     "CommitmentDiscountName": "gpu-compute-savings-plan",
                     "CommitmentDiscountStatus": "Used", "CommitmentDiscountType": "Savings Plan"})
    return line


def _savings_plan_purchases(aws_lines: list[dict], fleet: Fleet) -> list[dict]:
    """One recurring purchase line per day of the savings plan, sized to its covered usage."""
    covered = [i for i in fleet.instances if i.committed]
    if not covered:
        return []
    inst = covered[0]
    per_day: dict[str, float] = {}
    for line in aws_lines:
        if line["PricingCategory"] == "Committed":
            day = line["ChargePeriodStart"][:10]
            per_day[day] = per_day.get(day, 0.0) + line["EffectiveCost"]
    out = []
    for day, cost in sorted(per_day.items()):
        d0 = int(datetime.fromisoformat(day + "T00:00:00+00:00").timestamp())
        line = _common("aws", inst.region, inst.account, inst.team, d0, d0 + 86400)
        line.update({"BilledCost": round(cost, 6), "EffectiveCost": 0.0, "ListCost": 0.0,
                     "ContractedCost": 0.0, "ChargeCategory": "Purchase",
                     "ChargeFrequency": "Recurring", "RegionId": None, "RegionName": None,
                     "ChargeDescription": "Compute Savings Plan recurring fee",
                     "PricingCategory": "Standard", "ResourceId": _plan_arn(inst),
                     "ServiceCategory": "Compute",
                     "ServiceName": "Savings Plans for AWS Compute usage",
                     "CommitmentDiscountCategory": "Spend", "CommitmentDiscountId": _plan_arn(inst),
                     "CommitmentDiscountName": "gpu-compute-savings-plan",
                     "CommitmentDiscountType": "Savings Plan",
                     "SkuId": _sku("aws", "savings-plan", "global"),
                     "Tags": json.dumps({"team": inst.team})})
        out.append(line)
    return out


def _team_regions(fleet: Fleet) -> list[tuple[str, str, str]]:
    """(provider, region, team) with storage and egress: where the team's regular instances run,
    plus the research team's archive bucket."""
    found = {(i.provider, i.region, i.team) for i in fleet.instances if not i.planted}
    found.add(("aws", "us-east-1", "research"))
    return sorted(found)


def _days(window: Window) -> list[tuple[int, int]]:
    starts = day_starts(window.start, window.end)
    return list(zip(starts, starts[1:] + [window.end]))


def _team_lines(fleet: Fleet, provider, region, team, d0, d1) -> list[dict]:
    """Storage (GB-months) and egress (GB) for one team in one region over ``[d0, d1)``."""
    account = _team_account(fleet, provider, team)
    fraction = (d1 - d0) / 86400
    lines = []
    for service, price, unit, quantity, category, resource in (
        (*STORAGE[provider], "GB-Months", STORAGE_TB[team] * 1000 * fraction / 30.0, "Storage",
         _bucket(provider, region, team, account)),
        (*EGRESS[provider], "GB", EGRESS_GB_PER_DAY * fraction, "Networking",
         _bucket(provider, region, team, account)),
    ):
        cost = round(price * quantity, 6)
        line = _common(provider, region, account, team, d0, d1)
        line.update({
            "ChargeCategory": "Usage", "ChargeFrequency": "Usage-Based",
            "ChargeDescription": f"${price} per {unit} {service}",
            "ConsumedQuantity": round(quantity, 9), "ConsumedUnit": unit,
            "PricingQuantity": round(quantity, 9), "PricingUnit": unit,
            "BilledCost": cost, "EffectiveCost": cost, "ListCost": cost, "ContractedCost": cost,
            "ContractedUnitPrice": price, "ListUnitPrice": str(price),
            "PricingCategory": "Standard", "ResourceId": resource,
            "ServiceCategory": category, "ServiceName": service,
            "SkuId": _sku(provider, service, region), "Tags": json.dumps({"team": team}),
        })
        line["SkuPriceId"] = f"{line['SkuId']}.{_sku('price', service, region)[:10]}"
        lines.append(line)
    return lines


def _common(provider, region, account, team, t0, t1) -> dict:
    acct = PROVIDER_ACCOUNTS[provider]
    start = utc(t0)
    period_start = start.replace(day=1, hour=0, minute=0, second=0)
    period_end = period_start.replace(year=period_start.year + period_start.month // 12,
                                      month=period_start.month % 12 + 1)
    reg = REGIONS.get((provider, region))
    return {
        "BillingAccountId": acct["billing_account"], "BillingAccountName": acct["billing_name"],
        "BillingCurrency": "USD", "BillingPeriodStart": _ts(period_start),
        "BillingPeriodEnd": _ts(period_end), "ChargePeriodStart": _ts(start),
        "ChargePeriodEnd": _ts(utc(t1)), "InvoiceIssuerName": acct["publisher"],
        "ProviderName": acct["provider"], "PublisherName": acct["publisher"],
        "RegionId": region, "RegionName": reg.name if reg else None,
        "SubAccountId": account, "SubAccountName": team,
    }


def _team_account(fleet: Fleet, provider: str, team: str) -> str:
    for inst in fleet.instances:
        if inst.provider == provider and inst.team == team:
            return inst.account
    return hashlib.sha256(f"{fleet.seed}/{provider}/{team}".encode()).hexdigest()[:12]


def _bucket(provider, region, team, account) -> str:
    if provider == "aws":
        return f"arn:aws:s3:::{team}-{region}-{account[-4:]}"
    if provider == "gcp":
        return f"projects/{account}/buckets/{team}-{region}"
    name = f"{team.replace('-', '')}{region}"[:24]
    return (f"/subscriptions/{account}/resourceGroups/rg-{team}-{region}/providers/"
            f"Microsoft.Storage/storageAccounts/{name}")


def _plan_arn(inst: Instance) -> str:
    digest = hashlib.sha256(inst.instance_id.encode()).hexdigest()
    return (f"arn:aws:savingsplans::{inst.account}:savingsplan/"
            f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}")


def _sku(*parts: str) -> str:
    """A stable SKU-like code (16 upper-case characters)."""
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    digest = hashlib.sha256("/".join(parts).encode()).digest()
    return "".join(alphabet[b % 32] for b in digest[:16])


def _ts(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%d %H:%M:%S")


def _cell(column: str, value) -> str:
    if value is None:
        return "NULL"
    if column in NUMERIC:
        decimals = NUMERIC[column]
        return str(int(value)) if decimals == 0 else f"{float(value):.{decimals}f}"
    return '"' + str(value).replace('"', '""') + '"'
