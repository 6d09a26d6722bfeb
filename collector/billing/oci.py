"""Oracle Cloud (OCI) cost reports to FOCUS: the native cost report and OCI's FOCUS report.

The native cost report (``reports/cost-csv/…``) has ``lineItem/…``, ``product/…``, ``usage/…``,
``cost/…`` and ``tags/…`` columns, one row per resource per hour; ``MAPPING`` applies (names
compared without regard to case: OCI's documentation writes ``lineItem/TenantId`` and
``product/description``, its files ``lineItem/tenantId`` and ``product/Description``).
``cost/myCost`` is what is charged, overage included. Numbers written with an exponent
(``2.32376E-9``) pass as they are: the store reads them exactly (``ingest.billing.stage.decimal12``).

OCI's FOCUS report (``FOCUS Reports/…``) is FOCUS with the FOCUS 1.0-preview names
``Provider``, ``Publisher``, ``InvoiceIssuer``, ``Region``, ``UsageQuantity``, ``UsageUnit``
(renamed to their FOCUS 1.0 names, ``PREVIEW_NAMES``) plus ``oci_…`` columns, kept in
``x_extensions`` under their own names.
"""
from __future__ import annotations

import re

import pandas as pd

from collector.billing.common import col, dates, extensions, focus_frame, lookup, pick, tags_json
from collector.billing.focus import COLUMNS, match_header

REQUIRED = ("lineItem/tenantId", "lineItem/intervalUsageStart", "lineItem/intervalUsageEnd", "cost/myCost",
            "cost/currencyCode")
DATE_FORMATS = ("%Y-%m-%dT%H:%MZ", "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.%fZ")
SERVICE_CATEGORY = {
    "COMPUTE": "Compute", "FUNCTIONS": "Compute", "CONTAINER_ENGINE": "Compute",
    "BLOCK_STORAGE": "Storage", "OBJECTSTORE": "Storage", "FILE_STORAGE": "Storage",
    "DATABASE": "Databases", "MYSQL": "Databases", "NOSQL": "Databases",
    "NETWORK": "Networking", "LOAD_BALANCER": "Networking", "DNS": "Networking",
    "TELEMETRY": "Management and Governance", "LOGGING": "Management and Governance",
    "ORACLE_STREAMING_SERVICE": "Integration", "NOTIFICATIONS": "Integration",
    "DATA_SCIENCE": "AI and Machine Learning", "GENERATIVE_AI": "AI and Machine Learning",
    "KEY_MANAGEMENT": "Security", "VAULT": "Security",
}
# OCI's FOCUS report: FOCUS 1.0-preview column -> FOCUS 1.0 column (when the 1.0 one is absent)
PREVIEW_NAMES = {"Provider": "ProviderName", "Publisher": "PublisherName", "InvoiceIssuer": "InvoiceIssuerName",
                 "Region": "RegionId", "UsageQuantity": "ConsumedQuantity", "UsageUnit": "ConsumedUnit"}

# FOCUS column -> cost report column(s) (first present wins) or a rule (see to_focus).
MAPPING = {
    "BillingAccountId": "cost/subscriptionId, else lineItem/tenantId",
    "SubAccountId": "lineItem/tenantId",
    "BillingPeriodStart": "lineItem/intervalUsageStart -> first day of its month",
    "BillingPeriodEnd": "lineItem/intervalUsageStart -> first day of the next month",
    "ChargePeriodStart": "lineItem/intervalUsageStart",
    "ChargePeriodEnd": "lineItem/intervalUsageEnd",
    "BilledCost": "cost/myCost",
    "EffectiveCost": "cost/myCost",
    "ContractedUnitPrice": "cost/unitPrice",
    "BillingCurrency": "cost/currencyCode",
    "ChargeCategory": "constant 'Usage'",
    "ChargeClass": "rule: 'Correction' when lineItem/isCorrection = true",
    "ChargeDescription": "product/Description",
    "ChargeFrequency": "constant 'Usage-Based'",
    "ConsumedQuantity": "usage/billedQuantity",
    "ConsumedUnit": "cost/skuUnitDescription",
    "PricingQuantity": "usage/billedQuantity",
    "PricingUnit": "cost/skuUnitDescription",
    "ProviderName": "constant 'Oracle'",
    "PublisherName": "constant 'Oracle'",
    "InvoiceIssuerName": "constant 'Oracle'",
    "RegionId": "product/region",
    "RegionName": "product/region",
    "AvailabilityZone": "product/availabilityDomain",
    "ResourceId": "product/resourceId",
    "ServiceName": "product/service",
    "ServiceCategory": "rule: product/service via SERVICE_CATEGORY, else Other",
    "SkuId": "cost/productSku",
    "Tags": "tags/KEY columns as an object, 'tags/' dropped (defined tags keep NAMESPACE.KEY)",
}
_KNOWN = {*REQUIRED, "lineItem/referenceNo", "lineItem/isCorrection", *(
    s for v in MAPPING.values() for s in v.replace(",", " ").split()
    if re.fullmatch(r"[A-Za-z]+/[A-Za-z]+", s) and not s.startswith("tags/"))}
_CANONICAL = {name.lower(): name for name in _KNOWN}


def is_cost_report(header: list[str]) -> bool:
    """True for the native cost report's header (``lineItem/intervalUsageStart`` and ``cost/myCost``)."""
    lower = {h.strip().lstrip("\ufeff").lower() for h in header}
    return {"lineitem/intervalusagestart", "cost/mycost"} <= lower


