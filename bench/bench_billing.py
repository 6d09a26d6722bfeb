"""Billing load benchmark: gpuledger's FOCUS loader against ClickHouse reading the same file.

    python3 bench/bench_billing.py            # 1,000,000 rows
    python3 bench/bench_billing.py --quick    # 50,000 rows

A FOCUS CSV is made from the public FOCUS sample (rows repeated over a month of hours and
many resources). Then, in one embedded store and one run:

* reference: ``INSERT INTO <copy of billing_line_items> SELECT … FROM file(…, CSVWithNames)``
  — ClickHouse's own CSV reader with typed columns, no checks, no quarantine, no key;
* gpuledger: ``ingest_billing`` — header check, parse with per-cell checks, quarantine split,
  line-item keys, partition swap.

Reported: rows/s of each, their ratio (goal >= 0.8), and the peak resident memory of the
gpuledger load (goal < 1.5 GB), measured in a child process so nothing else counts.
"""
from __future__ import annotations

import csv
import json
import multiprocessing
import resource
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SAMPLE = ROOT.parent / "shared" / "data" / "focus" / "focus_1.0_sample_first600rows.csv"


def make_focus_csv(path: Path, rows: int) -> None:
    """Write ``rows`` FOCUS rows (sample rows, shifted over September 2024's hours)."""
    with open(SAMPLE, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        sample = list(reader)
    i_start, i_end = header.index("ChargePeriodStart"), header.index("ChargePeriodEnd")
    i_res = header.index("ResourceId")
    base = datetime(2024, 9, 1)
    hours = [((base + timedelta(hours=h)).strftime("%Y-%m-%d %H:%M:%S"),
              (base + timedelta(hours=h + 1)).strftime("%Y-%m-%d %H:%M:%S")) for h in range(720)]
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out, quoting=csv.QUOTE_MINIMAL)
        writer.writerow(header)
        for n in range(rows):
            row = list(sample[n % len(sample)])
            row[i_start], row[i_end] = hours[(n // len(sample)) % 720]
            if row[i_res] != "NULL":
                row[i_res] = f"{row[i_res]}-{n % 5000}"
            writer.writerow(row)


def _reference(dsn: str, path: Path, queue) -> None:
    from collector.billing.focus import COLUMNS
    from ingest.schema import prepare
    from ingest.store import connect

    store = connect(dsn)
    prepare(store)
    with open(path, newline="") as handle:
        header = next(csv.reader(handle))
    types = store.column_types("billing_line_items")
    structure = ", ".join(
        f"`{c}` " + ("String" if c not in COLUMNS or COLUMNS[c] == "json_map" else _nullable(types[c])) for c in header)
    cols = [c for c in header if c in COLUMNS]
    select = ", ".join(f"JSONExtract(ifNull(`{c}`, '{{}}'), 'Map(String, String)')" if COLUMNS[c] == "json_map"
                       else f"`{c}`" for c in cols)
    store.command("CREATE TABLE ref_billing AS billing_line_items")
    started = time.perf_counter()
    store.command(
        f"INSERT INTO ref_billing ({', '.join(f'`{c}`' for c in cols)}) SELECT {select} "
        f"FROM file({{p:String}}, 'CSVWithNames', {{s:String}})",
        parameters={"p": str(path), "s": structure},
        settings={"format_csv_null_representation": "NULL", "date_time_input_format": "best_effort",
                  "input_format_null_as_default": 1})
    seconds = time.perf_counter() - started
    queue.put((int(store.scalar("SELECT count() FROM ref_billing")), seconds, _peak_mb()))


def _nullable(ch_type: str) -> str:
    inner = ch_type.replace("LowCardinality(", "", 1)[:-1] if ch_type.startswith("LowCardinality(") else ch_type
    return inner if inner.startswith("Nullable(") else f"Nullable({inner})"


def _gpuledger(dsn: str, path: Path, queue) -> None:
    from ingest.billing.load import ingest_billing
    from ingest.schema import prepare
    from ingest.store import connect

    store = connect(dsn)
    prepare(store)
    started = time.perf_counter()
    report = ingest_billing(store, [path], progress=lambda _: None)
    seconds = time.perf_counter() - started
    stored = int(store.scalar("SELECT count() FROM billing_line_items"))
    queue.put((stored, seconds, _peak_mb(), report.quarantined_rows))


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _in_child(target, *args):
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=target, args=(*args, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def run(quick: bool) -> list[dict]:
    """Measure once; return rows of (name, value, unit, reference, ratio, goal)."""
    rows = 50_000 if quick else 1_000_000
    with tempfile.TemporaryDirectory(prefix="bench-billing-") as tmp:
        path = Path(tmp) / "focus.csv"
        make_focus_csv(path, rows)
        size_mb = path.stat().st_size / 1e6
        ref_rows, ref_s, _, = _in_child(_reference, f"chdb://{tmp}/ref", path)
        our_rows, our_s, our_peak, quarantined = _in_child(_gpuledger, f"chdb://{tmp}/ours", path)
    assert ref_rows == rows and our_rows == rows and quarantined == 0, (ref_rows, our_rows, quarantined)
    ours, ref = rows / our_s, rows / ref_s
    return [
        {"name": f"FOCUS CSV load ({rows:,} rows, {size_mb:,.0f} MB)", "value": round(ours), "unit": "rows/s",
         "reference": round(ref), "ratio": round(ours / ref, 2), "goal": ">= 0.8 of ClickHouse file() insert"},
        {"name": "peak memory of the gpuledger load", "value": round(our_peak), "unit": "MB",
         "reference": None, "ratio": None, "goal": "< 1500 MB"},
    ]


def main(argv: list[str]) -> None:
    results = run(quick="--quick" in argv)
    print(f"{'benchmark':<48} {'value':>12} {'unit':<7} {'reference':>12} {'ratio':>6}  goal")
    for r in results:
        ref = "" if r["reference"] is None else f"{r['reference']:,}"
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}"
        print(f"{r['name']:<48} {r['value']:>12,} {r['unit']:<7} {ref:>12} {ratio:>6}  {r['goal']}")
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1:])
