"""Azure Cost Management exports (EA and MCA, actual and amortized cost CSV) to FOCUS.

Azure's dates are ``MM/DD/YYYY`` (EA) or ISO (MCA) and its end dates are inclusive, so
BillingPeriodEnd and ChargePeriodEnd are the day after. Actual and amortized exports have the
same columns; they differ in what ``Cost`` means:

* actual: BilledCost = EffectiveCost = Cost (load the amortized export for amortized cost);
* amortized: EffectiveCost = Cost; BilledCost = 0 on reservation / savings plan covered usage
  and Unused* lines (paid by the purchase), Cost otherwise; a commitment purchase has
  EffectiveCost 0 (it is spread over the usage).
"""
from __future__ import annotations

import pandas as pd

from collector.billing.common import col, dates, extensions, focus_frame, lookup, number, pick, text_of

DATE_FORMATS = ("%m/%d/%Y", "%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.%fZ")
REQUIRED = ("BillingPeriodStartDate", "BillingPeriodEndDate", "Date", "ChargeType")
COST = ("CostInBillingCurrency", "Cost", "PreTaxCost")
CHARGE_CATEGORY = {"Usage": "Usage", "Purchase": "Purchase", "Tax": "Tax", "Refund": "Credit",
                   "UnusedReservation": "Usage", "UnusedSavingsPlan": "Usage", "RoundingAdjustment": "Adjustment"}
CHARGE_FREQUENCY = {"UsageBased": "Usage-Based", "Recurring": "Recurring", "OneTime": "One-Time"}
PRICING_CATEGORY = {"OnDemand": "Standard", "Reservation": "Committed", "SavingsPlan": "Committed", "Spot": "Dynamic"}
COMMITTED = ("Reservation", "SavingsPlan")

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


def is_amortized(frame: pd.DataFrame, name: str = "") -> bool:
    """Amortized if the file name says so or it has Unused* charges (only amortized data has them)."""
    return "amortized" in name.lower() or col(frame, "ChargeType").isin(["UnusedReservation", "UnusedSavingsPlan"]).any()


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
    qty = number(col(f, "Quantity"))
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
        "ListCost": text_of(number(col(f, "PayGPrice")) * qty),
        "ContractedUnitPrice": col(f, "UnitPrice"),
        "ContractedCost": text_of(number(col(f, "UnitPrice")) * qty),
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
    return focus_frame(columns, f, extensions(f, used))
