"""``gpuledger demo`` and ``gpuledger sim``: a simulated hybrid fleet, loaded through the real paths.

The demo writes the simulator's history as Parquet files and its bills as FOCUS CSV files,
loads them with the same code as ``gpuledger ingest samples`` / ``ingest billing``, takes a few
live rounds through the real NVML collector (against the simulator's fake NVML), derives
everything, prints what it found, and serves the platform until Ctrl-C.
"""
from __future__ import annotations

import dataclasses
import json
import resource
import shutil
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from base.settings import data_home
from base.sqlfiles import sql
from gpuledger import config as configuration

DEMO_DSN = "chdb://~/.local/share/gpuledger/demo"
LIVE_ROUNDS = 5


def write_simulation(out, *, gpus: int, days: int, interval_s: int, seed: int, end: datetime | None = None,
                     progress=print) -> dict:
    """Write samples (Parquet), bills (FOCUS CSV), the fleet, its planted problems and a config."""
    import sim

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    end = end or datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0)
    fleet = sim.build_fleet(gpus=gpus, seed=seed, traces_dir=sim.TRACES_DIR)
    progress(f"simulating about {gpus} GPUs × {days} days at {interval_s} s (seed {seed}) into {out}")
    samples = sim.write_samples(fleet, out / "samples", days=days, interval_s=interval_s, end=end)
    billing = sim.write_billing(fleet, out / "billing", days=days, end=end)
    meta = sim.fleet_metadata(fleet)
    planted = sim.planted_problems(fleet, days=days, interval_s=interval_s, end=end)
    (out / "fleet.json").write_text(json.dumps(meta, indent=1, default=str))
    (out / "planted.json").write_text(json.dumps(planted, indent=1, default=str))
    (out / "gpuledger.toml").write_text(config_text(meta))
    return {"fleet": fleet, "end": end, "samples": samples, "billing": billing, "config": out / "gpuledger.toml",
            "planted": planted}


def config_text(meta: dict) -> str:
    """A gpuledger config for the simulated fleet: teams, budgets, pools, prices, residency."""
    q = json.dumps
    lines = ["# Written by `gpuledger demo` from the simulated fleet (sim/).", ""]
    onprem = meta.get("onprem", {})
    lines += ["[analytics]", f"depreciation_months = {int(onprem.get('depreciation_months', 36))}",
              f"operations_usd_per_gpu_month = {float(onprem.get('ops_usd_per_gpu_month', 120.0))}", ""]
    for team in meta["teams"]:
        lines += ["[[teams]]", f"name = {q(team['name'])}", f"budget_usd_month = {float(team['monthly_budget_usd'])}"]
        if team.get("slack_channel"):
            lines.append(f"# contact = \"...\"   # a channel under [[alerts.channels]], e.g. a Slack webhook "
                         f"posting to {team['slack_channel']}")
        lines.append("")
    for pool in meta["pools"]:
        lines += ["[[pools]]", f"name = {q(pool['name'])}", f"environment = {q(pool['environment'])}"]
        if pool["environment"] == "onprem" and pool.get("capital_usd_per_gpu"):
            lines.append(f"capital_usd_per_gpu = {float(pool['capital_usd_per_gpu'])}")
        lines += [f"baseline_driver = {q(pool.get('baseline_driver', ''))}", f"baseline_cuda = {q(pool.get('baseline_cuda', ''))}", ""]
    for instance_type, price in sorted(meta.get("list_prices", {}).items()):
        lines += ["[[list_prices]]", f"instance_type = {q(instance_type)}", f"gpus = {int(price['gpus'])}",
                  f"usd_per_hour = {float(price['usd_per_hour'])}", ""]
    for team in meta["teams"]:
        if team.get("residency"):
            allowed = [f"{a['environment']}:{region}" if region != "*" else a["environment"]
                       for a in team["residency"]["allowed"] for region in a.get("regions", ["*"])]
            lines += ["[[policies.residency]]", f"team = {q(team['name'])}", f"allowed = {q(allowed)}", ""]
    lines += ["[policies]", f"untagged_tag_keys = {q(meta.get('tag_keys', ['team']))}", ""]
    return "\n".join(lines)


def reset_store_dir(path: Path) -> None:
    """Start the demo from an empty store (refused while another process holds it)."""
    from ingest.store import ensure_free

    ensure_free(path)
    shutil.rmtree(path, ignore_errors=True)


