"""`gpuledger ingest samples` reads nvidia-smi output: `--query-gpu` CSV logs and `-q -x` XML.

The inputs are the real captures in ../shared/data/nvidia_smi: the `--query-gpu … --format=csv`
sections of the L40S and H100 (MIG) captures (cut out of the capture here, under the command
line that produced them) and a real A100 MIG `nvidia-smi -q -x`. Expected values are read from
the raw text here, with the csv module and ElementTree, not by the parser under test.
"""
from __future__ import annotations

import csv
import xml.etree.ElementTree as ET

import pytest

from collector.nvidia_smi import sniff
from tests.helpers import gpuledger, query

MIB = 1024 * 1024


def query_gpu_sections(capture) -> list[list[str]]:
    """The lines (header, rows) printed under each ``# $ nvidia-smi --query-gpu=…`` command line."""
    lines = capture.read_text().split("\n")
    sections = []
    for i, line in enumerate(lines):
        if line.startswith("# $ nvidia-smi --query-gpu="):
            assert lines[i + 1].startswith("#####")
            body = []
            for text in lines[i + 2:]:
                if not text.strip():
                    break
                body.append(text)
            sections.append(body)
    assert len(sections) == 2, f"expected the idle and load --query-gpu sections in {capture}"
    return sections


def raw_rows(lines: list[str]) -> list[dict]:
    """Rows of a --query-gpu section as {field (unit dropped): raw text}, repeated headers skipped."""
    reader = csv.reader(lines, skipinitialspace=True)
    header = [h.split(" [")[0] for h in next(reader)]
    return [dict(zip(header, row)) for row in reader if row[0] != "timestamp"]


def number(raw: str) -> float | None:
    return None if raw.startswith("[") or raw == "N/A" else float(raw.split()[0])


def nounits(lines: list[str]) -> list[str]:
    """``--format=csv,nounits``: the same values without their units (headers keep them)."""
    out = [lines[0]]
    for line in lines[1:]:
        out.append(", ".join(c.removesuffix(" MiB").removesuffix(" %").removesuffix(" W").removesuffix(" MHz")
                             for c in line.split(", ")))
    return out


@pytest.fixture(scope="module")
def files(shared_data, tmp_path_factory):
    base, here = shared_data / "nvidia_smi", tmp_path_factory.mktemp("nvidia_smi")
    l40s_idle, l40s_load = query_gpu_sections(base / "l40s_capture.txt")
    h100_idle, h100_load = query_gpu_sections(base / "h100_mig_capture.txt")
    made = {
        # `-l` style logs: the header repeated before every sample, or printed once
        "l40s": (here / "l40s.csv", l40s_idle + l40s_load),
        "h100": (here / "h100-gpu.log", h100_idle + h100_load[1:]),
        "h100_nounits": (here / "h100-nounits.csv", nounits(h100_idle)),
    }
    for path, lines in made.values():
        path.write_text("\n".join(lines) + "\n")
    # the snapshot's own <timestamp> (Fri Aug  4 11:44:30 2023) is older than the store keeps samples
    # (gpu_samples' TTL, 400 days): the copy loaded says 2026, every other byte is the capture's
    xml = here / "a100_mig_q_x.xml"
    xml.write_text((base / "a100_mig_q_x.xml").read_text().replace(
        "<timestamp>Fri Aug  4 11:44:30 2023</timestamp>", "<timestamp>Fri Jul  3 11:44:30 2026</timestamp>", 1))
    plain = here / "plain.csv"
    plain.write_text("ts,host,gpu_uuid,util_gpu\n2026-07-03 08:00:00,plain-1,GPU-plain,42.5\n")
    return {name: (path, raw_rows(lines)) for name, (path, lines) in made.items()} | {
        "xml": (xml, None), "plain": (plain, None)}


@pytest.fixture(scope="module")
def loaded(files, tmp_path_factory):
    store = tmp_path_factory.mktemp("store")
    run = gpuledger(store, "ingest", "samples", *(str(files[n][0]) for n in ("l40s", "h100", "xml", "plain")),
                    "--host", "h1")
    assert run.finish() == 0, run.tail()
    return store


def stored(store, where: str) -> list[dict]:
    return query(store, "SELECT toString(ts) AS t, host, gpu_uuid, model, pci_bus_id, driver_version, gpu_index, "
                        "mig_instance, util_gpu, util_mem, mem_used_bytes, mem_total_bytes, power_w, temperature_c, "
                        "sm_clock_mhz, mem_clock_mhz, throttle_reasons, ecc_corrected_volatile, "
                        "ecc_uncorrected_aggregate, process_count, source "
                        f"FROM gpu_samples WHERE {where} ORDER BY ts, mig_instance")


