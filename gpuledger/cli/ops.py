"""``gpuledger schema`` (the DDL, single node or cluster) and ``gpuledger bench``.

Neither opens a store: ``schema`` only reads ``sql/``, and ``bench`` runs the checkout's
benchmarks (``python -m bench``, each with its own private embedded store).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from base.errors import GpuledgerError


def add_commands(subparsers) -> None:
    p = subparsers.add_parser("schema", help="print the store's DDL: single node, or the cluster variant (--cluster)")
    p.add_argument("--cluster", metavar="NAME", default=argparse.SUPPRESS,
                   help="generate for this cluster (remote_servers name): ON CLUSTER, Replicated*MergeTree, Distributed "
                        "(default: store.cluster, if set)")
    p.add_argument("--database", default="gpuledger", help="database name (default gpuledger)")
    p.set_defaults(func=cmd_schema)

    p = subparsers.add_parser("bench", help="run every benchmark and print one table of figures, references and ratios")
    p.add_argument("--quick", action="store_true", help="small sizes (seconds, for tests and CI)")
    p.add_argument("--only", action="append", metavar="NAME",
                   help="run only this benchmark (e.g. writer, derive, sizing); repeatable")
    p.set_defaults(func=cmd_bench)


def cmd_schema(args, cfg) -> int:
    from ingest.cluster import cluster_schema, render, single_node_schema

    cluster = cfg.store.cluster          # schema --cluster NAME (or the global --cluster) overrides it
    if cluster:
        schema, sections = cluster_schema(cluster, args.database)
        header = (f"gpuledger schema for cluster {cluster}, database {args.database}: "
                  f"{len(schema.tables)} sharded tables (t_local + Distributed t), {len(schema.views)} views.\n"
                  "Apply with: clickhouse-client --multiquery < this file  (see docs/deploy.md)")
    else:
        sections = single_node_schema(args.database)
        header = f"gpuledger schema, single node, database {args.database} (what `gpuledger init` applies)"
    sys.stdout.write(render(sections, header))
    return 0


def cmd_bench(args, cfg) -> int:
    """Run ``python -m bench`` in the checkout this gpuledger runs from (benchmarks are not installed)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "bench" / "__main__.py").is_file():
        raise GpuledgerError(f"gpuledger bench runs the benchmarks of a source checkout, and {root} is not one "
                             "(bench/ is not installed): run it from a checkout with `pip install -e .`")
    argv = [sys.executable, "-m", "bench"] + (["--quick"] if args.quick else [])
    for name in args.only or []:
        argv += ["--only", name]
    return subprocess.run(argv, cwd=root).returncode
