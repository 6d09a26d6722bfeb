"""GCP Cloud Billing export rows (the BigQuery standard usage cost schema) to FOCUS.

Rows come from JSON / JSONL / Parquet exports of the BigQuery table (nested fields), from CSV
with flattened names (``service.description`` or ``service_description``), or from the
BigQuery client (``query_bigquery``, needs ``google-cloud-bigquery``). GCP reports ``cost``
before credits; credits are a list per row. BilledCost and EffectiveCost are ``cost`` plus
the sum of the row's credits (what is invoiced); ListCost is ``cost_at_list``.
"""
from __future__ import annotations

import json

import pandas as pd

from collector.billing.common import col, focus_frame, lookup, number, pick, text_of

REQUIRED = ("billing_account_id", "usage_start_time", "usage_end_time", "cost", "currency")
CHARGE_CATEGORY = {"regular": "Usage", "tax": "Tax", "adjustment": "Credit", "rounding_error": "Adjustment"}
SERVICE_CATEGORY = {"Compute Engine": "Compute", "Kubernetes Engine": "Compute", "Cloud Run": "Compute",
                    "Cloud Storage": "Storage", "BigQuery": "Analytics", "Vertex AI": "AI and Machine Learning",
                    "Networking": "Networking", "Cloud SQL": "Databases", "Cloud Logging": "Management and Governance"}

MAPPING = {
    "BillingAccountId": "billing_account_id",
    "BillingPeriodStart": "invoice.month (YYYYMM) -> first day",
    "BillingPeriodEnd": "invoice.month + 1 month",
    "ChargePeriodStart": "usage_start_time",
    "ChargePeriodEnd": "usage_end_time",
    "BilledCost": "cost + sum(credits.amount)",
    "EffectiveCost": "cost + sum(credits.amount)",
    "ListCost": "cost_at_list",
    "ContractedUnitPrice": "price.effective_price",
    "BillingCurrency": "currency",
    "ChargeCategory": "rule: cost_type via CHARGE_CATEGORY",
    "ChargeDescription": "sku.description",
    "ChargeFrequency": "constant 'Usage-Based'",
    "ConsumedQuantity": "usage.amount",
    "ConsumedUnit": "usage.unit",
    "PricingQuantity": "usage.amount_in_pricing_units",
    "PricingUnit": "usage.pricing_unit",
    "PricingCategory": "rule: Committed when a COMMITTED_USAGE_DISCOUNT credit applies, else Standard",
    "ProviderName": "constant 'Google Cloud'",
    "PublisherName": "seller_name, else 'Google Cloud'",
    "InvoiceIssuerName": "constant 'Google Cloud'",
    "RegionId": "location.region",
    "RegionName": "location.region",
    "AvailabilityZone": "location.zone",
    "ResourceId": "resource.global_name",
    "ResourceName": "resource.name",
    "ServiceName": "service.description",
    "ServiceCategory": "rule: service.description via SERVICE_CATEGORY, else Other",
    "SkuId": "sku.id",
    "SubAccountId": "project.id",
    "SubAccountName": "project.name",
    "Tags": "labels [{key, value}] as an object",
}


def flatten(row: dict, prefix: str = "") -> dict:
    """Nested export row -> dotted keys; lists stay lists."""
    out = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def frame_from_rows(rows: list[dict]) -> pd.DataFrame:
    flat = [flatten(r) for r in rows]
    frame = pd.DataFrame(flat)
    frame["source_row"] = range(1, len(frame) + 1)
    return frame


def _g(f: pd.DataFrame, dotted: str) -> pd.Series:
    """A field by its dotted name, or its CSV-flattened ``a_b`` spelling."""
    return col(f, dotted, dotted.replace(".", "_"))


def _list(value) -> list:
    if isinstance(value, list):
        return value
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            return json.loads(value)
        except ValueError:
            return []
    return []


def _raw(f: pd.DataFrame, name: str) -> pd.Series:
    return f[name] if name in f.columns else pd.Series([None] * len(f), index=f.index, dtype=object)