def expected_from_csv(row: dict) -> dict:
    return {
        "t": row["timestamp"].replace("/", "-"), "host": "h1", "gpu_uuid": row["uuid"], "model": row["name"],
        "pci_bus_id": row["pci.bus_id"], "driver_version": row["driver_version"], "gpu_index": int(row["index"]),
        "mig_instance": "", "util_gpu": number(row["utilization.gpu"]), "util_mem": number(row["utilization.memory"]),
        "mem_used_bytes": int(number(row["memory.used"])) * MIB, "mem_total_bytes": int(number(row["memory.total"])) * MIB,
        "power_w": number(row["power.draw"]), "temperature_c": number(row["temperature.gpu"]),
        "sm_clock_mhz": int(number(row["clocks.current.sm"])), "mem_clock_mhz": int(number(row["clocks.current.memory"])),
        "throttle_reasons": int(row["clocks_event_reasons.active"], 16),
        "ecc_corrected_volatile": int(row["ecc.errors.corrected.volatile.total"]),
        "ecc_uncorrected_aggregate": int(row["ecc.errors.uncorrected.aggregate.total"]),
        "process_count": None, "source": "nvidia-smi",
    }


def close(got: dict, want: dict) -> None:
    """Cell by cell; floats as the store's Float32 keeps them."""
    for key, value in want.items():
        if isinstance(value, float):
            assert got[key] == pytest.approx(value, rel=1e-6), key
        else:
            assert got[key] == value, key


@pytest.mark.parametrize("name, model", [("l40s", "NVIDIA L40S"), ("h100", "NVIDIA H100 80GB HBM3")])
def test_query_gpu_csv_cell_by_cell(files, loaded, name, model):
    raw = files[name][1]
    rows = stored(loaded, f"model = '{model}'")
    assert len(rows) == len(raw) == 2
    for got, row in zip(rows, raw):
        close(got, expected_from_csv(row))
    if name == "h100":      # MIG mode: nvidia-smi has no whole-GPU utilization: unknown, not 0
        assert [r["util_gpu"] for r in rows] == [None, None]


def test_nounits_and_a_second_load_is_skipped(files, tmp_path):
    path, raw = files["h100_nounits"]
    run = gpuledger(tmp_path, "ingest", "samples", str(path), "--host", "h1")
    assert run.finish() == 0, run.tail()
    again = gpuledger(tmp_path, "ingest", "samples", str(path), "--host", "h1")
    assert again.finish() == 0, again.tail()
    assert any("already loaded" in line for line in again.lines), again.tail()
    [got] = stored(tmp_path, "1")
    close(got, expected_from_csv(raw[0]))


def test_q_x_xml_gpu_and_mig_devices_cell_by_cell(files, loaded):
    root = ET.parse(files["xml"][0]).getroot()
    [gpu] = root.findall("gpu")

    def mib(element, where):
        return int(element.findtext(where).split()[0]) * MIB

    rows = stored(loaded, "model = 'NVIDIA A100-SXM4-80GB'")
    migs = gpu.findall("mig_devices/mig_device")
    assert len(rows) == 1 + len(migs) == 5
    whole, parts = rows[0], rows[1:]
    assert root.findtext("timestamp") == "Fri Jul  3 11:44:30 2026"
    assert whole["t"] == "2026-07-03 11:44:30.000"
    close(whole, {
        "host": "h1", "gpu_uuid": gpu.findtext("uuid"), "pci_bus_id": gpu.findtext("pci/pci_bus_id"),
        "driver_version": root.findtext("driver_version"), "mig_instance": "",
        "util_gpu": None, "util_mem": None,              # N/A under MIG
        "mem_used_bytes": mib(gpu, "fb_memory_usage/used"), "mem_total_bytes": mib(gpu, "fb_memory_usage/total"),
        "power_w": float(gpu.findtext("gpu_power_readings/power_draw").split()[0]),
        "temperature_c": float(gpu.findtext("temperature/gpu_temp").split()[0]),
        "sm_clock_mhz": int(gpu.findtext("clocks/sm_clock").split()[0]),
        "mem_clock_mhz": int(gpu.findtext("clocks/mem_clock").split()[0]),
        "throttle_reasons": 0, "ecc_corrected_volatile": 0, "ecc_uncorrected_aggregate": 0,
        "process_count": 0, "source": "nvidia-smi",      # <processes />: none
    })
    for got, mig in zip(parts, sorted(migs, key=lambda m: m.findtext("gpu_instance_id"))):
        close(got, {"gpu_uuid": gpu.findtext("uuid"), "mig_instance": mig.findtext("gpu_instance_id"),
                    "mem_used_bytes": mib(mig, "fb_memory_usage/used"),
                    "mem_total_bytes": mib(mig, "fb_memory_usage/total"),
                    "power_w": None, "util_gpu": None, "process_count": 0, "t": whole["t"]})


def test_a_plain_gpuledger_csv_still_loads(loaded):
    assert query(loaded, "SELECT host, gpu_uuid, util_gpu, source FROM gpu_samples WHERE host = 'plain-1'") == \
        [{"host": "plain-1", "gpu_uuid": "GPU-plain", "util_gpu": 42.5, "source": ""}]


