"""``python -m bench [--quick] [--only NAME]...`` (also ``gpuledger bench``): run every benchmark
(``bench/bench_*.py``) in this one process and print one table of figures, each next to the
reference measured in the same run."""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import time
import traceback

import bench


def bench_modules() -> list[str]:
    """Short names of every ``bench/bench_*.py`` module (``writer`` for ``bench.bench_writer``)."""
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


def main(argv: list[str] | None = None) -> int:
    top = argparse.ArgumentParser(prog="python -m bench", description="run the benchmarks and print one table")
    top.add_argument("--quick", action="store_true", help="small sizes (seconds, for tests and CI)")
    top.add_argument("--only", action="append", metavar="NAME", help="run only this benchmark (e.g. writer); repeatable")
    args = top.parse_args(argv)
    known = bench_modules()
    names = args.only or known
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"python -m bench: error: no benchmark named {', '.join(unknown)}; known: {', '.join(known)}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    rows, failures = run_benchmarks(names, args.quick, progress=lambda m: print(m, file=sys.stderr, flush=True))
    print(table(rows))
    print(f"\n{len(rows)} figures from {len(names) - len(failures)} of {len(names)} benchmarks "
          f"in {time.perf_counter() - started:.0f} s{' (quick sizes)' if args.quick else ''}")
    for failure in failures:
        print(f"FAILED {failure}", file=sys.stderr)
    return 1 if failures else 0




if __name__ == "__main__":
    sys.exit(main())
