"""``gpuledger init | ingest samples | ingest billing | query | rollup``: the store's data."""
from __future__ import annotations

import tempfile
from datetime import date
from pathlib import Path

from base.errors import QueryError, first_line
from gpuledger.cli.common import beside, open_store


def add_commands(sub) -> None:
    p = sub.add_parser("init", help="create or upgrade the store's schema")
    p.set_defaults(func=cmd_init)

    ingest = sub.add_parser("ingest", help="load data files into the store")
    ingest_sub = ingest.add_subparsers(dest="what", required=True, metavar="WHAT")
    p = ingest_sub.add_parser("samples", help="GPU samples from CSV / Parquet / .prom / nvidia-smi files (backfill)")
    p.add_argument("paths", nargs="+", metavar="PATH", help="files, directories or glob patterns")
    p.add_argument("--force", action="store_true", help="load files even if the same content was loaded before")
    p.add_argument("--host", metavar="NAME", help="the host of nvidia-smi files and nvidia_gpu_exporter .prom files (they do not name it themselves)")
    p.set_defaults(func=beside(run_ingest_samples, files=sample_files))

    p = ingest_sub.add_parser("billing", help="cloud bills: FOCUS, AWS CUR, Azure exports, GCP billing export, OCI cost reports; files, dirs, globs, s3://")
    p.add_argument("paths", nargs="+", metavar="PATH", help="files, directories, glob patterns or s3://bucket/prefix")
    p.add_argument("--format", choices=("focus", "aws-cur", "azure", "azure-actual", "azure-amortized", "gcp", "oci"),
                   help="the files' format (default: sniffed from their columns)")
    p.set_defaults(func=beside(run_ingest_billing, files=billing_files))

    p = sub.add_parser("query", help="run SQL against the store and print the result")
    p.add_argument("sql")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table")
    p.add_argument("--write", action="store_true",
                   help="allow statements that change the store's tables (never files, URLs or other servers)")
    p.set_defaults(func=beside(run_query))

    p = sub.add_parser("rollup", help="derive rollups, idle windows, costs, spend and findings (backfill)")
    p.add_argument("--since", type=date.fromisoformat, help="first day (YYYY-MM-DD; default: analytics.lookback_days ago)")
    p.add_argument("--until", type=date.fromisoformat, help="last day (default: today)")
    p.add_argument("--force", action="store_true", help="recompute days even if their inputs did not change")
    p.add_argument("--dry-run", action="store_true",
                   help="print every statement deriving one day (--since, default: the last day with samples) would "
                        "run, in order (on a cluster: where each runs), and write nothing")
    p.set_defaults(func=beside(run_rollup))


def cmd_init(args, cfg) -> int:
    from ingest.migrations import schema_version

    store = open_store(cfg, args.store)
    where = f" (cluster {cfg.store.cluster}, {len(store.shards)} shards)" if cfg.store.cluster else ""
    print(f"store {store.target}{where} is at schema version {schema_version(store)}")
    return 0


def sample_files(args) -> list[tuple[Path, str]]:
    from ingest.samples import expand

    return [(path, str(path)) for path in expand(args.paths)]


def billing_files(args) -> list[tuple[Path, str]]:
    """The local files of ``args.paths``; s3:// URLs are left to the platform to download."""
    from base.errors import InputError
    from ingest.billing.load import SUFFIXES
    from ingest.samples import expand

    local = [p for p in args.paths if not p.startswith("s3://")]
    found = [(path, str(path)) for path in expand(local, SUFFIXES)] if local else []
    if not found and len(local) == len(args.paths):
        raise InputError("no billing files found (expected .csv, .csv.gz, .parquet or .json[l] files)",
                         path=", ".join(map(str, args.paths)))
    return found


def run_ingest_samples(args, cfg, store, con) -> int:
    from ingest.samples import ingest_samples

    uploaded = {str(path): name for path, name in getattr(args, "uploads", [])}
    report = ingest_samples(store, args.paths, progress=con.progress, force=args.force, names=uploaded,
                            host=args.host)
    con.print(f"loaded {report.rows:,} rows from {report.files_loaded} file(s); {report.files_skipped} already loaded, skipped")
    return 0


def run_ingest_billing(args, cfg, store, con) -> int:
    from ingest.billing.load import describe, ingest_billing, load_inputs, locate

    share = cfg.billing.max_quarantined_share
    uploads = getattr(args, "uploads", None)   # [(path here, its name on the CLI's machine)]: gpuledger.remote
    if uploads is None:
        report = ingest_billing(store, args.paths, fmt=args.format, progress=con.progress, max_quarantined_share=share)
    else:                                      # ingest_billing's steps, each file under the name it was sent with
        with tempfile.TemporaryDirectory(prefix="gpuledger-billing-") as tmp:
            s3 = [p for p in args.paths if p.startswith("s3://")]
            located = list(uploads) + (locate(s3, None, Path(tmp), con.progress) if s3 else [])
            inputs = [describe(path, label, args.format) for path, label in located]
            report = load_inputs(store, inputs, con.progress, max_quarantined_share=share)
        con.progress(report.summary())
    con.print(report.summary())
    return 0


def run_query(args, cfg, store, con) -> int:
    from gpuledger.cli.output import render
    from ingest.sqlguard import ADMIN, READER, check_query

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
    finally:
        if runner is not store:
            runner.close()
    con.out(render(list(result.column_names), result.result_rows, args.format))
    return 0


def run_rollup(args, cfg, store, con) -> int:
    from ingest.rollup.run import rollup

    if args.dry_run:
        return plan_rollup(args, cfg, store, con)

    report = rollup(store, cfg, since=args.since, until=args.until, force=args.force, progress=con.progress)
    con.print(f"derived {len(report.days)} day(s), {report.idle_windows} idle windows, "
              f"{report.findings} compliance findings in {report.seconds:.1f} s")
    return 0


def plan_rollup(args, cfg, store, con) -> int:
    """``rollup --dry-run``: the rollup of one day run against a planning store (ingest/plan.py)."""
    from ingest.cluster_store import ClusterStore, plan_cluster
    from ingest.plan import PlanStore
    from ingest.rollup.run import rollup

    day = args.since or args.until
    if day is None:
        last = store.scalar("SELECT max(toDate(ts)) FROM gpu_samples")
        day = last if last and last.year > 1970 else date.today()
    cluster = isinstance(store, ClusterStore)
    planner = plan_cluster(store) if cluster else PlanStore(store)
    report = rollup(planner, cfg, since=day, until=day, force=True, progress=lambda message: None)
    where = f"cluster {store.cluster}, {len(store.shards)} shard(s)" if cluster else "single node"
    con.out(f"-- gpuledger rollup --dry-run: the statements deriving {day} would run ({where}); nothing was written\n")
    if not report.days:
        con.out(f"-- no samples or bills on {day}: only the compliance findings would be derived\n")
    con.out("\n" + (planner.node.plan if cluster else planner.plan).render())
    return 0