def test_sniff_tells_nvidia_smi_from_our_csv():
    assert sniff("ts,host,gpu_uuid,util_gpu,driver_version\n") is None
    assert sniff("host,gpu_uuid,driver_version\n") is None
    assert sniff("# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization\n") is None
    assert sniff("timestamp, uuid, utilization.gpu [%], memory.used [MiB]\n") == "query-csv"
    assert sniff("uuid,power.draw\n") == "query-csv"
    assert sniff('<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "x.dtd">\n<nvidia_smi_log>') == "xml"


@pytest.mark.parametrize("name, text, host, message", [
    ("truncated.xml", None, "h1", "truncated.xml: not a complete nvidia-smi -q -x XML document"),
    ("garbled.csv", "timestamp, uu#id, utilization.gpu [%]\n2026/07/03 08:33:38.737, GPU-1, 5 %\n", "h1",
     "garbled.csv: line 1: expected an nvidia-smi --query-gpu header"),
    ("no-uuid.csv", "timestamp, utilization.gpu [%]\n2026/07/03 08:33:38.737, 5 %\n", "h1",
     "no-uuid.csv: line 1: the nvidia-smi header has no uuid field"),
    ("short.csv", "timestamp, uuid, power.draw [W]\n2026/07/03 08:33:38.737, GPU-1\n", "h1",
     "short.csv: line 2: 2 values for 3 fields"),
    ("bad-value.csv", "timestamp, uuid, power.draw [W]\n2026/07/03 08:33:38.737, GPU-1, lots W\n", "h1",
     "bad-value.csv: line 2, field 'power.draw': cannot read 'lots W' as a number"),
    ("hostless.csv", "timestamp, uuid, power.draw [W]\n2026/07/03 08:33:38.737, GPU-1, 70 W\n", None,
     "hostless.csv: nvidia-smi files do not name their host: pass --host NAME"),
])
def test_unreadable_files_get_one_line_and_exit_2(shared_data, tmp_path, name, text, host, message):
    path = tmp_path / name
    if text is None:
        path.write_text("\n".join((shared_data / "nvidia_smi" / "a100_mig_q_x.xml").read_text().split("\n")[:200]))
    else:
        path.write_text(text)
    run = gpuledger(tmp_path / "store", "ingest", "samples", str(path), *(["--host", host] if host else []))
    assert run.finish() == 2, run.tail()
    errors = [line for line in run.lines if "error" in line]
    assert len(errors) == 1 and message in errors[0], run.tail()
    assert "Traceback" not in run.tail()


OLD_SCHEMA = """<?xml version="1.0" ?>
<nvidia_smi_log>
  <timestamp>Mon Jun  1 10:00:00 2026</timestamp>
  <driver_version>470.82.01</driver_version>
  <gpu id="00000000:07:00.0">
    <product_name>Tesla V100-SXM2-32GB</product_name>
    <uuid>GPU-old</uuid>
    <pci><pci_bus_id>00000000:07:00.0</pci_bus_id></pci>
    <clocks_throttle_reasons>
      <clocks_throttle_reason_gpu_idle>Active</clocks_throttle_reason_gpu_idle>
      <clocks_throttle_reason_sw_power_cap>Active</clocks_throttle_reason_sw_power_cap>
      <clocks_throttle_reason_hw_slowdown>Not Active</clocks_throttle_reason_hw_slowdown>
    </clocks_throttle_reasons>
    <fb_memory_usage><total>32510 MiB</total><used>3 MiB</used></fb_memory_usage>
    <utilization><gpu_util>7 %</gpu_util><memory_util>N/A</memory_util></utilization>
    <ecc_errors>
      <volatile><single_bit><total>2</total></single_bit><double_bit><total>0</total></double_bit></volatile>
      <aggregate><single_bit><total>N/A</total></single_bit><double_bit><total>1</total></double_bit></aggregate>
    </ecc_errors>
    <power_readings><power_draw>43.21 W</power_draw></power_readings>
    <processes>N/A</processes>
  </gpu>
</nvidia_smi_log>
"""


def test_older_driver_schema_names():
    """Element names of pre-535 drivers (clocks_throttle_reasons, power_readings, single/double_bit)."""
    from collector.nvidia_smi import records_from_xml

    [r] = records_from_xml(OLD_SCHEMA, host="v100-1")
    assert (r.gpu_uuid, r.model, r.util_gpu, r.util_mem, r.mem_used_bytes, r.power_w) == \
        ("GPU-old", "Tesla V100-SXM2-32GB", 7.0, None, 3 * MIB, 43.21)
    assert (r.throttle_reasons, r.ecc_corrected_volatile, r.ecc_uncorrected_volatile,
            r.ecc_corrected_aggregate, r.ecc_uncorrected_aggregate, r.process_count) == (0x1 | 0x4, 2, 0, None, 1, None)
