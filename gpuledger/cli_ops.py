"""Operator commands: ``gpuledger schema`` (the DDL, single node or cluster) and ``gpuledger bench``.

Wired into the CLI by ``add_commands(subparsers, open_store)``. Neither opens a store:
``schema`` only reads ``sql/``, and every benchmark makes its own private embedded store.
"""
from __future__ import annotations

import importlib
import pkgutil
import sys
import time
import traceback

from gpuledger.errors import GpuledgerError


def add_commands(subparsers, open_store=None) -> None:
    p = subparsers.add_parser("schema", help="print the store's DDL: single node, or the cluster variant (--cluster)")
    p.add_argument("--cluster", metavar="NAME",
                   help="generate for this cluster (remote_servers name): ON CLUSTER, Replicated*MergeTree, Distributed")
    p.add_argument("--database", default="gpuledger", help="database name (default gpuledger)")
    p.set_defaults(func=cmd_schema)

    p = subparsers.add_parser("bench", help="run every benchmark and print one table of figures, references and ratios")
    p.add_argument("--quick", action="store_true", help="small sizes (seconds, for tests and CI)")
    p.add_argument("--only", action="append", metavar="NAME",
                   help="run only this benchmark (e.g. writer, derive, sizing); repeatable")
    p.set_defaults(func=cmd_bench)


def cmd_schema(args, cfg) -> int:
    from ingest.cluster import ClusterSchemaError, cluster_schema, render, single_node_schema

    try:
        if args.cluster:
            schema, sections = cluster_schema(args.cluster, args.database)
            header = (f"gpuledger schema for cluster {args.cluster}, database {args.database}: "
                      f"{len(schema.tables)} sharded tables (t_local + Distributed t), {len(schema.views)} views.\n"
                      "Apply with: clickhouse-client --multiquery < this file  (see docs/deploy.md)")
        else:
            sections = single_node_schema(args.database)
            header = f"gpuledger schema, single node, database {args.database} (what `gpuledger init` applies)"
    except ClusterSchemaError as exc:
        raise SchemaError(str(exc)) from None
    sys.stdout.write(render(sections, header))
    return 0


class SchemaError(GpuledgerError):
    pass


def bench_modules() -> list[str]:
    """Short names of every ``bench/bench_*.py`` module (``writer`` for ``bench.bench_writer``)."""
    import bench

    return sorted(m.name[len("bench_"):] for m in pkgutil.iter_modules(bench.__path__) if m.name.startswith("bench_"))


def run_benchmarks(names: list[str], quick: bool, progress=print) -> tuple[list[dict], list[str]]:
    """Run the named benchmarks in this process; return (rows, failures). A failing one does not stop the rest."""
    rows, failures = [], []
    for name in names:
        started = time.perf_counter()
        progress(f"bench {name}{' (quick)' if quick else ''} ...")
        try:
            module = importlib.import_module(f"bench.bench_{name}")
            found = module.run(quick=quick)
        except Exception as exc:  # one broken benchmark must not hide the others' figures
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
            progress(traceback.format_exc())
            continue
        for row in found:
            rows.append({**row, "bench": name})
        progress(f"bench {name}: {len(found)} figure(s) in {time.perf_counter() - started:.1f} s")
    return rows, failures


def table(rows: list[dict]) -> str:
    """One table of every figure: benchmark, figure, value, unit, reference, ratio, goal."""
    def num(v, digits=3):
        return "-" if v is None else f"{v:,.{digits}f}"

    cells = [[r["bench"], r["name"], num(r["value"]), r["unit"], num(r["reference"]), num(r["ratio"], 2), r["goal"]]
             for r in rows]
    head = ["bench", "figure", "value", "unit", "reference", "ratio", "goal"]
    widths = [max([len(head[i])] + [len(c[i]) for c in cells]) for i in range(len(head))]
    right = {2, 4, 5}

    def line(values):
        return "  ".join(v.rjust(w) if i in right else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths))).rstrip()

    return "\n".join([line(head), "  ".join("-" * w for w in widths)] + [line(c) for c in cells])


def cmd_bench(args, cfg) -> int:
    known = bench_modules()
    names = args.only or known
    unknown = [n for n in names if n not in known]
    if unknown:
        raise GpuledgerError(f"no benchmark named {', '.join(unknown)}; known: {', '.join(known)}")
    started = time.perf_counter()
    rows, failures = run_benchmarks(names, args.quick, progress=lambda m: print(m, file=sys.stderr, flush=True))
    print(table(rows))
    print(f"\n{len(rows)} figures from {len(names) - len(failures)} of {len(names)} benchmarks "
          f"in {time.perf_counter() - started:.0f} s{' (quick sizes)' if args.quick else ''}")
    for failure in failures:
        print(f"FAILED {failure}", file=sys.stderr)
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    """``python -m gpuledger.cli_ops schema|bench ...``: these commands without the rest of the CLI."""
    import argparse
    import logging

    from gpuledger import config as configuration

    top = argparse.ArgumentParser(prog="gpuledger")
    top.add_argument("--config")
    add_commands(top.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    args = top.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args, configuration.load(args.config))
    except GpuledgerError as exc:
        print(f"gpuledger: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
