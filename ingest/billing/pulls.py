"""The scheduled pull of billing APIs (a job in ``gpuledger up``), configured by ``[billing]``
(``ingest.billing.config``).

Each pull loads the current month and the ``months_back`` months before it (providers restate
them), replacing what was stored for those months (see ingest/billing/load.py). One source failing
is logged and reported; the others still run.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timezone

from base.errors import CostExplorerError, GpuledgerError
from collector.billing import aws_ce, azure_query, gcp
from ingest.billing.config import BillingConfig, BillingSourceConfig
from ingest.billing.load import BillingReport, Input, ingest_billing, load_inputs

log = logging.getLogger(__name__)


@dataclass
class PullResult:
    source: str
    report: BillingReport | None = None
    error: str = ""


def months(today: date, back: int) -> list[tuple[date, date]]:
    """[start, end) of the current month (to tomorrow) and ``back`` closed months before it."""
    start = today.replace(day=1)
    spans = [(start, min(aws_ce.next_month(start), date.fromordinal(today.toordinal() + 1)))]
    for _ in range(back):
        end, start = start, date.fromordinal(start.toordinal() - 1).replace(day=1)
        spans.append((start, end))
    return sorted(spans)


def pull_sources(store, sources_config: BillingConfig | list[BillingSourceConfig], clock: Callable[[], float | datetime],
                 *, clients: dict | None = None, progress: Callable[[str], None] = log.info) -> list[PullResult]:
    """Pull every configured source once; return one result per source (errors included, not raised).

    ``clients`` overrides how API clients are made, by kind (tests, or an operator's own
    session): ``{"aws-cost-explorer": ce_client, "s3-focus": s3_client, "gcp-bigquery": bq_client,
    "azure-query": transport_function}``.
    """
    sources = sources_config.sources if isinstance(sources_config, BillingConfig) else list(sources_config)
    share = sources_config.max_quarantined_share if isinstance(sources_config, BillingConfig) else None
    now = clock()
    today = (now if isinstance(now, datetime) else datetime.fromtimestamp(now, timezone.utc)).date()
    results = []
    for source in sources:
        try:
            report = _pull(store, source, today, clients or {}, progress, share)
            results.append(PullResult(source.name, report))
        except GpuledgerError as exc:
            log.warning("billing source %s: %s", source.name, exc)
            results.append(PullResult(source.name, error=str(exc)))
    return results


def _pull(store, source: BillingSourceConfig, today: date, clients: dict, progress,
          share: float | None = None) -> BillingReport:
    spans = months(today, source.months_back)
    if source.kind == "s3-focus":
        client = clients.get("s3-focus") or _aws(source, "s3")
        return ingest_billing(store, [source.url], fmt="focus", progress=progress, s3_client=client,
                              max_quarantined_share=share)
    if source.kind == "aws-cost-explorer":
        ce = clients.get("aws-cost-explorer") or _aws(source, "ce")
        account = source.account_id or _caller_account(source)
        inputs = [Input(f"aws-cost-explorer:{source.name}:{a:%Y-%m}", "aws-cost-explorer",
                        frame=lambda a=a, b=b: aws_ce.pull(ce, a, b, account_id=account, tag_key=source.tag_key))
                  for a, b in spans]
        return load_inputs(store, inputs, progress, max_quarantined_share=share)
    if source.kind == "azure-query":
        transport = clients.get("azure-query") or azure_query.urllib_transport
        api = azure_query.AzureCostQuery(source.scope, source.tenant_id, source.client_id, source.client_secret.get(),
                                         transport=transport, management_url=source.management_url,
                                         login_url=source.login_url)
        account = source.scope.rstrip("/").rsplit("/", 1)[-1]
        amortized = source.cost_type == "AmortizedCost"
        inputs = [Input(f"azure-query:{source.name}:{a:%Y-%m}", "azure-query", frame=lambda a=a, b=b: azure_query.to_focus(
            api.rows(a, date.fromordinal(b.toordinal() - 1), source.cost_type), account, amortized)) for a, b in spans]
        return load_inputs(store, inputs, progress, max_quarantined_share=share)
    client = clients.get("gcp-bigquery") or _bigquery(source)
    inputs = [Input(f"gcp-bigquery:{source.name}:{a:%Y-%m}", "gcp-bigquery",
                    frame=lambda a=a: gcp.query_bigquery(client, source.table, f"{a:%Y%m}")) for a, _ in spans]
    return load_inputs(store, inputs, progress, max_quarantined_share=share)


def _aws(source: BillingSourceConfig, service: str):
    import boto3

    keys = {}
    if source.access_key_id and source.secret_access_key:
        keys = {"aws_access_key_id": source.access_key_id.get(), "aws_secret_access_key": source.secret_access_key.get()}
    return boto3.session.Session(**keys).client(service, region_name=source.region, endpoint_url=source.endpoint_url or None)


def _caller_account(source: BillingSourceConfig) -> str:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return _aws(source, "sts").get_caller_identity()["Account"]
    except (ClientError, BotoCoreError) as exc:
        raise CostExplorerError(f"cannot tell the AWS account ({exc}); set account_id in [[billing.sources]] "
                                       f"{source.name}") from None


def _bigquery(source: BillingSourceConfig):
    try:
        from google.cloud import bigquery  # type: ignore
    except ImportError:
        raise GpuledgerError(f"billing source {source.name} reads BigQuery, which needs the optional package "
                             "google-cloud-bigquery: pip install google-cloud-bigquery") from None
    return bigquery.Client(project=source.project or None)
