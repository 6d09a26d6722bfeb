"""The FOCUS columns gpuledger stores (FinOps Open Cost and Usage Specification 1.0 to 1.2).

``COLUMNS`` maps each FOCUS column to the kind of value it holds; the ClickHouse table
``billing_line_items`` (``sql/migrations/002_billing_line_items.sql``) has exactly these columns, and the
loader parses each kind the same way whatever the source. ``match_header`` decides, for the
header of one input, which column is which FOCUS column (names compared without regard to
case: ``SkuPriceid`` is ``SkuPriceId``), which are provider extensions kept in
``x_extensions``, and which required columns are missing.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# kind: "time" timestamp (UTC) | "money" Decimal(38, 12) | "number" Nullable(Decimal(38, 12))
#       "currency" ISO 4217 code | "json_map" JSON object -> Map(String, String) | "text"
COLUMNS: dict[str, str] = {
    "BillingPeriodStart": "time", "BillingPeriodEnd": "time",
    "ChargePeriodStart": "time", "ChargePeriodEnd": "time",
    "BilledCost": "money", "EffectiveCost": "money", "ListCost": "number", "ContractedCost": "number",
    "ListUnitPrice": "number", "ContractedUnitPrice": "number",
    "PricingQuantity": "number", "ConsumedQuantity": "number", "CommitmentDiscountQuantity": "number",
    "PricingCurrencyListUnitPrice": "number", "PricingCurrencyContractedUnitPrice": "number",
    "PricingCurrencyEffectiveCost": "number",
    "BillingCurrency": "currency", "PricingCurrency": "currency",
    "Tags": "json_map",
    "AvailabilityZone": "text", "BillingAccountId": "text", "BillingAccountName": "text",
    "BillingAccountType": "text", "CapacityReservationId": "text", "CapacityReservationStatus": "text",
    "ChargeCategory": "text", "ChargeClass": "text", "ChargeDescription": "text", "ChargeFrequency": "text",
    "CommitmentDiscountCategory": "text", "CommitmentDiscountId": "text", "CommitmentDiscountName": "text",
    "CommitmentDiscountStatus": "text", "CommitmentDiscountType": "text", "CommitmentDiscountUnit": "text",
    "ConsumedUnit": "text", "InvoiceId": "text", "InvoiceIssuerName": "text", "PricingCategory": "text",
    "PricingUnit": "text", "ProviderName": "text", "PublisherName": "text", "RegionId": "text",
    "RegionName": "text", "ResourceId": "text", "ResourceName": "text", "ResourceType": "text",
    "ServiceCategory": "text", "ServiceName": "text", "ServiceSubcategory": "text", "SkuId": "text",
    "SkuMeter": "text", "SkuPriceDetails": "text", "SkuPriceId": "text", "SubAccountId": "text",
    "SubAccountName": "text", "SubAccountType": "text",
}

# A file without one of these columns is refused as a whole.
REQUIRED_COLUMNS = (
    "BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd",
    "BilledCost", "EffectiveCost", "ChargeCategory",
)
# A row with an empty / NULL value in one of these goes to quarantine.
REQUIRED_VALUES = (
    "BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd", "BilledCost", "EffectiveCost", "ChargeCategory",
)
# Spellings of "no value" in FOCUS files: the sample data writes NULL, the spec examples null.
MISSING = ("", "NULL", "null")

_BY_LOWER = {name.lower(): name for name in COLUMNS}


@dataclass
class HeaderMatch:
    """How the columns of one input map onto FOCUS.

    ``columns[i]`` is the FOCUS name of input column i, or its own name for an extension.
    """

    columns: list[str]
    extensions: list[str] = field(default_factory=list)   # x_… and other non-FOCUS columns, kept in x_extensions
    unknown: list[str] = field(default_factory=list)      # the non-x_ ones among them (reported, still kept)
    missing: list[str] = field(default_factory=list)      # required FOCUS columns absent
    duplicated: list[str] = field(default_factory=list)


def match_header(header: list[str]) -> HeaderMatch:
    """Match an input header against FOCUS; see ``HeaderMatch``."""
    columns, extensions, unknown = [], [], []
    for raw in header:
        name = raw.strip().lstrip("\ufeff")
        focus = _BY_LOWER.get(name.lower())
        if focus:
            columns.append(focus)
        else:
            columns.append(name)
            extensions.append(name)
            if not name.lower().startswith("x_"):
                unknown.append(name)
    present = set(columns)
    missing = [c for c in REQUIRED_COLUMNS if c not in present]
    duplicated = sorted({c for c in columns if columns.count(c) > 1})
    return HeaderMatch(columns, extensions, unknown, missing, duplicated)

