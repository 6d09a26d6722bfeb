"""Azure Cost Management exports (EA and MCA, actual and amortized cost CSV) to FOCUS.

Azure's dates are ``MM/DD/YYYY`` (EA) or ISO (MCA) and its end dates are inclusive, so
BillingPeriodEnd and ChargePeriodEnd are the day after. Actual and amortized exports have the
same columns; they differ in what ``Cost`` means:

* actual: BilledCost = EffectiveCost = Cost (load the amortized export for amortized cost);
* amortized: EffectiveCost = Cost; BilledCost = 0 on reservation / savings plan covered usage
  and Unused* lines (paid by the purchase), Cost otherwise; a commitment purchase has
  EffectiveCost 0 (it is spread over the usage).

``--format azure`` tells the two views apart by content (``view``), then by file name; the
rows are stored with source_kind ``azure-actual`` or ``azure-amortized``.
"""
from __future__ import annotations

import logging
from pathlib import PurePosixPath

import pandas as pd

from base.errors import InputError
from collector.billing.common import col, dates, extensions, focus_frame, lookup, number, pick, times

DATE_FORMATS = ("%m/%d/%Y", "%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.%fZ")
REQUIRED = ("BillingPeriodStartDate", "BillingPeriodEndDate", "Date", "ChargeType")
COST = ("CostInBillingCurrency", "Cost", "PreTaxCost")
CHARGE_CATEGORY = {"Usage": "Usage", "Purchase": "Purchase", "Tax": "Tax", "Refund": "Credit",
                   "UnusedReservation": "Usage", "UnusedSavingsPlan": "Usage", "RoundingAdjustment": "Adjustment"}
CHARGE_FREQUENCY = {"UsageBased": "Usage-Based", "Recurring": "Recurring", "OneTime": "One-Time"}
PRICING_CATEGORY = {"OnDemand": "Standard", "Reservation": "Committed", "SavingsPlan": "Committed", "Spot": "Dynamic"}
COMMITTED = ("Reservation", "SavingsPlan")

log = logging.getLogger(__name__)

MAPPING = {
    "BillingAccountId": "BillingAccountId",
    "BillingAccountName": "BillingAccountName",
    "BillingPeriodStart": "BillingPeriodStartDate",
    "BillingPeriodEnd": "BillingPeriodEndDate + 1 day",
    "ChargePeriodStart": "Date",
    "ChargePeriodEnd": "Date + 1 day",
    "BilledCost": "CostInBillingCurrency, else Cost, else PreTaxCost (amortized: 0 on covered / unused commitment lines)",
    "EffectiveCost": "the same cost column (amortized: 0 on commitment purchases)",
    "ListUnitPrice": "PayGPrice",
    "ListCost": "PayGPrice x Quantity",
    "ContractedUnitPrice": "UnitPrice",
    "ContractedCost": "UnitPrice x Quantity",
    "BillingCurrency": "BillingCurrency, else BillingCurrencyCode",
    "ChargeCategory": "rule: ChargeType via CHARGE_CATEGORY, else Adjustment",
    "ChargeClass": "rule: 'Correction' when ChargeType = Refund",
    "ChargeDescription": "ProductName, else Product",
    "ChargeFrequency": "rule: Frequency via CHARGE_FREQUENCY",
    "ConsumedQuantity": "Quantity (usage lines)",
    "ConsumedUnit": "UnitOfMeasure (usage lines)",
    "PricingQuantity": "Quantity",
    "PricingUnit": "UnitOfMeasure",
    "PricingCategory": "rule: PricingModel via PRICING_CATEGORY",
    "ProviderName": "constant 'Microsoft'",
    "PublisherName": "PublisherName, else 'Microsoft'",
    "InvoiceIssuerName": "constant 'Microsoft'",
    "InvoiceId": "InvoiceId",
    "RegionId": "ResourceLocation, lower-cased",
    "RegionName": "MeterRegion",
    "AvailabilityZone": "AvailabilityZone",
    "ResourceId": "ResourceId, else InstanceName",
    "ResourceName": "ResourceName",
    "ResourceType": "ConsumedService",
    "ServiceName": "MeterCategory",
    "ServiceCategory": "ServiceFamily",
    "ServiceSubcategory": "MeterSubCategory",
    "SkuId": "MeterId",
    "SkuPriceId": "PartNumber",
    "SkuMeter": "MeterName",
    "SubAccountId": "SubscriptionId, else SubscriptionGuid",
    "SubAccountName": "SubscriptionName",
    "CommitmentDiscountId": "benefitId, else ReservationId",
    "CommitmentDiscountName": "benefitName, else ReservationName",
    "CommitmentDiscountType": "rule: PricingModel Reservation / SavingsPlan",
    "CommitmentDiscountCategory": "rule: Usage (Reservation) / Spend (SavingsPlan)",
    "CommitmentDiscountStatus": "rule: Used on covered usage, Unused on UnusedReservation / UnusedSavingsPlan",
    "Tags": "Tags, wrapped in { } when the export leaves them out (EA)",
}


