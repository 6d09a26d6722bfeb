"""The [billing] config section validates like the rest of the config."""
from __future__ import annotations

import re
from datetime import date

import pytest

from base.errors import ConfigError
from base.settings import build
from ingest.billing.config import BillingConfig
from ingest.billing.pulls import months


def test_sources_parse_with_secrets_from_the_environment():
    raw = {"interval_minutes": 60, "sources": [
        {"name": "az", "kind": "azure-query", "scope": "/subscriptions/S", "tenant_id": "t", "client_id": "c",
         "client_secret": {"env": "AZ_SECRET"}},
        {"name": "aws", "kind": "aws-cost-explorer", "tag_key": "team"}]}
    config = build(BillingConfig, raw, "billing", "test.toml", {"AZ_SECRET": "hush"})
    assert config.sources[0].client_secret.get() == "hush" and "hush" not in repr(config)
    assert config.sources[1].months_back == 1


@pytest.mark.parametrize("source,key", [
    ({"name": "x", "kind": "azure-query", "scope": "/subscriptions/S"}, "billing.sources[0].tenant_id"),
    ({"name": "x", "kind": "s3-focus", "url": "https://bucket"}, "billing.sources[0].url"),
    ({"name": "x", "kind": "oracle-cloud"}, "billing.sources[0].kind"),
])
def test_bad_sources_name_the_key(source, key):
    with pytest.raises(ConfigError, match=re.escape(f"key '{key}'")):
        build(BillingConfig, {"sources": [source]}, "billing", "test.toml", {})


def test_pulled_months():
    assert months(date(2024, 9, 10), 1) == [(date(2024, 8, 1), date(2024, 9, 1)), (date(2024, 9, 1), date(2024, 9, 11))]
    assert months(date(2024, 1, 31), 1) == [(date(2023, 12, 1), date(2024, 1, 1)), (date(2024, 1, 1), date(2024, 2, 1))]


def test_max_quarantined_share():
    assert build(BillingConfig, {}, "billing", "test.toml", {}).max_quarantined_share == 0
    assert build(BillingConfig, {"max_quarantined_share": 0.01}, "billing", "test.toml", {}).max_quarantined_share == 0.01
    with pytest.raises(ConfigError, match=re.escape("key 'billing.max_quarantined_share'")):
        build(BillingConfig, {"max_quarantined_share": 5}, "billing", "test.toml", {})
