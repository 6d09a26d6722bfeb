"""A deterministic simulator of a hybrid (on-prem + AWS/GCP/Azure) NVIDIA GPU fleet.

Same seed and arguments give byte-identical samples, billing and manifest. Nothing happens at
import time; the trace files are read only when ``build_fleet(traces_dir=...)`` names them.

API
---
``build_fleet(gpus=64, seed=7, traces_dir=None) -> Fleet``
    The inventory: about ``gpus`` physical GPUs, half on-prem (pools ``dgx-h100`` on k8s,
    ``a100-mig`` on k8s with every GPU split 3g.40gb + 2g.20gb + 2x 1g.10gb, ``a100-slurm``;
    sites ``ams1`` and ``bos1``, environment ``onprem``), half cloud instances over AWS, GCP and
    Azure in several regions (ids as the providers write them: ``i-0…``,
    ``projects/<p>/zones/<z>/instances/<name>``, ``/subscriptions/…/virtualMachines/<name>``),
    six teams with budgets, and where the planted problems live. ``traces_dir`` points at the
    Helios/Philly traces (``sim.TRACES_DIR``, shipped in ``sim/data``); without it an embedded hour-of-day
    shape of the same traces is used (see ``sim.traces``).
``sample_frames(fleet, days=30, interval_s=60, end=None) -> Iterator[pandas.DataFrame]``
    ``gpu_samples`` history over ``[end - days, end)``, one frame per UTC calendar day (first
    and last partial when ``end`` is not midnight), columns exactly
    ``collector.records.GPU_SAMPLE_COLUMNS``, ``source='sim'``. ``end`` defaults to the current
    hour and is floored to the hour; ``interval_s`` must divide 3600.
``write_samples(fleet, out_dir, days=30, interval_s=60, end=None) -> list[Path]``
    ``gpu_samples_YYYY-MM-DD.parquet`` per day, zstd.
``write_billing(fleet, out_dir, days=30, end=None) -> list[Path]``
    ``focus_aws.csv``, ``focus_gcp.csv``, ``focus_azure.csv`` in FOCUS 1.0 (see
    ``sim.billing``); one compute line per instance per running hour.
``fleet_metadata(fleet) -> dict``
    JSON-able teams, pools, host -> pool, instances, list prices, on-prem cost inputs.
``planted_problems(fleet, days=30, interval_s=60, end=None) -> list[dict]``
    The manifest: ``idle_allocated``, ``idle_unallocated``, ``idle_cloud_unused`` (one entry per
    GPU entity), ``residency_violation``, ``untagged_instance``, ``driver_drift``,
    ``gpu_health``, ``budget_overrun``, each with the facts a test needs.
``natural_idle_windows(fleet, days=30, interval_s=60, end=None) -> list[dict]``
    The idle windows of the natural waste patterns (one entry per GPU entity):
    ``notebook_overnight`` (a Jupyter server on a 1g.10gb MIG slice idle between working days,
    allocated to its owner) and ``left_running`` (a cloud instance up, unheld, for hours after
    its job; billed), cut to the window and on the sample grid; never on a planted entity.
``live_nvml(fleet, host, clock, days=30, end=None) -> LiveNvml``
    A ``collector.fake_nvml.FakeNvml`` for one host whose values follow the fleet state at
    ``clock()``.

The fleet wastes as a real one does (``sim.workloads`` has the table): notebooks idle
overnight, inference services through their night troughs, half-used training jobs and cloud
instances left running after their job. Over the default history (64 GPUs, 30 days) that is
25-40 % of GPU spend (idle + unused, DESIGN.md "Waste"), most of it unused capacity of held
GPUs; the planted problems stay apart from it.

Guarantees the analytics tests rely on: outside the planted idle windows and the natural ones
(``natural_idle_windows``) no GPU entity, held or not, stays below 5 % GPU and
memory-controller utilization for 15 minutes or more (jobs run at >= 10 %, scheduling gaps last
at most 8 minutes, stopped cloud instances send no samples); no natural window is on an entity
of a planted idle window; exactly one drift host, one residency violation, one untagged
instance, one GPU-health problem and one team over budget.
"""
from __future__ import annotations

from .billing import write_billing
from .fleet import Fleet
from .frames import sample_frames, write_samples
from .inventory import build_fleet
from .live import LiveNvml, live_nvml
from .manifest import natural_idle_windows, planted_problems
from .metadata import fleet_metadata
from .traces import TRACES_DIR

__all__ = ["TRACES_DIR", "Fleet", "LiveNvml", "build_fleet", "fleet_metadata", "live_nvml",
           "natural_idle_windows", "planted_problems", "sample_frames", "write_billing",
           "write_samples"]