def view(frame: pd.DataFrame, name: str = "") -> tuple[bool, str]:
    """(amortized?, why) of an export, told by its content first, then by its file name.

    Only amortized data has Unused* charges and usage covered by a reservation / savings plan
    (PricingModel, ReservationId or benefitId) with a cost; only actual data has covered usage
    at cost 0, and reservation purchases with a cost (weaker: amortized data may repeat savings
    plan purchases, so a purchase decides only when nothing else does). Without commitment rows
    both views hold the same costs: the file name decides (``amortized`` / ``actual`` in it),
    else actual, the invoiced view. Covered usage both with and without a cost is refused unless
    the file name tells.
    """
    charge, cost = col(frame, "ChargeType"), number(col(frame, *COST)).fillna(0)
    model = col(frame, "PricingModel")
    covered = (charge == "Usage") & (model.isin(COMMITTED) | (col(frame, "benefitId", "ReservationId").str.strip() != ""))
    rows = frame["source_row"] if "source_row" in frame else pd.Series(range(1, len(frame) + 1), index=frame.index)

    def first(what: str, hit: pd.Series) -> str | None:
        return f"row {rows[hit].iloc[0]}: {what}" if hit.any() else None

    amortized = (first("an Unused* charge", charge.isin(["UnusedReservation", "UnusedSavingsPlan"]))
                 or first("covered usage with a cost", covered & (cost != 0)))
    actual = first("covered usage at cost 0", covered & (cost == 0) & (number(col(frame, "Quantity")).fillna(0) > 0))
    file = PurePosixPath(name.replace("\\", "/")).name.lower()
    by_name = "amortized" if "amortized" in file else "actual" if "actual" in file else None
    if amortized and actual:
        if by_name is None:
            raise InputError(f"holds rows of both Azure cost views (amortized: {amortized}; actual: {actual}) and its "
                             "file name tells neither. Nothing was loaded; pass --format azure-actual or azure-amortized",
                             path=name)
        return by_name == "amortized", f"rows of both views; the file name says {by_name}"
    actual = actual or first("a reservation purchase with a cost",
                             (charge == "Purchase") & (model == "Reservation") & (cost != 0))
    if amortized or actual:
        return bool(amortized), f"{amortized or actual} (only the {'amortized' if amortized else 'actual'} view has it)"
    if by_name:
        return by_name == "amortized", f"no commitment rows (both views hold the same costs); the file name says {by_name}"
    return False, "no commitment rows (both views hold the same costs): stored as the actual, invoiced view"


def is_amortized(frame: pd.DataFrame, name: str = "") -> bool:
    """True for an amortized export (see ``view``)."""
    amortized, why = view(frame, name)
    log.info("%s: read as the Azure %s cost view: %s", name or "export", "amortized" if amortized else "actual", why)
    return amortized


