"""What ``gpuledger up`` pulls itself: configured scrape targets, and the local GPUs.

Scrape targets (``[[scrape]]`` in the config) are fetched every ``interval_s`` and parsed
with ``collector.promtext``; series map onto ``gpu_samples`` by the target's ``format``:

* ``gpuledger`` — our agent's ``/metrics`` (dcgm-exporter names plus ``gpuledger_*`` series):
  the very records the agent sampled, with their own sample time, so scraping an agent twice
  within one of its intervals stores the round once;
* ``dcgm`` — NVIDIA dcgm-exporter (``collector.dcgm.DCGM``; its labels ``Hostname``, ``UUID``,
  ``gpu``, ``GPU_I_ID``, ``modelName``, ``namespace``, ``pod`` ... fill our columns);
* ``nvidia_gpu_exporter`` — utkuozdemir/nvidia_gpu_exporter (``collector.exporters``);
* ``custom`` — any exporter, with ``metrics`` (metric -> column and scale) and ``label_map``
  (label -> column) from the config.

``labels`` of a target fill columns the data lacks (``environment``, ``cluster``, ...); a
series without a host label gets the target URL's host name. Each scrape is one insert whose
deduplication token is a digest of its rows; a GPU entity seen twice at one time is stored once.

Each row is checked like an HTTP batch (``ingest.writer.insert_valid``): a value its column
cannot hold (a negative byte count, an XID above 2^32-1, an infinite counter), a label over its
length limit or a ``ts`` outside 2000-01-01 .. 1 day ahead (``ingest.limits``) refuses that row
only — never stored wrapped or NULL. Refused rows are counted (``rows_refused``) and logged with
the target's name; the rest of the scrape is stored and scraping goes on.

A target that fails is logged once when it starts failing and once when it recovers, and is
shown as failing in ``/healthz`` meanwhile.
"""
from __future__ import annotations

import dataclasses
import logging
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone
from urllib.parse import urlparse

from base.errors import ScrapeError, first_line
from collector.batches import batches_from_round
from collector.dcgm import DCGM, GPULEDGER, records_from_text
from collector.exporters import EXPORTERS
from collector.promtext import PromTextError
from collector.records import GPU_SAMPLE_COLUMNS, as_row
from collector.sample_mapping import MetricMapping, mapping_from_config, one_per_sample
from ingest import limits
from ingest.writer import insert_batch, insert_valid

log = logging.getLogger(__name__)

ACCEPT = "text/plain;version=0.0.4;q=0.9,*/*;q=0.1"


def mapping_for(target) -> MetricMapping:
    mapping = _mapping(target)
    if target.host_labels is not None:
        mapping = dataclasses.replace(mapping, host_labels=tuple(target.host_labels))
    return mapping


def _mapping(target) -> MetricMapping:
    if target.format == "dcgm":
        base = DCGM
    elif target.format == "gpuledger":
        base = GPULEDGER
    elif target.format in EXPORTERS:
        base = EXPORTERS[target.format]
    else:
        metrics = {name: (m.column, m.scale) for name, m in target.metrics.items()}
        return mapping_from_config(metrics, target.label_map, source=target.name)
    if target.metrics or target.label_map:
        return mapping_from_config({n: (m.column, m.scale) for n, m in target.metrics.items()},
                                   target.label_map, source=base.source, base=base)
    return base


def fetch(url: str, timeout_s: float, token: str | None = None) -> str:
    """The body of one scrape; ScrapeError when the target does not answer with 200."""
    headers = {"Accept": ACCEPT, "User-Agent": "gpuledger-scraper"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                    timeout=timeout_s) as response:
            body = response.read(limits.SCRAPE_MAX + 1)
    except urllib.error.HTTPError as e:
        raise ScrapeError(f"{url} answered {e.code} {e.reason}") from None
    except (OSError, ValueError) as e:
        raise ScrapeError(f"{url} does not answer ({getattr(e, 'reason', e)})") from None
    if len(body) > limits.SCRAPE_MAX:
        raise ScrapeError(f"{url} answered over {limits.SCRAPE_MAX >> 20} MiB of metrics; nothing of it was stored "
                          "(scrape fewer series per target)")
    return body.decode("utf-8", "replace")


