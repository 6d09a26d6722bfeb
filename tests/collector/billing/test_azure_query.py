"""Azure Cost Management Query API against a loopback HTTP server answering in the documented shape."""
from __future__ import annotations

import json
import threading
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from base.settings import Secret
from collector.billing.azure_query import AzureCostQuery, AzureQueryError, to_focus
from ingest.billing.config import BillingSourceConfig
from ingest.billing.pulls import pull_sources

COLUMNS = [{"name": "Cost", "type": "Number"}, {"name": "UsageDate", "type": "Number"},
           {"name": "ResourceId", "type": "String"}, {"name": "ServiceName", "type": "String"},
           {"name": "SubscriptionId", "type": "String"}, {"name": "ResourceLocation", "type": "String"},
           {"name": "ChargeType", "type": "String"}, {"name": "PricingModel", "type": "String"},
           {"name": "Currency", "type": "String"}]
VM = "/subscriptions/SUB-1/resourceGroups/GPU/providers/Microsoft.Compute/virtualMachines/nd96-1"


class Azure(BaseHTTPRequestHandler):
    seen: list = []
    throttle_once = True

    def log_message(self, *args):
        pass

    def _send(self, status, payload, headers=None):
        body = json.dumps(payload).encode()
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Azure.seen.append((self.path, self.headers.get("Authorization"), body))
        if self.path.endswith("/oauth2/v2.0/token"):
            if b"client_secret=s3cret" not in body:
                return self._send(401, {"error": "invalid_client"})
            return self._send(200, {"access_token": "tok", "token_type": "Bearer", "expires_in": 3599})
        if self.headers.get("Authorization") != "Bearer tok":
            return self._send(401, {"error": {"code": "AuthenticationFailed"}})
        if Azure.throttle_once:
            Azure.throttle_once = False
            return self._send(429, {"error": {"code": "429"}}, {"Retry-After": "0"})
        query = json.loads(body)
        assert query["dataset"]["granularity"] == "Daily"
        month = query["timePeriod"]["from"][:7].replace("-", "")
        if "page=2" in self.path:
            rows = [[-2.0, int(month + "03"), "", "Storage", "SUB-1", "eastus", "Refund", "OnDemand", "USD"]]
            return self._send(200, {"properties": {"nextLink": None, "columns": COLUMNS, "rows": rows}})
        rows = [[12.5, int(month + "02"), VM, "Virtual Machines", "SUB-1", "eastus", "Usage", "OnDemand", "USD"]]
        next_link = f"http://{self.headers['Host']}{self.path}&page=2"
        return self._send(200, {"properties": {"nextLink": next_link, "columns": COLUMNS, "rows": rows}})


@pytest.fixture
def azure_url():
    Azure.seen, Azure.throttle_once = [], True
    server = ThreadingHTTPServer(("127.0.0.1", 0), Azure)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_query_pages_retries_429_and_maps(azure_url):
    api = AzureCostQuery("/providers/Microsoft.Billing/billingAccounts/8611537", "tenant", "app", "s3cret",
                         management_url=azure_url, login_url=azure_url, sleep=lambda s: None)
    from datetime import date

    rows = api.rows(date(2024, 9, 1), date(2024, 9, 30))
    assert [r["Cost"] for r in rows] == [12.5, -2.0]
    assert "s3cret" not in repr(api)
    out = to_focus(rows, "8611537").iloc[0].to_dict()
    assert {k: out[k] for k in ("BilledCost", "EffectiveCost", "ChargePeriodStart", "ChargePeriodEnd", "BillingPeriodStart",
                                "BillingPeriodEnd", "ResourceId", "ServiceName", "SubAccountId", "RegionId",
                                "ChargeCategory", "PricingCategory", "BillingCurrency", "ProviderName", "BillingAccountId")} == {
        "BilledCost": "12.5", "EffectiveCost": "12.5", "ChargePeriodStart": "2024-09-02T00:00:00Z",
        "ChargePeriodEnd": "2024-09-03T00:00:00Z", "BillingPeriodStart": "2024-09-01T00:00:00Z",
        "BillingPeriodEnd": "2024-10-01T00:00:00Z", "ResourceId": VM, "ServiceName": "Virtual Machines",
        "SubAccountId": "SUB-1", "RegionId": "eastus", "ChargeCategory": "Usage", "PricingCategory": "Standard",
        "BillingCurrency": "USD", "ProviderName": "Microsoft", "BillingAccountId": "8611537"}


def test_bad_credentials_are_a_named_error(azure_url):
    api = AzureCostQuery("/subscriptions/SUB-1", "tenant", "app", "wrong", management_url=azure_url, login_url=azure_url)
    from datetime import date

    with pytest.raises(AzureQueryError, match="sign-in for client app failed \\(HTTP 401\\)"):
        api.rows(date(2024, 9, 1), date(2024, 9, 30))


def test_scheduled_pull_loads_two_months_and_repull_replaces(store, azure_url, quiet):
    source = BillingSourceConfig(name="az", kind="azure-query", scope="/providers/Microsoft.Billing/billingAccounts/8611537",
                                 tenant_id="tenant", client_id="app", client_secret=Secret("s3cret", "test"),
                                 management_url=azure_url, login_url=azure_url)
    clock = lambda: datetime(2024, 9, 10, tzinfo=timezone.utc)  # noqa: E731
    out = pull_sources(store, [source], clock, progress=quiet)
    assert out[0].error == "", out[0].error
    totals = store.rows("SELECT formatDateTime(BillingPeriodStart, '%Y-%m'), toFloat64(sum(BilledCost)), count() "
                        "FROM billing_line_items GROUP BY 1 ORDER BY 1")
    assert totals == [("2024-08", 10.5, 2), ("2024-09", 10.5, 2)]
    pull_sources(store, [source], clock, progress=quiet)
    assert store.scalar("SELECT count() FROM billing_line_items") == 4
    assert store.scalar("SELECT resource_key FROM billing_line_items WHERE ResourceId != '' LIMIT 1") == VM.lower()
