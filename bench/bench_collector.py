"""Agent overhead per GPU per sampling round, with an instant fake NVML.

A node of L40S GPUs, each with two busy processes, is sampled every 15 s (fake time) through
``collector.fake_nvml`` (whose calls cost only Python); NVML's buffer holds a utilization
sample every 1/6 s, so each round averages 90 samples per kind and per process. Reported:

* sampler: wall time of ``NvmlSampler.sample()`` per GPU per round (goal < 0.2 ms); the
  reference is the same number of bare fake-NVML calls made in a plain loop, so the ratio is
  the sampler's own overhead on top of the NVML calls it has to make;
* exposition: rendering ``/metrics`` (prometheus_client's ``generate_latest``) per GPU, with
  the sampler's time as reference; it is paid per scrape, not per round.

    python3 bench/bench_collector.py [--quick]
"""
from __future__ import annotations

import sys

from prometheus_client import CollectorRegistry, generate_latest

from bench.common import best_of, report, row
from collector import fake_gpu_models as models
from collector.exposition import GpuMetricsCollector
from collector.fake_nvml import MIB, FakeNvml, FakeProcess
from collector.nvml import NvmlSampler


def make_node(gpus: int) -> tuple[FakeNvml, NvmlSampler]:
    fleet = [models.l40s(i, seed="bench", util_gpu=55, util_mem=20,
                         processes=[FakeProcess(10_000 + 2 * i, 20_000 * MIB, "python3", 50, 15),
                                    FakeProcess(10_001 + 2 * i, 2_000 * MIB, "python3", 5, 5)])
             for i in range(gpus)]
    # NVML buffers a utilization sample every 1/6 s on recent GPUs: 90 per kind per round
    fake = FakeNvml(fleet, start_s=1_784_000_000.0, sample_period_s=1 / 6)
    sampler = NvmlSampler(nvml=fake, clock=fake.clock, host="bench-node",
                          labels={"environment": "onprem", "pool": "bench"})
    return fake, sampler


def bare_calls(fake: FakeNvml, calls: int) -> None:
    """``calls`` bare NVML calls: the floor any sampler pays for the same readings."""
    h = fake.nvmlDeviceGetHandleByIndex(0)
    get = fake.nvmlDeviceGetPowerUsage
    for _ in range(calls):
        get(h)


def run(quick: bool = False) -> list[dict]:
    gpus, rounds, repeat = (8, 20, 2) if quick else (64, 50, 3)
    fake, sampler = make_node(gpus)
    fake.advance(15)
    sampler.sample()                      # discovery and first round out of the timing

    def sample_rounds(_):
        for _ in range(rounds):
            fake.advance(15)              # the fake fills its buffers: not agent time
            sampler.sample()

    def timed_rounds(_):
        total = 0.0
        for _ in range(rounds):
            fake.advance(15)
            sampler.sample()
            total += sampler.stats.last_round_seconds
        return total

    before = fake.calls
    sample_rounds(None)
    calls_per_gpu_round = (fake.calls - before) / (rounds * gpus)
    sampler_s = min(timed_rounds(None) for _ in range(repeat)) / (rounds * gpus)
    bare_s = best_of(repeat, lambda _: bare_calls(fake, int(calls_per_gpu_round * gpus * rounds))
                     ) / (rounds * gpus)

    collector = GpuMetricsCollector(stats=sampler.stats)
    registry = CollectorRegistry()
    registry.register(collector)
    collector.update(sampler.sample().samples)
    expose_s = best_of(repeat, lambda _: [generate_latest(registry) for _ in range(rounds)]
                       ) / (rounds * gpus)
    ms = 1000.0
    return [
        row(f"sampler per GPU per round ({gpus} GPUs, {calls_per_gpu_round:.0f} NVML calls)",
            sampler_s * ms, "ms", bare_s * ms, "< 0.2 ms", higher_is_better=False),
        row("/metrics rendering per GPU per scrape", expose_s * ms, "ms", sampler_s * ms,
            "< 0.5 ms", higher_is_better=False),
    ]


if __name__ == "__main__":
    print(report(run(quick="--quick" in sys.argv)))
