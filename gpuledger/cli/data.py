"""``gpuledger init | ingest samples | ingest billing | query | rollup``: the store's data."""
from __future__ import annotations

import sys
from datetime import date

from base.errors import QueryError, first_line
from gpuledger.cli.common import open_store, progress


def add_commands(sub) -> None:
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
    p.add_argument("--write", action="store_true",
                   help="allow statements that change the store's tables (never files, URLs or other servers)")
    p.set_defaults(func=cmd_query)

    p = sub.add_parser("rollup", help="derive rollups, idle windows, costs, spend and findings (backfill)")
    p.add_argument("--since", type=date.fromisoformat, help="first day (YYYY-MM-DD; default: analytics.lookback_days ago)")
    p.add_argument("--until", type=date.fromisoformat, help="last day (default: today)")
    p.add_argument("--force", action="store_true", help="recompute days even if their inputs did not change")
    p.set_defaults(func=cmd_rollup)


def cmd_init(args, cfg) -> int:
    from ingest.migrations import schema_version

    store = open_store(cfg, args.store)
    print(f"store {store.target} is at schema version {schema_version(store)}")
    return 0


def cmd_ingest_samples(args, cfg) -> int:
    from ingest.samples import ingest_samples

    store = open_store(cfg, args.store)
    report = ingest_samples(store, args.paths, progress=progress, force=args.force)
    print(f"loaded {report.rows:,} rows from {report.files_loaded} file(s); {report.files_skipped} already loaded, skipped")
    return 0


def cmd_ingest_billing(args, cfg) -> int:
    from ingest.billing.load import ingest_billing

    store = open_store(cfg, args.store)
    report = ingest_billing(store, args.paths, fmt=args.format, progress=progress,
                            max_quarantined_share=cfg.billing.max_quarantined_share)
    print(report.summary())
    return 0


def cmd_query(args, cfg) -> int:
    from gpuledger.cli.output import render
    from ingest.sqlguard import ADMIN, READER, check_query

    store = open_store(cfg, args.store)
    canonical = check_query(store, args.sql, ADMIN if args.write else READER)
    runner = store if args.write else store.read_only()
    try:   # a reader runs what was checked; an admin its own text (an INSERT's inline rows are not in the canonical one)
        result = runner.client.query(args.sql if args.write else canonical)
    except Exception as exc:
        text = str(exc)
        if "READONLY" in text or "readonly mode" in text:
            raise QueryError("this statement writes to the store; run it again with --write if that is intended") from None
        if "DB::Exception" in text:
            raise QueryError(first_line(exc)) from None
        raise
    sys.stdout.write(render(list(result.column_names), result.result_rows, args.format))
    return 0


def cmd_rollup(args, cfg) -> int:
    from ingest.rollup.run import rollup

    store = open_store(cfg, args.store)
    report = rollup(store, cfg, since=args.since, until=args.until, force=args.force, progress=progress)
    print(f"derived {len(report.days)} day(s), {report.idle_windows} idle windows, "
          f"{report.findings} compliance findings in {report.seconds:.1f} s")
    return 0