def to_focus(frame: pd.DataFrame, amortized: bool = False) -> pd.DataFrame:
    f = frame
    idx = f.index
    blank = pd.Series("", index=idx, dtype=object)
    charge = col(f, "ChargeType")
    model = col(f, "PricingModel")
    cost = col(f, *COST)
    committed = model.isin(COMMITTED)
    if amortized:
        paid_elsewhere = committed & charge.isin(["Usage", "UnusedReservation", "UnusedSavingsPlan"])
        billed = pick(~paid_elsewhere, cost, pd.Series("0", index=idx))
        effective = pick(~(committed & (charge == "Purchase")), cost, pd.Series("0", index=idx))
    else:
        billed, effective = cost, cost
    usage = charge.isin(["Usage", "UnusedReservation", "UnusedSavingsPlan"])
    tags = col(f, "Tags").map(lambda t: t if not t.strip() or t.strip().startswith("{") else "{" + t + "}")
    commitment_type = pick(model == "Reservation", pd.Series("Reservation", index=idx),
                           pick(model == "SavingsPlan", pd.Series("Savings Plan", index=idx), blank))
    columns = {
        "BillingAccountId": col(f, "BillingAccountId"),
        "BillingAccountName": col(f, "BillingAccountName"),
        "BillingPeriodStart": dates(col(f, "BillingPeriodStartDate"), DATE_FORMATS),
        "BillingPeriodEnd": dates(col(f, "BillingPeriodEndDate"), DATE_FORMATS, shift_days=1),
        "ChargePeriodStart": dates(col(f, "Date", "UsageDate"), DATE_FORMATS),
        "ChargePeriodEnd": dates(col(f, "Date", "UsageDate"), DATE_FORMATS, shift_days=1),
        "BilledCost": billed,
        "EffectiveCost": effective,
        "ListUnitPrice": col(f, "PayGPrice"),
        "ListCost": times(col(f, "PayGPrice"), col(f, "Quantity")),
        "ContractedUnitPrice": col(f, "UnitPrice"),
        "ContractedCost": times(col(f, "UnitPrice"), col(f, "Quantity")),
        "BillingCurrency": col(f, "BillingCurrency", "BillingCurrencyCode"),
        "ChargeCategory": lookup(charge, CHARGE_CATEGORY, default="Adjustment"),
        "ChargeClass": pick(charge == "Refund", pd.Series("Correction", index=idx), blank),
        "ChargeDescription": col(f, "ProductName", "Product"),
        "ChargeFrequency": lookup(col(f, "Frequency"), CHARGE_FREQUENCY),
        "ConsumedQuantity": pick(usage, col(f, "Quantity"), blank),
        "ConsumedUnit": pick(usage, col(f, "UnitOfMeasure"), blank),
        "PricingQuantity": col(f, "Quantity"),
        "PricingUnit": col(f, "UnitOfMeasure"),
        "PricingCategory": lookup(model, PRICING_CATEGORY, default=""),
        "ProviderName": pd.Series("Microsoft", index=idx),
        "PublisherName": pick(col(f, "PublisherName") != "", col(f, "PublisherName"), pd.Series("Microsoft", index=idx)),
        "InvoiceIssuerName": pd.Series("Microsoft", index=idx),
        "InvoiceId": col(f, "InvoiceId"),
        "RegionId": col(f, "ResourceLocation").str.lower(),
        "RegionName": col(f, "MeterRegion"),
        "AvailabilityZone": col(f, "AvailabilityZone"),
        "ResourceId": col(f, "ResourceId", "InstanceName"),
        "ResourceName": col(f, "ResourceName"),
        "ResourceType": col(f, "ConsumedService"),
        "ServiceName": col(f, "MeterCategory"),
        "ServiceCategory": col(f, "ServiceFamily"),
        "ServiceSubcategory": col(f, "MeterSubCategory"),
        "SkuId": col(f, "MeterId"),
        "SkuPriceId": col(f, "PartNumber"),
        "SkuMeter": col(f, "MeterName"),
        "SubAccountId": col(f, "SubscriptionId", "SubscriptionGuid"),
        "SubAccountName": col(f, "SubscriptionName"),
        "CommitmentDiscountId": col(f, "benefitId", "ReservationId"),
        "CommitmentDiscountName": col(f, "benefitName", "ReservationName"),
        "CommitmentDiscountType": commitment_type,
        "CommitmentDiscountCategory": pick(model == "Reservation", pd.Series("Usage", index=idx),
                                           pick(model == "SavingsPlan", pd.Series("Spend", index=idx), blank)),
        "CommitmentDiscountStatus": pick(committed & (charge == "Usage"), pd.Series("Used", index=idx),
                                         pick(charge.isin(["UnusedReservation", "UnusedSavingsPlan"]),
                                              pd.Series("Unused", index=idx), blank)),
        "Tags": tags,
    }
    used = {"BillingAccountId", "BillingAccountName", "BillingPeriodStartDate", "BillingPeriodEndDate", "Date",
            "UsageDate", *COST, "PayGPrice", "UnitPrice", "BillingCurrency", "BillingCurrencyCode", "ChargeType",
            "ProductName", "Product", "Frequency", "Quantity", "UnitOfMeasure", "PricingModel", "PublisherName",
            "InvoiceId", "ResourceLocation", "MeterRegion", "AvailabilityZone", "ResourceId", "InstanceName",
            "ResourceName", "ConsumedService", "MeterCategory", "ServiceFamily", "MeterSubCategory", "MeterId",
            "PartNumber", "MeterName", "SubscriptionId", "SubscriptionGuid", "SubscriptionName", "benefitId",
            "ReservationId", "benefitName", "ReservationName", "Tags"}
    out = focus_frame(columns, f, extensions(f, used))
    out.attrs["source_kind"] = "azure-amortized" if amortized else "azure-actual"   # the view its rows are stored as
    return out
