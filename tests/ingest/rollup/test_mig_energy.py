"""A MIG GPU scraped from dcgm-exporter (a real capture): dcgm-exporter repeats the whole GPU's
power on every MIG instance's series and has no whole-GPU series, so the energy charged for the
GPU must be the GPU's measured energy once, not once per instance."""
from __future__ import annotations

import os
import re
from datetime import date, datetime, timezone

import pytest

from ingest.rollup.run import rollup
from ingest.samples import ingest_samples

T0 = 1_772_445_600          # 2026-03-02 10:00:00 UTC
SCRAPES = 61                 # one a minute for an hour


def test_mig_energy_is_counted_once_and_split_by_slices(store, cfg, shared_data, tmp_path):
    capture = (shared_data / "dcgm" / "mig_a100_4_instances.prom").read_text()
    for n in range(SCRAPES):
        path = tmp_path / f"scrape-{n:02d}.prom"
        path.write_text(capture)
        os.utime(path, (T0 + 60 * n, T0 + 60 * n))
    report = ingest_samples(store, sorted(tmp_path.glob("*.prom")), progress=lambda m: None, force=True)
    assert report.rows == 4 * SCRAPES and store.scalar("SELECT uniqExact(mig_instance) FROM gpu_samples") == 4
    rollup(store, cfg, since=date(2026, 3, 1), until=date(2026, 3, 3),
           now=datetime(2026, 3, 3, tzinfo=timezone.utc))

    # the GPU's power, as each instance's series repeats it (read at slightly different moments)
    watts = [float(v) for v in re.findall(r"^DCGM_FI_DEV_POWER_USAGE\{[^}]*\} (\S+)$", capture, re.M)]
    assert len(watts) == 4
    held_s = 60 * SCRAPES    # each scrape holds a minute, the last one for the minute before it
    measured_kwh = sum(watts) / len(watts) * held_s / 3.6e6
    charged = store.rows("SELECT mig_instance, sum(energy_kwh) FROM gpu_cost_hour GROUP BY mig_instance ORDER BY mig_instance")
    assert sum(kwh for _, kwh in charged) == pytest.approx(measured_kwh, rel=1e-6)   # not 4 times it
    # split by compute slices: three 1g instances and one 2g share the GPU 1:1:1:2
    by_instance = dict(charged)
    assert by_instance["5"] == pytest.approx(measured_kwh * 2 / 5) and by_instance["7"] == pytest.approx(measured_kwh / 5)