def to_focus(f: pd.DataFrame) -> pd.DataFrame:
    idx = f.index
    credits = _raw(f, "credits").map(_list)
    credit_sum = credits.map(lambda cs: sum(float(c.get("amount") or 0) for c in cs if isinstance(c, dict)))
    cost = number(_g(f, "cost"))
    cost_text = _g(f, "cost")
    billed = pick(cost.notna(), text_of(cost + credit_sum), cost_text)  # unparseable cost passes through to quarantine
    month = _g(f, "invoice.month")
    start = pd.to_datetime(month, format="%Y%m", errors="coerce")
    period_start = start.dt.strftime("%Y-%m-01T00:00:00Z").where(start.notna(), month)
    period_end = (start + pd.offsets.MonthBegin(1)).dt.strftime("%Y-%m-01T00:00:00Z").where(start.notna(), month)
    labels = _raw(f, "labels").map(_list).map(
        lambda ls: json.dumps({str(x.get("key")): str(x.get("value")) for x in ls if isinstance(x, dict)}) if ls else "")
    committed = credits.map(lambda cs: any(isinstance(c, dict) and c.get("type") == "COMMITTED_USAGE_DISCOUNT" for c in cs))
    service = _g(f, "service.description")
    columns = {
        "BillingAccountId": _g(f, "billing_account_id"),
        "BillingPeriodStart": period_start,
        "BillingPeriodEnd": period_end,
        "ChargePeriodStart": _g(f, "usage_start_time"),
        "ChargePeriodEnd": _g(f, "usage_end_time"),
        "BilledCost": billed,
        "EffectiveCost": billed,
        "ListCost": _g(f, "cost_at_list"),
        "ContractedUnitPrice": _g(f, "price.effective_price"),
        "BillingCurrency": _g(f, "currency"),
        "ChargeCategory": lookup(_g(f, "cost_type").replace("", "regular"), CHARGE_CATEGORY, default="Adjustment"),
        "ChargeDescription": _g(f, "sku.description"),
        "ChargeFrequency": pd.Series("Usage-Based", index=idx),
        "ConsumedQuantity": _g(f, "usage.amount"),
        "ConsumedUnit": _g(f, "usage.unit"),
        "PricingQuantity": _g(f, "usage.amount_in_pricing_units"),
        "PricingUnit": _g(f, "usage.pricing_unit"),
        "PricingCategory": pick(committed, pd.Series("Committed", index=idx), pd.Series("Standard", index=idx)),
        "ProviderName": pd.Series("Google Cloud", index=idx),
        "PublisherName": pick(_g(f, "seller_name") != "", _g(f, "seller_name"), pd.Series("Google Cloud", index=idx)),
        "InvoiceIssuerName": pd.Series("Google Cloud", index=idx),
        "RegionId": _g(f, "location.region"),
        "RegionName": _g(f, "location.region"),
        "AvailabilityZone": _g(f, "location.zone"),
        "ResourceId": _g(f, "resource.global_name"),
        "ResourceName": _g(f, "resource.name"),
        "ServiceName": service,
        "ServiceCategory": lookup(service, SERVICE_CATEGORY, default="Other"),
        "SkuId": _g(f, "sku.id"),
        "SubAccountId": _g(f, "project.id"),
        "SubAccountName": _g(f, "project.name"),
        "Tags": labels,
    }
    ext = [{k: v for k, v in d.items() if v not in ("", None, "[]")} for d in ({
        "x_Credits": json.dumps(cs) if cs else "",
        "x_CostType": ct, "x_ProjectNumber": pn, "x_ServiceId": si, "x_CurrencyConversionRate": cr,
        "x_CostBeforeCredits": cb,
    } for cs, ct, pn, si, cr, cb in zip(credits, _g(f, "cost_type"), _g(f, "project.number"), _g(f, "service.id"),
                                         _g(f, "currency_conversion_rate"), cost_text))]
    return focus_frame(columns, f, ext)


def query_bigquery(client, table: str, invoice_month: str) -> pd.DataFrame:
    """Rows of one invoice month (``YYYYMM``) from the export table through a BigQuery client.

    ``client`` is a ``google.cloud.bigquery.Client`` (optional dependency) or anything whose
    ``query(sql, job_config=None).result()`` yields mapping-like rows.
    """
    sql = f"SELECT * FROM `{table.replace('`', '')}` WHERE invoice.month = @month"
    try:
        from google.cloud import bigquery  # type: ignore

        config = bigquery.QueryJobConfig(query_parameters=[bigquery.ScalarQueryParameter("month", "STRING", invoice_month)])
    except ImportError:
        config = {"month": invoice_month}
    rows = [dict(r.items()) if hasattr(r, "items") else dict(r) for r in client.query(sql, job_config=config).result()]
    return to_focus(frame_from_rows(rows))