def live_rounds(store, fleet, end: datetime, interval_s: int, progress) -> int:
    """Sample one simulated on-prem host through the real NVML collector for a few rounds."""
    import sim
    from collector.nvml import NvmlSampler
    from collector.records import GPU_SAMPLE_COLUMNS
    from ingest.writer import Writer

    meta = sim.fleet_metadata(fleet)
    pools = {p["name"]: p for p in meta["pools"]}
    name, pool = next((h, pools[p]) for h, p in meta["hosts"].items() if pools[p]["environment"] == "onprem")
    clock_now = [end.timestamp()]
    nvml = sim.live_nvml(fleet, name, clock=lambda: clock_now[0], end=end + timedelta(days=1), interval_s=interval_s)
    labels = {"environment": pool["environment"], "region": pool["region"], "cluster": pool["cluster"], "pool": pool["name"]}
    written = 0
    with NvmlSampler(nvml=nvml, clock=lambda: clock_now[0], host=name, labels=labels) as sampler, \
            Writer(store, "gpu_samples", GPU_SAMPLE_COLUMNS) as writer:
        for _ in range(LIVE_ROUNDS):
            clock_now[0] += interval_s
            round_ = sampler.sample()
            writer.add_many(round_.samples)
            written += len(round_.samples)
    progress(f"live: {LIVE_ROUNDS} rounds from {name} through the NVML collector, {written} samples")
    return written


def run_demo(dsn: str, *, gpus: int, days: int, interval_s: int, seed: int, keep: bool = False, serve: bool = True,
             port: int | None = None, auth: bool = True, progress=print) -> int:
    """Simulate, load, derive and (with ``serve``) run the platform on the store at ``dsn``,
    configured for the simulated fleet."""
    from ingest.billing.load import ingest_billing
    from ingest.rollup.run import rollup
    from ingest.samples import ingest_samples
    from ingest.schema import open_store
    from ingest.store import parse_dsn

    started = time.perf_counter()
    target = parse_dsn(dsn)
    if target.embedded and not keep:
        reset_store_dir(target.path)
    work = target.path.parent / f"{target.path.name}-input" if target.embedded else data_home() / "demo-input"
    shutil.rmtree(work, ignore_errors=True)
    sim_files = write_simulation(work, gpus=gpus, days=days, interval_s=interval_s, seed=seed, progress=progress)
    demo_cfg = configuration.load(str(sim_files["config"]), env={})
    demo_cfg.store.dsn = dsn
    store = open_store(dsn, demo_cfg.store.raw_retention_days)
    loaded = ingest_samples(store, sim_files["samples"], progress=progress)
    bills = ingest_billing(store, sim_files["billing"], progress=progress)
    live_rounds(store, sim_files["fleet"], sim_files["end"], interval_s, progress)
    queued = load_queues(store, sim_files["fleet"], days, sim_files["end"], demo_cfg.queues)
    report = rollup(store, demo_cfg, since=(sim_files["end"] - timedelta(days=days + 1)).date(),
                    until=(sim_files["end"] + timedelta(days=1)).date(), progress=progress)
    elapsed = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(summary(store, loaded.rows, bills, report, elapsed, peak_mb, work, queued), flush=True)   # before serving, even into a pipe
    if not serve:
        return 0
    from gpuledger.platform import build_platform

    if target.embedded and demo_cfg.sql.enabled and not demo_cfg.sql.users:
        print(sql_reader(demo_cfg, target.path.parent / f"{target.path.name}-sql-finance.password"), flush=True)
    platform = build_platform(demo_cfg, store, auth=auth)
    platform.serve(demo_cfg.server.host, port or demo_cfg.server.port)
    return 0


def load_queues(store, fleet, days: int, end: datetime, config) -> int:
    """The simulated Slurm and Kubernetes queues of the on-prem pools (sim/queues.py), stored as
    the platform's queue readers store them, in one insert; returns the pending-job rows."""
    from ingest.queues import read_rows, store_rows
    from sim.queues import queue_reads

    every_s = int(config.interval_s) * 10             # a read every 10 minutes is plenty for 30 days
    reading = dataclasses.replace(config, interval_s=every_s)
    rows = [row for scheduler, cluster, ts, jobs in queue_reads(fleet, days, end, every_s)
            for row in read_rows(jobs, scheduler, cluster, reading, ts.timestamp())]
    store_rows(store, rows, f"demo-queues:{int(end.timestamp())}")
    return sum(1 for row in rows if row[8])


