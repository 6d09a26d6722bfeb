"""Check gpuledger on a real (test) ClickHouse cluster against the embedded store, on the same data.

    python scripts/check_cluster.py --dsn http://default:pw@node1:8123/gl_check --cluster gpu_fleet \
        [--http-port 8123] [--gpus 16] [--keep]

1. simulates a small fleet (``gpuledger sim``: one day of samples and bills) and loads it into a
   private embedded store, then derives that day there (single node);
2. applies the cluster schema to the test database (``gpuledger init`` with ``store.cluster``),
   copies the embedded store's inputs (samples, bills) into it through the Distributed tables,
   prints the statement plan (what ``gpuledger rollup --dry-run`` prints) and runs the same rollup;
3. compares every derived table of that day, row counts and the sum of each numeric column,
   and exits 1 on any difference. Use a database of its own: ``--keep`` leaves it, else it is
   dropped ON CLUSTER at the end.
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

DERIVED = ["gpu_minute", "gpu_hour", "billing_line_hour", "gpu_cost_hour", "gpu_idle_segments", "team_spend_day",
           "gpu_cost_day", "gpu_util_day", "team_demand_hour", "idle_windows", "gpu_waste_hour", "gpu_waste_day", "showback_focus_day",
           "compliance_findings"]
INPUTS = ["gpu_samples", "billing_line_items"]
NUMERIC = ("Int", "UInt", "Float", "Decimal")


def figures(store, table: str) -> tuple[int, dict[str, float]]:
    types = store.column_types(table)
    cols = [c for c, t in types.items() if t.replace("Nullable(", "").startswith(NUMERIC)]
    sums = ", ".join(f"toFloat64(sum(`{c}`))" for c in cols)
    row = store.rows(f"SELECT count(){', ' + sums if sums else ''} FROM {table}")[0]
    return int(row[0]), {c: float(v or 0) for c, v in zip(cols, row[1:])}


def main(argv: list[str] | None = None) -> int:
    from gpuledger import config as configuration
    from gpuledger.demo import write_simulation
    from ingest.billing.load import ingest_billing
    from ingest.cluster_store import plan_cluster
    from ingest.rollup.run import rollup
    from ingest.samples import ingest_samples
    from ingest.schema import open_store

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", required=True, help="a node of the test cluster, with a database of its own")
    ap.add_argument("--cluster", required=True, help="the cluster's remote_servers name")
    ap.add_argument("--http-port", type=int, default=0, help="HTTP port of the nodes (default: the DSN's)")
    ap.add_argument("--gpus", type=int, default=16)
    ap.add_argument("--keep", action="store_true", help="keep the test database")
    args = ap.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="gpuledger-check-"))
    files = write_simulation(work / "sim", gpus=args.gpus, days=1, interval_s=300, seed=11, progress=lambda m: None)
    cfg = configuration.load(str(files["config"]), env={})
    single = open_store(f"chdb://{work}/store")
    ingest_samples(single, files["samples"], progress=lambda m: None)
    ingest_billing(single, files["billing"], progress=lambda m: None)
    day = single.scalar("SELECT max(toDate(ts)) FROM gpu_samples")
    rollup(single, cfg, since=day, until=day, force=True, progress=lambda m: None)

    cluster = open_store(args.dsn, cfg.store.raw_retention_days, args.cluster, args.http_port)
    failures = []
    try:
        for table in INPUTS:
            frame = single.query_df(f"SELECT * FROM {table}")
            cluster.command(f"TRUNCATE TABLE {table}")
            cluster.insert(table, frame)
        planner = plan_cluster(cluster)
        rollup(planner, cfg, since=day, until=day, force=True, progress=lambda m: None)
        print(planner.node.plan.render())
        rollup(cluster, cfg, since=day, until=day, force=True, progress=lambda m: None)
        for table in INPUTS + DERIVED:
            want, got = figures(single, table), figures(cluster, table)
            bad = [c for c in want[1] if not math.isclose(want[1][c], got[1].get(c, math.nan), rel_tol=1e-9, abs_tol=1e-6)]
            status = "ok" if want[0] == got[0] and not bad else "DIFFERS"
            print(f"-- {table}: {want[0]} rows embedded, {got[0]} on the cluster: {status}"
                  + (f" (sums of {', '.join(bad)})" if bad else ""), file=sys.stderr)
            if status != "ok":
                failures.append(table)
    finally:
        if not args.keep:
            cluster.node.command(f"DROP DATABASE IF EXISTS {cluster.target.database} {cluster.schema.on()} SYNC")
        cluster.close()
        single.close()
    print(f"-- {'FAILED: ' + ', '.join(failures) if failures else 'every table matches'}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
