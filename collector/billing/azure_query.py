"""Azure Cost Management Query REST API (``POST {scope}/providers/Microsoft.CostManagement/query``) to FOCUS.

The client takes its ``transport`` as an argument: a function ``(method, url, headers, body)
-> (status, headers, body bytes)``. The default speaks HTTPS with urllib; tests pass a loopback
server's URL as ``management_url`` / ``login_url`` instead. Authentication is a service
principal (client credentials grant). Responses are paged through ``properties.nextLink``;
429 answers are retried after ``Retry-After`` seconds (at most 3 times).

Query: ``type`` ActualCost or AmortizedCost, ``timeframe`` Custom, daily granularity,
``Cost`` summed, grouped by ResourceId, ServiceName, SubscriptionId, ResourceLocation,
ChargeType, PricingModel. Column mapping (by the column names the API returns):

=====================  ==============================================================
FOCUS column           from the Query API row
=====================  ==============================================================
ChargePeriodStart/End  ``UsageDate`` (``20240901``) / next day
BillingPeriodStart/End the calendar month of ``UsageDate``
BilledCost             ``Cost`` / ``PreTaxCost`` (ActualCost); 0 on committed usage for AmortizedCost
EffectiveCost          ``Cost`` / ``PreTaxCost`` (0 on commitment purchases for AmortizedCost)
BillingCurrency        ``Currency``
ResourceId             ``ResourceId``;  ServiceName ``ServiceName``;  RegionId ``ResourceLocation``
SubAccountId           ``SubscriptionId``;  BillingAccountId the configured scope's account
ChargeCategory         ``ChargeType`` as in the export mapping;  PricingCategory ``PricingModel``
ProviderName           ``Microsoft``
=====================  ==============================================================
"""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from datetime import date

import pandas as pd

from base.errors import AzureQueryError
from collector.billing import azure

API_VERSION = "2023-11-01"
GROUPING = ("ResourceId", "ServiceName", "SubscriptionId", "ResourceLocation", "ChargeType", "PricingModel")
Transport = Callable[[str, str, dict, bytes | None], tuple[int, dict, bytes]]


def urllib_transport(method: str, url: str, headers: dict, body: bytes | None) -> tuple[int, dict, bytes]:
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers or {}), exc.read()


class AzureCostQuery:
    """Pulls daily cost for one scope (``/subscriptions/ID`` or ``/providers/Microsoft.Billing/billingAccounts/ID``)."""

    def __init__(self, scope: str, tenant_id: str, client_id: str, client_secret: str, *,
                 transport: Transport = urllib_transport, management_url: str = "https://management.azure.com",
                 login_url: str = "https://login.microsoftonline.com", sleep: Callable[[float], None] = time.sleep):
        self.scope = "/" + scope.strip("/")
        self.tenant_id, self.client_id, self._secret = tenant_id, client_id, client_secret
        self.transport, self.management_url, self.login_url = transport, management_url.rstrip("/"), login_url.rstrip("/")
        self.sleep = sleep
        self._token: str | None = None

    def __repr__(self) -> str:
        return f"AzureCostQuery({self.scope!r}, client_id={self.client_id!r})"

    def token(self) -> str:
        if self._token is None:
            form = urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": self.client_id,
                                           "client_secret": self._secret,
                                           "scope": "https://management.azure.com/.default"}).encode()
            status, _, body = self.transport("POST", f"{self.login_url}/{self.tenant_id}/oauth2/v2.0/token",
                                             {"Content-Type": "application/x-www-form-urlencoded"}, form)
            if status != 200:
                raise AzureQueryError(f"Azure sign-in for client {self.client_id} failed (HTTP {status}): "
                                      f"{body[:200].decode(errors='replace')}; check tenant_id, client_id and the secret")
            self._token = json.loads(body)["access_token"]
        return self._token

    def rows(self, start: date, end: date, cost_type: str = "ActualCost") -> list[dict]:
        """Result rows (column name -> value) for [start, end], all pages."""
        body = json.dumps({
            "type": cost_type, "timeframe": "Custom",
            "timePeriod": {"from": f"{start.isoformat()}T00:00:00Z", "to": f"{end.isoformat()}T23:59:59Z"},
            "dataset": {"granularity": "Daily", "aggregation": {"totalCost": {"name": "Cost", "function": "Sum"}},
                        "grouping": [{"type": "Dimension", "name": g} for g in GROUPING]},
        }).encode()
        url = f"{self.management_url}{self.scope}/providers/Microsoft.CostManagement/query?api-version={API_VERSION}"
        out: list[dict] = []
        while url:
            payload = self._post(url, body)
            props = payload.get("properties", {})
            names = [c["name"] for c in props.get("columns", [])]
            out += [dict(zip(names, row)) for row in props.get("rows", [])]
            url = props.get("nextLink") or ""
        return out

    def _post(self, url: str, body: bytes) -> dict:
        for attempt in range(4):
            status, headers, data = self.transport(
                "POST", url, {"Authorization": f"Bearer {self.token()}", "Content-Type": "application/json"}, body)
            if status == 429 and attempt < 3:
                retry = {k.lower(): v for k, v in headers.items()}.get("retry-after", "5")
                self.sleep(float(retry) if str(retry).replace(".", "", 1).isdigit() else 5.0)
                continue
            if status != 200:
                raise AzureQueryError(f"Azure Cost Management query on {self.scope} failed (HTTP {status}): "
                                      f"{data[:300].decode(errors='replace')}")
            return json.loads(data)
        raise AzureQueryError(f"Azure Cost Management query on {self.scope}: still throttled (HTTP 429) after 3 retries")


def to_focus(rows: list[dict], billing_account_id: str, amortized: bool = False) -> pd.DataFrame:
    """FOCUS text rows from Query API result rows (renamed to export columns, then the export mapping)."""
    frame = pd.DataFrame.from_records(rows)
    if frame.empty:
        frame = pd.DataFrame(columns=["UsageDate", "Cost", "Currency"])
    day = pd.to_datetime(frame["UsageDate"].astype(str), format="%Y%m%d", errors="coerce")
    month = day.dt.to_period("M")
    export = pd.DataFrame({
        "BillingAccountId": billing_account_id,
        "BillingPeriodStartDate": month.dt.start_time.dt.strftime("%Y-%m-%d"),
        "BillingPeriodEndDate": (month + 1).dt.start_time.dt.strftime("%Y-%m-%d"),
        "Date": day.dt.strftime("%Y-%m-%d"),
        "Cost": frame.get("Cost", frame.get("PreTaxCost", pd.Series(dtype=object))).astype(str),
        "BillingCurrency": frame.get("Currency", pd.Series("", index=frame.index)).astype(str),
        **{name: frame[name].astype(str) if name in frame else "" for name in
           ("ResourceId", "SubscriptionId", "ChargeType", "PricingModel")},
        "MeterCategory": frame["ServiceName"].astype(str) if "ServiceName" in frame else "",
        "ResourceLocation": frame["ResourceLocation"].astype(str) if "ResourceLocation" in frame else "",
    }, index=frame.index)
    export["source_row"] = range(1, len(export) + 1)
    out = azure.to_focus(export, amortized=amortized)
    # The query API's period end is exclusive already (we built it from the month); undo the export's +1 day.
    out["BillingPeriodEnd"] = export["BillingPeriodEndDate"].values
    out["BillingPeriodEnd"] = out["BillingPeriodEnd"].map(lambda v: f"{v}T00:00:00Z" if v else None)
    return out
