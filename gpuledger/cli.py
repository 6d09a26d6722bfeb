"""The ``gpuledger`` command: the composition root of every process.

Each command reads the configuration once, builds the few real objects it needs (store,
platform, simulator) and calls one library function. GpuledgerError becomes one clean line
on stderr and exit status 2; anything else is a bug and keeps its traceback.
"""
from __future__ import annotations

import argparse
import logging
import sys
from datetime import date

from gpuledger import config as configuration
from gpuledger.errors import GpuledgerError, QueryError

log = logging.getLogger("gpuledger")


def open_store(cfg, dsn: str | None = None):
    """Connect to the configured store and bring its schema up to date."""
    from ingest.schema import prepare
    from ingest.store import connect

    store = connect(dsn or cfg.store_dsn())
    applied = prepare(store, cfg.store.raw_retention_days)
    if applied:
        log.info("applied migrations: %s", ", ".join(applied))
    return store


def cmd_init(args, cfg) -> int:
    from ingest.migrations import schema_version

    store = open_store(cfg, args.store)
    print(f"store {store.target} is at schema version {schema_version(store)}")
    return 0


def cmd_ingest_samples(args, cfg) -> int:
    from ingest.samples import ingest_samples

    store = open_store(cfg, args.store)
    report = ingest_samples(store, args.paths, progress=_progress, force=args.force)
    print(f"loaded {report.rows:,} rows from {report.files_loaded} file(s); {report.files_skipped} already loaded, skipped")
    return 0


def cmd_ingest_billing(args, cfg) -> int:
    from ingest.billing import ingest_billing

    store = open_store(cfg, args.store)
    report = ingest_billing(store, args.paths, fmt=args.format, progress=_progress)
    print(report.summary())
    return 0


def cmd_query(args, cfg) -> int:
    from gpuledger.output import render

    store = open_store(cfg, args.store)
    runner = store if args.write else store.read_only()
    try:
        result = runner.client.query(args.sql)
    except Exception as exc:
        text = str(exc)
        if "READONLY" in text or "readonly mode" in text:
            raise QueryError("this statement writes to the store; run it again with --write if that is intended") from None
        if "DB::Exception" in text:
            raise QueryError(text.split("(version")[0].strip().splitlines()[0]) from None
        raise
    sys.stdout.write(render(list(result.column_names), result.result_rows, args.format))
    return 0


def cmd_rollup(args, cfg) -> int:
    from ingest.analytics.derive import derive

    store = open_store(cfg, args.store)
    report = derive(store, cfg, since=args.since, until=args.until, force=args.force, progress=_progress)
    print(f"derived {len(report.days)} day(s), {report.idle_windows} idle windows, "
          f"{report.findings} compliance findings in {report.seconds:.1f} s")
    return 0


def cmd_up(args, cfg) -> int:
    from gpuledger.platform import build_platform

    store = open_store(cfg, args.store)
    platform = build_platform(cfg, store, auth=not args.no_auth)
    platform.serve(args.host or cfg.server.host, args.port or cfg.server.port)
    return 0


def cmd_sim(args, cfg) -> int:
    from gpuledger.demo import write_simulation

    written = write_simulation(args.out, gpus=args.gpus, days=args.days, interval_s=args.interval, seed=args.seed,
                               progress=_progress)
    print(f"wrote {len(written)} files under {args.out}")
    return 0


def cmd_demo(args, cfg) -> int:
    from gpuledger.demo import run_demo

    return run_demo(args, cfg, progress=_progress)


