"""AWS Cost and Usage Report (CUR 2.0 ``line_item_unblended_cost`` and legacy ``lineItem/UnblendedCost``) to FOCUS.

Legacy names are first rewritten to CUR 2.0 names (``lineItem/UsageStartDate`` ->
``line_item_usage_start_date``, ``savingsPlan/SavingsPlanARN`` -> ``savings_plan_savings_plan_a_r_n``,
as AWS does), then ``MAPPING`` applies. The table in docs/billing.md is this mapping.
"""
from __future__ import annotations

import json
import re

import pandas as pd

from collector.billing.common import col, extensions, focus_frame, lookup, number, pick, tags_json, text_of

REQUIRED = ("bill_billing_period_start_date", "line_item_usage_start_date", "line_item_usage_end_date",
            "line_item_unblended_cost", "line_item_line_item_type")

CHARGE_CATEGORY = {
    "Usage": "Usage", "DiscountedUsage": "Usage", "SavingsPlanCoveredUsage": "Usage", "SavingsPlanNegation": "Usage",
    "Tax": "Tax", "Credit": "Credit", "Refund": "Credit", "BundledDiscount": "Credit", "Discount": "Credit",
    "EdpDiscount": "Credit", "PrivateRateDiscount": "Credit", "SppDiscount": "Credit",
    "RIFee": "Purchase", "Fee": "Purchase", "SavingsPlanRecurringFee": "Purchase", "SavingsPlanUpfrontFee": "Purchase",
}
CHARGE_FREQUENCY = {"RIFee": "Recurring", "SavingsPlanRecurringFee": "Recurring", "Fee": "One-Time",
                    "SavingsPlanUpfrontFee": "One-Time"}
PRICING_CATEGORY = {"OnDemand": "Standard", "Reserved": "Committed", "Spot": "Dynamic", "": ""}
SERVICE_CATEGORY = {
    "AmazonEC2": "Compute", "AWSLambda": "Compute", "AmazonECS": "Compute", "AmazonEKS": "Compute",
    "AmazonSageMaker": "AI and Machine Learning", "AmazonBedrock": "AI and Machine Learning",
    "AmazonS3": "Storage", "AmazonEFS": "Storage", "AmazonFSx": "Storage", "AWSBackup": "Storage",
    "AmazonRDS": "Databases", "AmazonDynamoDB": "Databases", "AWSGlue": "Analytics", "AmazonAthena": "Analytics",
    "AmazonCloudWatch": "Management and Governance", "AWSCloudTrail": "Management and Governance",
    "AWSDataTransfer": "Networking", "AmazonVPC": "Networking", "AmazonCloudFront": "Networking",
    "AWSELB": "Networking", "AWSQueueService": "Integration", "AmazonSNS": "Integration", "AmazonStates": "Integration",
    "awskms": "Security", "AWSSecretsManager": "Security", "AWSIoT": "Internet of Things",
}

# FOCUS column -> CUR 2.0 source column(s) (first present wins) or a rule (see to_focus).
MAPPING = {
    "BillingAccountId": "bill_payer_account_id",
    "BillingAccountName": "bill_payer_account_name",
    "SubAccountId": "line_item_usage_account_id",
    "SubAccountName": "line_item_usage_account_name",
    "BillingPeriodStart": "bill_billing_period_start_date",
    "BillingPeriodEnd": "bill_billing_period_end_date",
    "ChargePeriodStart": "line_item_usage_start_date",
    "ChargePeriodEnd": "line_item_usage_end_date",
    "BilledCost": "line_item_unblended_cost",
    "EffectiveCost": "rule: by line_item_line_item_type (see docs)",
    "ListCost": "pricing_public_on_demand_cost",
    "ListUnitPrice": "pricing_public_on_demand_rate",
    "ContractedCost": "line_item_net_unblended_cost, else line_item_unblended_cost",
    "ContractedUnitPrice": "line_item_net_unblended_rate, else line_item_unblended_rate",
    "BillingCurrency": "line_item_currency_code",
    "ChargeCategory": "rule: line_item_line_item_type via CHARGE_CATEGORY",
    "ChargeClass": "rule: 'Correction' when line_item_line_item_type = Refund",
    "ChargeDescription": "line_item_line_item_description",
    "ChargeFrequency": "rule: line_item_line_item_type via CHARGE_FREQUENCY, else Usage-Based",
    "ConsumedQuantity": "line_item_usage_amount (usage lines only)",
    "ConsumedUnit": "pricing_unit (usage lines only)",
    "PricingQuantity": "line_item_usage_amount",
    "PricingUnit": "pricing_unit",
    "PricingCategory": "rule: pricing_term via PRICING_CATEGORY; covered usage is Committed",
    "ProviderName": "constant 'AWS'",
    "PublisherName": "line_item_legal_entity",
    "InvoiceIssuerName": "bill_invoicing_entity",
    "InvoiceId": "bill_invoice_id",
    "ServiceName": "product_product_name, else line_item_product_code",
    "ServiceCategory": "rule: line_item_product_code via SERVICE_CATEGORY, else Other",
    "RegionId": "product_region_code, else product_region",
    "RegionName": "product_location",
    "AvailabilityZone": "line_item_availability_zone",
    "ResourceId": "line_item_resource_id",
    "ResourceType": "product_product_family",
    "SkuId": "product_sku",
    "SkuPriceId": "pricing_rate_code",
    "SkuMeter": "line_item_usage_type",
    "CommitmentDiscountId": "savings_plan_savings_plan_a_r_n, else reservation_reservation_a_r_n",
    "CommitmentDiscountType": "rule: 'Savings Plan' / 'Reserved Instance' by which ARN is set",
    "CommitmentDiscountCategory": "rule: Spend (Savings Plan) / Usage (Reserved Instance)",
    "CommitmentDiscountStatus": "rule: Used on covered usage, Unused on RIFee / SavingsPlanRecurringFee",
    "Tags": "resource_tags (map) or resourceTags/user:KEY columns, 'user:' / 'user_' prefix dropped",
}


