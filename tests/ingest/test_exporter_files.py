"""`gpuledger ingest samples FILE.prom` reads other GPU exporters' /metrics (``collector.exporters``).

The inputs are real published samples (exporter_data/SOURCES.md): nvidia_gpu_exporter's own
expected /metrics for its captures of a real H100 80GB HBM3 and a real L40S under load, from
utkuozdemir/nvidia_gpu_exporter, internal/integration/testdata/*.metrics (MIT). Expected values
are read from the raw text here with prometheus_client's parser, not by the code under test.
"""
from __future__ import annotations

import os
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import gpuledger, query

DATA = Path(__file__).parent / "exporter_data"
FILES = {
    "h100": "nvidia_gpu_exporter__linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01__load.prom",
    "l40s": "nvidia_gpu_exporter__linux-x86_64__nvidia-l40s__595.80__load.prom",
}
WHEN = int(time.time()) - 3600          # the files' modification time: their samples' ts


def raw_series(path: Path) -> dict[str, list]:
    """Every sample of the file as name -> [(labels, value)]."""
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(path.read_text()):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def expected(series: dict[str, list], host: str) -> dict:
    [(info, _)] = series["nvidia_smi_gpu_info"]
    uuid = info["uuid"]

    def value(name: str) -> float:
        [v] = [v for labels, v in series[name] if labels == {"uuid": uuid}]
        return v

    return {
        "t": datetime.fromtimestamp(WHEN, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.000"),
        "host": host, "gpu_uuid": "GPU-" + uuid, "mig_instance": "", "model": info["name"],
        "gpu_index": int(info["index"]), "pci_bus_id": info["pci_bus_id"],
        "driver_version": info["driver_version"], "cuda_version": info["cuda_version"],
        "util_gpu": value("nvidia_smi_utilization_gpu_ratio") * 100,
        "util_mem": value("nvidia_smi_utilization_memory_ratio") * 100,
        "mem_used_bytes": int(value("nvidia_smi_memory_used_bytes")),
        "mem_total_bytes": int(value("nvidia_smi_memory_total_bytes")),
        "power_w": value("nvidia_smi_power_draw_watts"),
        "temperature_c": value("nvidia_smi_temperature_gpu"),
        "sm_clock_mhz": round(value("nvidia_smi_clocks_current_sm_clock_hz") / 1e6),
        "mem_clock_mhz": round(value("nvidia_smi_clocks_current_memory_clock_hz") / 1e6),
        "throttle_reasons": int(value("nvidia_smi_clocks_event_reasons_active")),
        "ecc_corrected_volatile": int(value("nvidia_smi_ecc_errors_corrected_volatile_total")),
        "ecc_uncorrected_volatile": int(value("nvidia_smi_ecc_errors_uncorrected_volatile_total")),
        "ecc_corrected_aggregate": int(value("nvidia_smi_ecc_errors_corrected_aggregate_total")),
        "ecc_uncorrected_aggregate": int(value("nvidia_smi_ecc_errors_uncorrected_aggregate_total")),
        "process_count": int(value("nvidia_smi_compute_apps")),
        "energy_j": None, "source": "import",
    }


def copy(name: str, where: Path) -> Path:
    path = where / FILES[name]
    shutil.copyfile(DATA / FILES[name], path)
    os.utime(path, (WHEN, WHEN))
    return path


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    here, store = tmp_path_factory.mktemp("exporter_files"), tmp_path_factory.mktemp("store")
    for name in FILES:
        run = gpuledger(store, "ingest", "samples", str(copy(name, here)), "--host", f"{name}-1")
        assert run.finish() == 0, run.tail()
        assert any(line.endswith(f"{FILES[name]}: 1 rows") for line in run.lines), run.tail()
    return store


@pytest.mark.parametrize("name", FILES)
def test_nvidia_gpu_exporter_metrics_cell_by_cell(loaded, name):
    want = expected(raw_series(DATA / FILES[name]), f"{name}-1")
    [got] = query(loaded, f"SELECT toString(ts) AS t, {', '.join(c for c in want if c != 't')} "
                          f"FROM gpu_samples WHERE host = '{name}-1'")
    for key, value in want.items():
        if isinstance(value, float):
            assert got[key] == pytest.approx(value, rel=1e-6), key      # Float32 in the store
        else:
            assert got[key] == value, key


@pytest.mark.parametrize("name, edit, host, message", [
    ("truncated.prom", lambda text: text[:text.index("nvidia_smi_power_draw_watts{") + 40], "h1",
     "truncated.prom: not Prometheus text exposition (line"),
    ("garbled.prom", lambda text: text.replace("nvidia_smi_temperature_gpu{", "nvidia_smi_temperature_gpu{uuid=", 1), "h1",
     "garbled.prom: not Prometheus text exposition (line"),
    ("hostless.prom", lambda text: text, None,
     "hostless.prom: nvidia_gpu_exporter files do not name their host: pass --host NAME"),
])
def test_unreadable_files_get_one_line_and_exit_2(tmp_path, name, edit, host, message):
    path = tmp_path / name
    path.write_text(edit((DATA / FILES["h100"]).read_text()))
    run = gpuledger(tmp_path / "store", "ingest", "samples", str(path), *(["--host", host] if host else []))
    assert run.finish() == 2, run.tail()
    errors = [line for line in run.lines if "error" in line]
    assert len(errors) == 1 and message in errors[0], run.tail()
    assert "Traceback" not in run.tail()


def test_a_running_nvidia_gpu_exporter_is_scraped_with_the_same_mapping(store):
    """``[[scrape]] format = "nvidia_gpu_exporter"``: the published L40S scrape served on loopback."""
    from ingest.scrape import ScrapeJob
    from ingest.telemetry_config import ScrapeTarget
    from tests.ingest.test_scrape import TextServer

    path = DATA / FILES["l40s"]
    with TextServer(path.read_text()) as target:
        assert ScrapeJob(store, ScrapeTarget("l40s-box", target.url, format="nvidia_gpu_exporter"))() == 1
    want = {**expected(raw_series(path), "127.0.0.1"), "source": "nvidia_gpu_exporter"}
    columns = [c for c in want if c != "t"]                     # the scrape time, not the file's
    got = dict(zip(columns, store.rows(f"SELECT {', '.join(columns)} FROM gpu_samples")[0]))
    assert got == {c: pytest.approx(want[c], rel=1e-6) if isinstance(want[c], float) else want[c] for c in columns}
