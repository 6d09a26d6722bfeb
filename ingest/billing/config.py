"""The ``[billing]`` config section: the billing APIs ``gpuledger up`` pulls (``ingest.billing.pulls``).

    [billing]
    interval_minutes = 360
    max_quarantined_share = 0.0         # share of a file's rows that may be quarantined (0: none)

    [[billing.sources]]
    name = "aws-main"
    kind = "aws-cost-explorer"          # aws-cost-explorer | azure-query | s3-focus | gcp-bigquery
    tag_key = "team"
    access_key_id = { env = "AWS_ACCESS_KEY_ID" }        # optional: else the usual AWS chain
    secret_access_key = { env = "AWS_SECRET_ACCESS_KEY" }

    [[billing.sources]]
    name = "azure-ea"
    kind = "azure-query"
    scope = "/providers/Microsoft.Billing/billingAccounts/8611537"
    tenant_id = "…"
    client_id = "…"
    client_secret = { env = "AZURE_CLIENT_SECRET" }

"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Literal

from base.settings import Secret

log = logging.getLogger(__name__)

MAX_QUARANTINED_SHARE = 0.0

REQUIRED = {
    "aws-cost-explorer": (),
    "s3-focus": ("url",),
    "azure-query": ("scope", "tenant_id", "client_id", "client_secret"),
    "gcp-bigquery": ("table",),
}


@dataclass
class BillingSourceConfig:
    """One billing API to pull on a schedule. Keys not used by ``kind`` are ignored."""

    name: str
    kind: Literal["aws-cost-explorer", "azure-query", "s3-focus", "gcp-bigquery"]
    months_back: int = 1                     # re-pull this many closed months (restatements)
    # AWS (Cost Explorer, S3): the usual AWS chain unless keys are given
    region: str = "us-east-1"
    endpoint_url: str = ""                   # custom endpoint (S3-compatible store, moto, LocalStack)
    access_key_id: Secret | None = None
    secret_access_key: Secret | None = None
    account_id: str = ""                     # BillingAccountId for Cost Explorer rows; default: the caller's
    tag_key: str = ""                        # cost-allocation tag to group Cost Explorer by
    url: str = ""                            # s3-focus: s3://bucket/prefix of a FOCUS export
    # Azure Cost Management Query API (service principal)
    scope: str = ""                          # /subscriptions/ID or /providers/Microsoft.Billing/billingAccounts/ID
    tenant_id: str = ""
    client_id: str = ""
    client_secret: Secret | None = None
    cost_type: Literal["ActualCost", "AmortizedCost"] = "ActualCost"
    management_url: str = "https://management.azure.com"
    login_url: str = "https://login.microsoftonline.com"
    # GCP billing export in BigQuery (needs google-cloud-bigquery)
    table: str = ""                          # project.dataset.gcp_billing_export_v1_XXXXXX
    project: str = ""

    def validate(self):
        for key in REQUIRED[self.kind]:
            if not getattr(self, key):
                return key, f"a value: sources of kind {self.kind} need {', '.join(REQUIRED[self.kind])}"
        if self.kind == "s3-focus" and not self.url.startswith("s3://"):
            return "url", "an S3 URL, s3://bucket/prefix"
        if not 0 <= self.months_back <= 12:
            return "months_back", "a number of months from 0 to 12"
        return None


@dataclass
class BillingConfig:
    """``[billing]``: the API sources pulled by ``gpuledger up`` and how often."""

    interval_minutes: int = 360
    # The largest share of one input's rows (0 to 1) that may go to quarantine while the rest
    # still replaces the months it holds. Default 0: one bad row keeps every stored month as it is.
    max_quarantined_share: float = MAX_QUARANTINED_SHARE
    sources: list[BillingSourceConfig] = field(default_factory=list)

    def validate(self):
        if self.interval_minutes < 5:
            return "interval_minutes", "at least 5 minutes (billing APIs are rate-limited and update a few times a day)"
        if not 0 <= self.max_quarantined_share <= 1:
            return "max_quarantined_share", "a share from 0 (no bad row allowed) to 1 (any number of bad rows)"
        names = [s.name for s in self.sources]
        if len(names) != len(set(names)):
            return "sources", "sources with distinct names"
        return None