def cur2_name(name: str) -> str:
    """``lineItem/UnblendedCost`` -> ``line_item_unblended_cost`` (CUR 2.0 spelling); others unchanged."""
    if "/" not in name or name.startswith("resourceTags/"):
        return name
    category, field = name.split("/", 1)
    snake = lambda s: re.sub(r"(?<!^)([A-Z])", r"_\1", s).lower()  # noqa: E731
    return f"{snake(category)}_{snake(field)}"


def normalize(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.rename(columns={c: cur2_name(c) for c in frame.columns})


def to_focus(frame: pd.DataFrame) -> pd.DataFrame:
    """FOCUS text rows from a CUR text frame (legacy or 2.0 names)."""
    f = normalize(frame)
    kind = col(f, "line_item_line_item_type")
    unblended = col(f, "line_item_unblended_cost")
    effective = unblended.copy()
    sp_eff, ri_eff = col(f, "savings_plan_savings_plan_effective_cost"), col(f, "reservation_effective_cost")
    effective = pick(kind != "SavingsPlanCoveredUsage", effective, sp_eff)
    effective = pick(kind != "DiscountedUsage", effective, ri_eff)
    zero = kind.isin(["SavingsPlanNegation", "SavingsPlanUpfrontFee"]) | ((kind == "Fee") & (col(f, "reservation_reservation_a_r_n") != ""))
    effective = pick(~zero, effective, pd.Series("0", index=f.index))
    sp_unused = text_of(number(col(f, "savings_plan_total_commitment_to_date")) - number(col(f, "savings_plan_used_commitment")))
    effective = pick(kind != "SavingsPlanRecurringFee", effective, sp_unused)
    ri_unused = text_of(number(col(f, "reservation_unused_amortized_upfront_fee_for_billing_period")).fillna(0)
                        + number(col(f, "reservation_unused_recurring_fee")).fillna(0))
    effective = pick(kind != "RIFee", effective, ri_unused)
    usage = kind.isin(["Usage", "DiscountedUsage", "SavingsPlanCoveredUsage"])
    sp_arn, ri_arn = col(f, "savings_plan_savings_plan_a_r_n"), col(f, "reservation_reservation_a_r_n")
    covered = kind.isin(["DiscountedUsage", "SavingsPlanCoveredUsage"])
    pricing = lookup(col(f, "pricing_term"), PRICING_CATEGORY, default="Other")
    pricing = pick(~covered, pricing, pd.Series("Committed", index=f.index))
    blank = pd.Series("", index=f.index, dtype=object)
    product_code = col(f, "line_item_product_code")
    tags = tags_json(f, {"resourceTags/user:": "", "resourceTags/": "", "resource_tags_user_": "", "resource_tags_": ""})
    if "resource_tags" in f.columns:
        tags = col(f, "resource_tags").map(_cur2_tags)
    columns = {
        "BillingAccountId": col(f, "bill_payer_account_id"),
        "BillingAccountName": col(f, "bill_payer_account_name"),
        "SubAccountId": col(f, "line_item_usage_account_id"),
        "SubAccountName": col(f, "line_item_usage_account_name"),
        "BillingPeriodStart": col(f, "bill_billing_period_start_date"),
        "BillingPeriodEnd": col(f, "bill_billing_period_end_date"),
        "ChargePeriodStart": col(f, "line_item_usage_start_date"),
        "ChargePeriodEnd": col(f, "line_item_usage_end_date"),
        "BilledCost": unblended,
        "EffectiveCost": effective,
        "ListCost": col(f, "pricing_public_on_demand_cost"),
        "ListUnitPrice": col(f, "pricing_public_on_demand_rate"),
        "ContractedCost": col(f, "line_item_net_unblended_cost", "line_item_unblended_cost"),
        "ContractedUnitPrice": col(f, "line_item_net_unblended_rate", "line_item_unblended_rate"),
        "BillingCurrency": col(f, "line_item_currency_code"),
        "ChargeCategory": lookup(kind, CHARGE_CATEGORY, default="Adjustment"),
        "ChargeClass": pick(kind == "Refund", pd.Series("Correction", index=f.index), blank),
        "ChargeDescription": col(f, "line_item_line_item_description"),
        "ChargeFrequency": lookup(kind, CHARGE_FREQUENCY, default="Usage-Based"),
        "ConsumedQuantity": pick(usage, col(f, "line_item_usage_amount"), blank),
        "ConsumedUnit": pick(usage, col(f, "pricing_unit"), blank),
        "PricingQuantity": col(f, "line_item_usage_amount"),
        "PricingUnit": col(f, "pricing_unit"),
        "PricingCategory": pricing,
        "ProviderName": pd.Series("AWS", index=f.index),
        "PublisherName": col(f, "line_item_legal_entity"),
        "InvoiceIssuerName": col(f, "bill_invoicing_entity"),
        "InvoiceId": col(f, "bill_invoice_id"),
        "ServiceName": pick(col(f, "product_product_name") != "", col(f, "product_product_name"), product_code),
        "ServiceCategory": lookup(product_code, SERVICE_CATEGORY, default="Other"),
        "RegionId": pick(col(f, "product_region_code") != "", col(f, "product_region_code"), col(f, "product_region")),
        "RegionName": col(f, "product_location"),
        "AvailabilityZone": col(f, "line_item_availability_zone"),
        "ResourceId": col(f, "line_item_resource_id"),
        "ResourceType": col(f, "product_product_family"),
        "SkuId": col(f, "product_sku"),
        "SkuPriceId": col(f, "pricing_rate_code"),
        "SkuMeter": col(f, "line_item_usage_type"),
        "CommitmentDiscountId": pick(sp_arn != "", sp_arn, ri_arn),
        "CommitmentDiscountType": pick(sp_arn != "", pd.Series("Savings Plan", index=f.index),
                                       pick(ri_arn != "", pd.Series("Reserved Instance", index=f.index), blank)),
        "CommitmentDiscountCategory": pick(sp_arn != "", pd.Series("Spend", index=f.index),
                                           pick(ri_arn != "", pd.Series("Usage", index=f.index), blank)),
        "CommitmentDiscountStatus": pick(covered, pd.Series("Used", index=f.index),
                                         pick(kind.isin(["RIFee", "SavingsPlanRecurringFee"]),
                                              pd.Series("Unused", index=f.index), blank)),
        "Tags": tags,
    }
    used = {s.strip() for v in MAPPING.values() if not v.startswith(("rule", "constant")) for s in
            re.split(r",\s*else\s*|\s*\(", v)[0:2] if re.fullmatch(r"[a-z_]+", s.strip())}
    used |= {c for c in f.columns if c.startswith(("resourceTags/", "resource_tags"))}
    used |= {"line_item_line_item_type", "identity_line_item_id", "line_item_product_code"}
    ext = extensions(f, used, {"x_LineItemId": col(f, "identity_line_item_id").tolist(),
                               "x_LineItemType": kind.tolist(), "x_ProductCode": product_code.tolist()})
    return focus_frame(columns, f, ext)


def _cur2_tags(text: str) -> str:
    if not text:
        return ""
    try:
        tags = json.loads(text)
    except ValueError:
        return text  # not JSON: quarantined as such
    if isinstance(tags, list):  # pyarrow map as [[k, v], ...]
        tags = dict(tags)
    return json.dumps({re.sub(r"^user_", "", k): v for k, v in tags.items() if v not in (None, "")})