def sql_reader(cfg, password_file: Path) -> str:
    """Give the demo's SQL port a reader, ``finance``, whose password is a random one kept in
    ``password_file`` (readable by this user only); return how to query with it."""
    import os
    import secrets
    import socket

    from base.settings import Secret
    from ingest.sql_config import SqlUser

    with socket.socket() as probe:
        try:
            probe.bind((cfg.server.host, cfg.sql.port))
        except OSError:
            return (f"  SQL port {cfg.sql.port} is in use: this demo serves no SQL "
                    "(stop what holds it to query the demo with SQL)\n")
    if not password_file.exists():
        fd = os.open(password_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(16))
    os.chmod(password_file, 0o600)
    cfg.sql.users = [SqlUser("finance", password=Secret(password_file.read_text().strip(), f"file {password_file}"))]
    host = cfg.server.host
    return (f"  SQL (ClickHouse HTTP) http://{host}:{cfg.sql.port}, user finance, password in {password_file}:\n"
            f"    curl -u \"finance:$(cat {password_file})\" http://{host}:{cfg.sql.port}/ "
            "--data-binary 'SELECT team, round(sum(cost_usd)) FROM v_team_spend GROUP BY team'\n")


def gpu_counts(store) -> tuple[dict, object, object, list[str]]:
    """The fleet's GPU counts over every day it has data, from the query the Overview's GPUs tile
    runs (sql/queries/gpu_counts.sql): ({gpus, gpu_entities, mig_instances, mig_gpus}, first day,
    last day, environments). The Overview with ``?from=<first>&to=<last>`` shows the same numbers."""
    first, last, envs = store.rows("SELECT min(day), max(day), groupUniqArray(environment) FROM gpu_cost_day")[0]
    if not envs:                                       # nothing derived yet
        return {"gpus": 0, "gpu_entities": 0, "mig_instances": 0, "mig_gpus": 0}, "–", "–", []
    from dashboard.queries import query_sql

    df = store.query_df(query_sql("gpu_counts"), {"start_day": first, "end_day": last + timedelta(days=1),
                                                    "envs": [], "teams": []})
    return {k: int(v) for k, v in df.iloc[0].items()}, first, last, list(envs)


def summary(store, sample_rows: int, bills, report, elapsed: float, peak_mb: float, work: Path, queued: int = 0) -> str:
    def one(query):
        return store.rows(query)[0]

    counts, first, last, envs = gpu_counts(store)
    spend, coverage = one(sql("demo/spend_coverage"))
    idle_n, idle_usd = one("SELECT count(), round(sum(cost_usd)) FROM idle_windows")
    waste, idle, unused, efficiency = one(sql("demo/waste"))
    findings = store.rows("SELECT policy, count() FROM compliance_findings GROUP BY policy ORDER BY policy")
    over = store.rows("SELECT team FROM v_team_budget WHERE over_budget OR forecast_over_budget ORDER BY team")
    jobs, wait_p95 = one(sql("demo/queue_waits"))
    return "\n".join([
        "",
        f"gpuledger demo: {counts['gpus']} GPUs ({counts['gpu_entities']} GPU entities incl. "
        f"{counts['mig_instances']} MIG instances) in {', '.join(sorted(envs))}, {first} to {last}",
        f"  (the Overview's GPUs tile for from={first}&to={last}; GPU: a physical GPU; GPU entity: a whole GPU "
        "or a MIG instance)",
        f"  samples loaded        {sample_rows:,} rows; billing lines {getattr(bills, 'rows', 0):,}",
        f"  derived               {len(report.days)} days in {report.seconds:.1f} s",
        f"  spend                 ${spend:,.0f}, {coverage}% attributed to teams",
        f"  waste                 ${waste:,.0f} (idle ${idle:,.0f}, unused ${unused:,.0f}); efficiency {efficiency}%",
        f"  idle windows          {idle_n} costing ${idle_usd:,.0f}",
        f"  compliance findings   {', '.join(f'{p}: {n}' for p, n in findings) or 'none'}",
        f"  over budget           {', '.join(t for (t,) in over) or 'none'}",
        f"  queues                {queued:,} pending-job readings of {jobs:,} jobs; p95 wait {wait_p95:.1f} h (Placement)",
        f"  took {elapsed:.1f} s, peak memory {peak_mb:,.0f} MB; simulated files in {work}",
        "",
    ])