def _progress(message: str) -> None:
    """Progress lines on stderr; "[i/n] ..." lines get a bar."""
    if message.startswith("[") and "/" in message.split("]")[0]:
        done, total = (int(x) for x in message[1:].split("]")[0].split("/"))
        width = 24
        filled = width * done // max(total, 1)
        message = f"[{'#' * filled}{'.' * (width - filled)}] {100 * done // max(total, 1):3d}% {message}"
    print(message, file=sys.stderr, flush=True)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="gpuledger", description="GPU fleet observability and cost governance on ClickHouse.")
    top.add_argument("--config", help="config file (default: $GPULEDGER_CONFIG or ./gpuledger.toml)")
    top.add_argument("--store", help="store DSN, overriding the config (chdb:///dir or http://user:pass@host:8123/db)")
    top.add_argument("-v", "--verbose", action="store_true", help="log debug detail")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    from gpuledger.cli_collect import add_commands as add_collect_commands

    add_collect_commands(sub)

    p = sub.add_parser("init", help="create or upgrade the store's schema")
    p.set_defaults(func=cmd_init)

    ingest = sub.add_parser("ingest", help="load data files into the store")
    ingest_sub = ingest.add_subparsers(dest="what", required=True, metavar="WHAT")
    p = ingest_sub.add_parser("samples", help="GPU samples from CSV / Parquet files (backfill)")
    p.add_argument("paths", nargs="+", metavar="PATH", help="files, directories or glob patterns")
    p.add_argument("--force", action="store_true", help="load files even if the same content was loaded before")
    p.set_defaults(func=cmd_ingest_samples)

    p = ingest_sub.add_parser("billing", help="cloud bills: FOCUS, AWS CUR, Azure exports, GCP billing export; files, dirs, globs, s3://")
    p.add_argument("paths", nargs="+", metavar="PATH", help="files, directories, glob patterns or s3://bucket/prefix")
    p.add_argument("--format", choices=("focus", "aws-cur", "azure", "azure-actual", "azure-amortized", "gcp"),
                   help="the files' format (default: sniffed from their columns)")
    p.set_defaults(func=cmd_ingest_billing)

    p = sub.add_parser("query", help="run SQL against the store and print the result")
    p.add_argument("sql")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table")
    p.add_argument("--write", action="store_true", help="allow statements that change the store")
    p.set_defaults(func=cmd_query)

    p = sub.add_parser("rollup", help="derive rollups, idle windows, costs, spend and findings (backfill)")
    p.add_argument("--since", type=date.fromisoformat, help="first day (YYYY-MM-DD; default: analytics.lookback_days ago)")
    p.add_argument("--until", type=date.fromisoformat, help="last day (default: today)")
    p.add_argument("--force", action="store_true", help="recompute days even if their inputs did not change")
    p.set_defaults(func=cmd_rollup)

    p = sub.add_parser("up", help="run the platform: ingest endpoints, scheduler, alerts, dashboard")
    p.add_argument("--host", help="listen address (default: server.host)")
    p.add_argument("--port", type=int, help="listen port (default: server.port, 8050)")
    p.add_argument("--no-auth", action="store_true", help="serve the dashboard without authentication (local demo only)")
    p.set_defaults(func=cmd_up)

    from alerts.commands import add_commands as add_alerts_commands

    add_alerts_commands(sub, open_store)
    from gpuledger.cli_ops import add_commands as add_ops_commands

    add_ops_commands(sub, open_store)

    p = sub.add_parser("sim", help="write a simulated fleet's samples and billing files")
    _sim_args(p)
    p.add_argument("--out", required=True, help="directory to write into")
    p.set_defaults(func=cmd_sim)

    p = sub.add_parser("demo", help="simulate a hybrid fleet, load it, derive everything and serve it")
    _sim_args(p)
    p.add_argument("--no-serve", action="store_true", help="stop after loading instead of serving")
    p.add_argument("--port", type=int, help="dashboard port (default 8050)")
    p.add_argument("--keep", action="store_true", help="keep the demo store's earlier data instead of starting fresh")
    p.add_argument("--no-auth", action="store_true", help="serve the dashboard without authentication (local demo only)")
    p.set_defaults(func=cmd_demo)
    return top


def _sim_args(p) -> None:
    p.add_argument("--gpus", type=int, default=64, help="GPUs in the fleet (default 64)")
    p.add_argument("--days", type=int, default=30, help="days of history (default 30)")
    p.add_argument("--interval", type=int, default=60, help="seconds between samples (default 60)")
    p.add_argument("--seed", type=int, default=7, help="random seed (default 7)")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("clickhouse_connect", "apscheduler", "werkzeug"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        cfg = configuration.load(args.config)
        return args.func(args, cfg)
    except GpuledgerError as exc:
        print(f"gpuledger: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