class ScrapeJob:
    """One target: ``job()`` scrapes it once and stores what it found; returns rows stored."""

    def __init__(self, store, target, fetch_text=fetch, clock=time.time, metrics=None):
        self.store, self.target, self.metrics = store, target, metrics   # metrics: the platform's, or None
        self.mapping = mapping_for(target)
        self.defaults = {"host": urlparse(target.url).hostname or "", **target.labels}
        self._fetch, self._clock = fetch_text, clock
        self.rows_refused = 0

    def __call__(self) -> int:
        t = self.target
        when = datetime.fromtimestamp(self._clock(), timezone.utc)
        text = self._fetch(t.url, t.timeout_s, t.token.get() if t.token else None)
        try:
            records = records_from_text(text, when, self.mapping, self.defaults)
        except PromTextError as e:
            raise ScrapeError(f"{t.url} is not Prometheus text ({e})") from None
        if not records:
            if self.metrics is not None:
                self.metrics.ingested("scrape", 0, 0, source="scrape", name=t.name)
            return 0
        # one row per GPU entity and sample time, as for sample files and remote_write
        records = one_per_sample(records)
        stored, problems = insert_valid(self.store, "gpu_samples", GPU_SAMPLE_COLUMNS,
                                        [as_row(r) for r in records], now=when)
        if self.metrics is not None:
            refused = {p.row for p in problems}
            newest = max((r.ts for n, r in enumerate(records) if n not in refused), default=None)
            self.metrics.ingested("scrape", len(records), stored, problems, source="scrape", name=t.name, newest=newest)
        if problems:
            self.rows_refused += len(problems)
            first, r = problems[0], records[problems[0].row]
            log.warning("scrape %s (%s): %d of %d rows refused, %d stored; first: GPU %.80s at %s, "
                        "column %s: %s", t.name, t.url, len(problems), len(records), stored,
                        r.gpu_uuid, r.ts.isoformat(), first.column or "(row)", first.reason)
        return stored


def add_quiet_job(platform, name: str, func, seconds: float) -> None:
    """Like ``Platform.add_job``, but a failure is logged once per outage, without traceback,
    and its message (not the traceback) shows in /healthz."""
    platform.add_part(name, f"every {seconds:g}s")
    state = {"failing": False}

    def run():
        part = platform.parts[name]
        try:
            func()
        except Exception as e:
            part["last_error"] = f"{_now()}: {first_line(e)}"[:500]
            if not state["failing"]:
                state["failing"] = True
                log.warning("%s failing: %s (retried every %gs; logged again when it recovers)",
                            name, first_line(e), seconds)
            return
        part["last_ok"] = _now()
        if state["failing"]:
            state["failing"] = False
            log.info("%s recovered", name)

    platform.scheduler.add_job(run, "interval", seconds=seconds, id=name, next_run_time=datetime.now(timezone.utc))


def register_scrapes(platform, store, targets) -> list[ScrapeJob]:
    jobs = []
    metrics = getattr(platform, "metrics", None)
    for target in targets:
        job = ScrapeJob(store, target, metrics=metrics)
        if metrics is not None:
            metrics.expect("scrape", target.name)
        add_quiet_job(platform, f"scrape:{target.name}", job, target.interval_s)
        jobs.append(job)
    if jobs:
        log.info("scraping %d target(s): %s", len(jobs), ", ".join(t.name for t in targets))
    return jobs


def register_local_sampling(platform, store, collector_config, load_nvml):
    """Sample this machine's GPUs every ``collector.interval_s`` into the store, when NVML
    works here; otherwise one log line and nothing else. Returns the Agent or None."""
    from collector.agent import Agent, open_sampler
    from collector.owner_lookup import build_owner_lookup

    if not collector_config.local_sampling:
        return None
    owners = []                   # built once NVML answers: no owner lines on a machine without GPUs
    sampler, reason = open_sampler(load_nvml, host=collector_config.host or None,
                                   labels=collector_config.labels, owner_of=lambda pid: owners[0](pid))
    if sampler is None:
        log.info("local GPU sampling off: %s", reason)
        return None
    owners.append(build_owner_lookup(collector_config))

    def store_round(round_):
        for batch in batches_from_round(round_, sampler.host):
            insert_batch(store, batch)

    agent = Agent(sampler, collector_config.interval_s, sink=store_round)
    add_quiet_job(platform, "local-gpus", agent.round, collector_config.interval_s)
    log.info("sampling %d local GPU(s) every %gs", sampler.stats.gpus, collector_config.interval_s)
    return agent


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
