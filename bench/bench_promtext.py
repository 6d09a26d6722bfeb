"""Prometheus text parsing rate: ours vs prometheus_client, on 1,000 GPUs of dcgm output.

The exposition is built from the real dcgm-exporter scrape in
``/work/shared/data/dcgm/k8s_pod_labels_2x_t4.prom`` (all its metric families, HELP/TYPE
included), repeated for 500 two-GPU nodes with distinct hosts and UUIDs. Figures are ratios
against prometheus_client's ``text_string_to_metric_families`` measured in the same run.

    python3 bench/bench_promtext.py [--quick]
"""
from __future__ import annotations

import re
import sys
from datetime import datetime, timezone
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from bench.common import best_of, report, row
from collector.dcgm import records_from_text
from collector.promtext import parse

TEMPLATE = Path(__file__).resolve().parents[2] / "shared" / "data" / "dcgm" / \
    "k8s_pod_labels_2x_t4.prom"
_UUID = re.compile(r"GPU-([0-9a-f]{8})")


def build_exposition(nodes: int, template: str | None = None) -> str:
    """``nodes`` copies of a 2-GPU dcgm scrape, grouped by metric family like one big scrape."""
    text = template if template is not None else TEMPLATE.read_text()
    out = []
    for block in text.split("# HELP ")[1:]:
        lines = block.rstrip("\n").split("\n")
        out.append("# HELP " + lines[0])
        out.extend(line for line in lines[1:] if line.startswith("# TYPE"))
        samples = [line for line in lines[1:] if line and not line.startswith("#")]
        for n in range(nodes):
            host = f'Hostname="gpu-node-{n:04d}"'
            for line in samples:
                line = re.sub(r'Hostname="[^"]*"', host, line)
                out.append(_UUID.sub(lambda m, n=n: f"GPU-{n:04x}{m.group(1)[4:]}", line))
    return "\n".join(out) + "\n"


def run(quick: bool = False) -> list[dict]:
    nodes, repeat = (50, 1) if quick else (500, 3)
    text = build_exposition(nodes)
    n = len(parse(text).samples)
    reference = best_of(repeat, lambda _: [s for f in text_string_to_metric_families(text)
                                           for s in f.samples])
    ours = best_of(repeat, lambda _: parse(text))
    mapped = best_of(repeat, lambda _: records_from_text(text, datetime.now(timezone.utc)))
    return [
        row(f"promtext parse, {nodes * 2} GPUs of dcgm text ({n} samples)", n / ours,
            "samples/s", n / reference, ">= 1x prometheus_client"),
        row("promtext parse + map to GpuSample records", n / mapped, "samples/s",
            n / reference, ">= 1x prometheus_client parse alone"),
    ]


if __name__ == "__main__":
    print(report(run(quick="--quick" in sys.argv)))
