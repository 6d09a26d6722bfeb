"""AWS Cost Explorer ``get_cost_and_usage`` (daily, by service and one cost-allocation tag) to FOCUS.

Cost Explorer gives one row per day x service (x tag value), not line items, so these rows
are coarse: no ResourceId, SKU or usage quantity. Use it where CUR / FOCUS exports are not set
up; a month loaded from an export later replaces the pulled month (same account and month).

=====================  ===============================================================
FOCUS column           from Cost Explorer
=====================  ===============================================================
ChargePeriodStart/End  ``TimePeriod.Start`` / ``End`` (one day)
BillingPeriodStart/End the calendar month of ``TimePeriod.Start``
BilledCost             ``Metrics.UnblendedCost.Amount``
EffectiveCost          ``Metrics.AmortizedCost.Amount``
ConsumedQuantity       ``Metrics.UsageQuantity.Amount``
BillingCurrency        ``Metrics.UnblendedCost.Unit``
ServiceName            group key ``SERVICE``
Tags                   group key ``TAG`` ``key$value`` -> {key: value} (no value: no tag)
ChargeCategory         ``Usage``; ChargeFrequency ``Usage-Based``
ProviderName           ``AWS``; BillingAccountId the configured / caller's account
x_Estimated            ``Estimated`` (true while AWS may still revise the day)
=====================  ===============================================================
"""
from __future__ import annotations

import json
from datetime import date, timedelta

import pandas as pd

from base.errors import CostExplorerError
from collector.billing.common import focus_frame

METRICS = ("UnblendedCost", "AmortizedCost", "UsageQuantity")


def next_month(day: date) -> date:
    return (day.replace(day=28) + timedelta(days=4)).replace(day=1)


def pull(ce, start: date, end: date, *, account_id: str, tag_key: str = "") -> pd.DataFrame:
    """FOCUS text rows for [start, end) from a boto3 ``ce`` client, paging through all results."""
    from botocore.exceptions import BotoCoreError, ClientError

    group_by = [{"Type": "DIMENSION", "Key": "SERVICE"}]
    if tag_key:
        group_by.append({"Type": "TAG", "Key": tag_key})
    request = {"TimePeriod": {"Start": start.isoformat(), "End": end.isoformat()}, "Granularity": "DAILY",
               "Metrics": list(METRICS), "GroupBy": group_by}
    records = []
    token = None
    while True:
        try:
            response = ce.get_cost_and_usage(**request, **({"NextPageToken": token} if token else {}))
        except (ClientError, BotoCoreError) as exc:
            raise CostExplorerError(f"Cost Explorer get_cost_and_usage failed ({exc}); check AWS credentials, the "
                                    "ce:GetCostAndUsage permission and the endpoint") from None
        for period in response.get("ResultsByTime", []):
            records += _rows(period, tag_key, account_id)
        token = response.get("NextPageToken")
        if not token:
            break
    return to_focus(records)


def _rows(period: dict, tag_key: str, account_id: str) -> list[dict]:
    start, end = period["TimePeriod"]["Start"], period["TimePeriod"]["End"]
    groups = period.get("Groups") or ([{"Keys": [], "Metrics": period["Total"]}] if period.get("Total") else [])
    out = []
    for group in groups:
        keys = group.get("Keys", [])
        tags = {}
        for key in keys[1:]:
            name, _, value = key.partition("$")
            if value:
                tags[name or tag_key] = value
        metrics = group.get("Metrics", {})
        out.append({"start": start, "end": end, "service": keys[0] if keys else "", "tags": tags,
                    "billed": metrics.get("UnblendedCost", {}).get("Amount", ""),
                    "currency": metrics.get("UnblendedCost", {}).get("Unit", ""),
                    "effective": metrics.get("AmortizedCost", metrics.get("UnblendedCost", {})).get("Amount", ""),
                    "quantity": metrics.get("UsageQuantity", {}).get("Amount", ""),
                    "estimated": str(period.get("Estimated", "")).lower(), "account": account_id})
    return out


def to_focus(records: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(records, columns=["start", "end", "service", "tags", "billed", "currency",
                                                       "effective", "quantity", "estimated", "account"])
    starts = pd.to_datetime(frame["start"], errors="coerce")
    month = starts.dt.to_period("M")
    columns = {
        "ChargePeriodStart": frame["start"], "ChargePeriodEnd": frame["end"],
        "BillingPeriodStart": month.dt.start_time.dt.strftime("%Y-%m-%d").where(starts.notna(), frame["start"]),
        "BillingPeriodEnd": (month + 1).dt.start_time.dt.strftime("%Y-%m-%d").where(starts.notna(), frame["start"]),
        "BilledCost": frame["billed"], "EffectiveCost": frame["effective"], "ConsumedQuantity": frame["quantity"],
        "BillingCurrency": frame["currency"], "ServiceName": frame["service"],
        "Tags": frame["tags"].map(lambda t: json.dumps(t) if t else ""),
        "ChargeCategory": pd.Series("Usage", index=frame.index), "ChargeFrequency": pd.Series("Usage-Based", index=frame.index),
        "ProviderName": pd.Series("AWS", index=frame.index), "BillingAccountId": frame["account"],
    }
    ext = [{"x_Estimated": e, "x_Source": "cost-explorer"} for e in frame["estimated"]]
    return focus_frame(columns, frame, ext)