def is_focus_report(header: list[str]) -> bool:
    """True for OCI's FOCUS report: FOCUS cost columns plus ``oci_…`` extension columns."""
    lower = {h.strip().lstrip("\ufeff").lower() for h in header}
    return {"billedcost", "chargeperiodstart"} <= lower and any(n.startswith("oci_") for n in lower)


def missing_columns(header: list[str]) -> list[str]:
    """The columns the file needs and lacks (of the cost report, or of FOCUS for OCI's FOCUS report)."""
    if is_focus_report(header):
        match = match_header(focus_names(header))
        return [*match.missing, *(f"{c} (named twice)" for c in match.duplicated)]
    lower = {h.strip().lstrip("\ufeff").lower() for h in header}
    return [c for c in REQUIRED if c.lower() not in lower]


def focus_names(header: list[str]) -> list[str]:
    """OCI FOCUS report header with the 1.0-preview names renamed (unless the 1.0 name is there too)."""
    lower = {h.strip().lower() for h in header}
    return [PREVIEW_NAMES[h.strip()] if h.strip() in PREVIEW_NAMES and PREVIEW_NAMES[h.strip()].lower() not in lower
            else h for h in header]


def to_focus(frame: pd.DataFrame) -> pd.DataFrame:
    """FOCUS text rows from an OCI cost report or OCI FOCUS report text frame."""
    if is_focus_report(list(frame.columns)):
        return focus_report(frame)
    f = frame.rename(columns={c: _CANONICAL.get(c.lower(), c) for c in frame.columns})
    idx = f.index
    start = col(f, "lineItem/intervalUsageStart")
    month = pd.to_datetime(dates(start, DATE_FORMATS), format="%Y-%m-%dT%H:%M:%SZ", errors="coerce").dt.to_period("M")
    period_start = month.dt.start_time.dt.strftime("%Y-%m-%dT%H:%M:%SZ").where(month.notna(), start)
    period_end = (month + 1).dt.start_time.dt.strftime("%Y-%m-%dT%H:%M:%SZ").where(month.notna(), start)
    cost = col(f, "cost/myCost")
    quantity = col(f, "usage/billedQuantity")
    service = col(f, "product/service")
    oracle = pd.Series("Oracle", index=idx)
    blank = pd.Series("", index=idx, dtype=object)
    columns = {
        "BillingAccountId": col(f, "cost/subscriptionId").where(col(f, "cost/subscriptionId") != "",
                                                                col(f, "lineItem/tenantId")),
        "SubAccountId": col(f, "lineItem/tenantId"),
        "BillingPeriodStart": period_start,
        "BillingPeriodEnd": period_end,
        "ChargePeriodStart": dates(start, DATE_FORMATS),
        "ChargePeriodEnd": dates(col(f, "lineItem/intervalUsageEnd"), DATE_FORMATS),
        "BilledCost": cost,
        "EffectiveCost": cost,
        "ContractedUnitPrice": col(f, "cost/unitPrice"),
        "BillingCurrency": col(f, "cost/currencyCode"),
        "ChargeCategory": pd.Series("Usage", index=idx),
        "ChargeClass": pick(col(f, "lineItem/isCorrection").str.lower() == "true",
                            pd.Series("Correction", index=idx), blank),
        "ChargeDescription": col(f, "product/Description"),
        "ChargeFrequency": pd.Series("Usage-Based", index=idx),
        "ConsumedQuantity": quantity,
        "ConsumedUnit": col(f, "cost/skuUnitDescription"),
        "PricingQuantity": quantity,
        "PricingUnit": col(f, "cost/skuUnitDescription"),
        "ProviderName": oracle,
        "PublisherName": oracle,
        "InvoiceIssuerName": oracle,
        "RegionId": col(f, "product/region"),
        "RegionName": col(f, "product/region"),
        "AvailabilityZone": col(f, "product/availabilityDomain"),
        "ResourceId": col(f, "product/resourceId"),
        "ServiceName": service,
        "ServiceCategory": lookup(service, SERVICE_CATEGORY, default="Other"),
        "SkuId": col(f, "cost/productSku"),
        "Tags": tags_json(f, {"tags/": ""}),
    }
    used = _KNOWN | {c for c in f.columns if c.startswith("tags/")}
    ext = extensions(f, used, {"x_LineItemId": col(f, "lineItem/referenceNo").tolist()})
    return focus_frame(columns, f, ext)


def focus_report(frame: pd.DataFrame) -> pd.DataFrame:
    """OCI's FOCUS report: FOCUS columns as they are (1.0-preview names renamed), the rest in x_extensions."""
    names = [c for c in frame.columns if c != "source_row"]
    match = match_header(focus_names(names))
    f = frame[names].set_axis(match.columns, axis=1)
    columns = {c: col(f, c) for c in dict.fromkeys(match.columns) if c in COLUMNS}
    if "RegionId" in columns and "RegionName" not in columns:
        columns["RegionName"] = columns["RegionId"]
    rest = f[match.extensions].astype(object).where(f[match.extensions].notna(), "")
    ext = [{"x_LineItemId": line, **{k: v for k, v in zip(match.extensions, row) if v != ""}}
           for line, row in zip(col(f, "oci_ReferenceNumber"), rest.itertuples(index=False, name=None))]
    return focus_frame(columns, frame, ext)
