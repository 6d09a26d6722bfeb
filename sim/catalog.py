"""Static facts the simulator draws from: GPU models, MIG layout, cloud instance types, regions,
teams and the order in which cloud capacity is added.

Figures follow public sources: board power, clocks and memory from the nvidia-smi captures in
``/work/shared/data/nvidia_smi`` (H100 80GB HBM3: 700 W limit, 1980 MHz SM, 2619 MHz memory;
A100-SXM4-80GB: 1410/1593 MHz), on-demand list prices from the providers' price pages (USD per
instance-hour, Linux, US regions).
"""
from __future__ import annotations

from dataclasses import dataclass

MIB = 1024 * 1024


@dataclass(frozen=True)
class GpuModel:
    """One GPU product as NVML names and reports it."""

    name: str
    mem_mib: int
    idle_w: float
    max_w: float
    sm_idle_mhz: int
    sm_max_mhz: int
    mem_mhz: int
    capital_usd: float  # purchase price per GPU, for on-prem amortization


MODELS: dict[str, GpuModel] = {
    "H100": GpuModel("NVIDIA H100 80GB HBM3", 81559, 70.0, 700.0, 345, 1980, 2619, 37500.0),
    "A100-80": GpuModel("NVIDIA A100-SXM4-80GB", 81920, 60.0, 400.0, 210, 1410, 1593, 15000.0),
    "A100-40": GpuModel("NVIDIA A100-SXM4-40GB", 40960, 52.0, 400.0, 210, 1410, 1215, 10000.0),
    "A100-PCIE-80": GpuModel("NVIDIA A100 80GB PCIe", 81920, 45.0, 300.0, 210, 1410, 1512, 14000.0),
    "A10G": GpuModel("NVIDIA A10G", 23028, 24.0, 300.0, 210, 1710, 6251, 3500.0),
    "L4": GpuModel("NVIDIA L4", 23034, 16.0, 72.0, 210, 2040, 6251, 2500.0),
}


@dataclass(frozen=True)
class MigSlice:
    """One MIG GPU instance of the layout used on every GPU of a MIG pool."""

    gi: str
    profile: str
    mem_mib: int
    share: float  # compute slices / 7: splits power and energy so entity sums equal the GPU


# An A100-80GB split 3g + 2g + 1g + 1g (7 of 7 compute slices in use).
MIG_LAYOUT: tuple[MigSlice, ...] = (
    MigSlice("2", "3g.40gb", 40192, 3 / 7),
    MigSlice("3", "2g.20gb", 19968, 2 / 7),
    MigSlice("9", "1g.10gb", 9856, 1 / 7),
    MigSlice("10", "1g.10gb", 9856, 1 / 7),
)

# Every host runs the same driver except the planted drift host.
BASELINE_DRIVER = "550.90.07"
BASELINE_CUDA = "12.4"
DRIFT_DRIVER = "535.183.01"
DRIFT_CUDA = "12.2"

PCI_BUS_IDS = {
    "H100": ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"),
    "A100-80": ("07", "0F", "47", "4E", "87", "90", "B7", "BD"),
    "A100-40": ("10", "11", "20", "21", "90", "91", "A0", "A1"),
}
DEFAULT_PCI_BUS_IDS = ("1E", "1F", "20", "21", "22", "23", "24", "25")


@dataclass(frozen=True)
class InstanceType:
    provider: str
    name: str
    gpus: int
    model: str
    price_hour: float


INSTANCE_TYPES: dict[str, InstanceType] = {
    t.name: t
    for t in (
        InstanceType("aws", "p4d.24xlarge", 8, "A100-40", 32.7726),
        InstanceType("aws", "p5.48xlarge", 8, "H100", 98.32),
        InstanceType("aws", "g5.xlarge", 1, "A10G", 1.006),
        InstanceType("aws", "g5.2xlarge", 1, "A10G", 1.212),
        InstanceType("aws", "g5.12xlarge", 4, "A10G", 5.672),
        InstanceType("gcp", "a2-highgpu-8g", 8, "A100-40", 29.3876),
        InstanceType("gcp", "a3-highgpu-8g", 8, "H100", 88.2530),
        InstanceType("gcp", "g2-standard-4", 1, "L4", 0.7068),
        InstanceType("gcp", "g2-standard-24", 2, "L4", 1.9996),
        InstanceType("azure", "Standard_ND96asr_v4", 8, "A100-40", 27.1970),
        InstanceType("azure", "Standard_ND96isr_H100_v5", 8, "H100", 98.3200),
        InstanceType("azure", "Standard_NC24ads_A100_v4", 1, "A100-PCIE-80", 3.6730),
    )
}


@dataclass(frozen=True)
class Region:
    provider: str
    id: str
    name: str
    zone: str
    utc_offset_h: int


REGIONS: dict[tuple[str, str], Region] = {
    (r.provider, r.id): r
    for r in (
        Region("aws", "us-east-1", "US East (N. Virginia)", "us-east-1a", -5),
        Region("aws", "us-west-2", "US West (Oregon)", "us-west-2b", -8),
        Region("aws", "eu-west-1", "EU (Ireland)", "eu-west-1a", 0),
        Region("gcp", "us-central1", "Iowa", "us-central1-a", -6),
        Region("gcp", "us-east4", "Northern Virginia", "us-east4-c", -5),
        Region("gcp", "europe-west4", "Netherlands", "europe-west4-a", 1),
        Region("azure", "eastus", "East US", "", -5),
        Region("azure", "westeurope", "West Europe", "", 1),
        Region("azure", "southcentralus", "South Central US", "", -6),
        Region("onprem", "ams1", "Amsterdam DC1", "", 1),
        Region("onprem", "bos1", "Boston DC1", "", -5),
    )
}


@dataclass(frozen=True)
class InstanceSlot:
    """A cloud instance the fleet may hold: what it is, where, who owns it, how it runs."""

    instance_type: str
    region: str
    role: str  # finetune | inference | regulated | planted
    team: str
    planted: str = ""  # the planted problem it carries, if any


# Present in every fleet: they carry planted problems.
SPECIAL_SLOTS: tuple[InstanceSlot, ...] = (
    InstanceSlot("g5.xlarge", "eu-west-1", "planted", "data-science", "idle_cloud_unused"),
    InstanceSlot("g2-standard-4", "us-east4", "planted", "clinical-ai", "residency_violation"),
    InstanceSlot("Standard_NC24ads_A100_v4", "southcentralus", "inference", "search-inference",
                 "untagged_instance"),
)

# Cloud capacity is added round-robin from these lists until each provider holds its share.
FILL_CYCLE: dict[str, tuple[InstanceSlot, ...]] = {
    "aws": (
        InstanceSlot("p4d.24xlarge", "us-east-1", "finetune", "llm-finetune"),
        InstanceSlot("g5.12xlarge", "us-west-2", "inference", "search-inference"),
        InstanceSlot("p5.48xlarge", "us-east-1", "finetune", "llm-finetune"),
        InstanceSlot("g5.2xlarge", "us-west-2", "inference", "search-inference"),
    ),
    "gcp": (
        InstanceSlot("a2-highgpu-8g", "us-central1", "finetune", "llm-finetune"),
        InstanceSlot("g2-standard-24", "europe-west4", "inference", "search-inference"),
        InstanceSlot("a3-highgpu-8g", "us-central1", "finetune", "llm-finetune"),
        InstanceSlot("g2-standard-4", "europe-west4", "inference", "search-inference"),
    ),
    "azure": (
        InstanceSlot("Standard_ND96asr_v4", "eastus", "finetune", "llm-finetune"),
        InstanceSlot("Standard_NC24ads_A100_v4", "westeurope", "regulated", "clinical-ai"),
        InstanceSlot("Standard_ND96isr_H100_v5", "eastus", "finetune", "llm-finetune"),
        InstanceSlot("Standard_NC24ads_A100_v4", "westeurope", "regulated", "clinical-ai"),
    ),
}


@dataclass(frozen=True)
class TeamSpec:
    name: str
    pattern: str
    users: tuple[str, ...]
    image: str


TEAMS: tuple[TeamSpec, ...] = (
    TeamSpec("research", "baseline training on-prem", ("amara.okafor", "jonas.weber", "li.wei"),
             "nvcr.io/nvidia/pytorch:24.05-py3"),
    TeamSpec("llm-finetune", "burst fine-tuning in the cloud", ("priya.nair", "tom.becker"),
             "nvcr.io/nvidia/nemo:24.05"),
    TeamSpec("search-inference", "diurnal inference", ("sofia.rossi", "kenji.ito"),
             "nvcr.io/nvidia/tritonserver:24.05-py3"),
    TeamSpec("data-science", "notebooks and experimentation", ("maya.cohen", "lucas.martin"),
             "quay.io/jupyter/pytorch-notebook:cuda12-2024-05-20"),
    TeamSpec("applied-ml", "experimentation", ("noah.kim", "eva.novak", "omar.haddad"),
             "nvcr.io/nvidia/pytorch:24.05-py3"),
    TeamSpec("clinical-ai", "regulated data, on-prem or azure westeurope only",
             ("hannah.jensen", "ravi.patel"), "registry.internal/clinical/train:2024.05"),
)

REGULATED_TEAM = "clinical-ai"
REGULATED_ALLOWED = ({"environment": "onprem", "regions": ["*"]},
                     {"environment": "azure", "regions": ["westeurope"]})
OVERRUN_TEAM = "llm-finetune"
NOTEBOOK_TEAM = "data-science"

# Provider billing identities (FOCUS BillingAccountId / SubAccountId and names).
PROVIDER_ACCOUNTS = {
    "aws": {"billing_account": "210987654321", "billing_name": "Gpuledger Sim Org",
            "provider": "AWS", "publisher": "Amazon Web Services, Inc.",
            "service": "Amazon Elastic Compute Cloud", "resource_type": "instance"},
    "gcp": {"billing_account": "01A2B3-C4D5E6-F7A8B9", "billing_name": "Gpuledger Sim Billing",
            "provider": "Google Cloud", "publisher": "Google Cloud",
            "service": "Compute Engine", "resource_type": "Compute Instance"},
    "azure": {"billing_account": "81234567", "billing_name": "Gpuledger Sim EA",
              "provider": "Microsoft", "publisher": "Microsoft",
              "service": "Virtual Machines", "resource_type": "Virtual machine"},
}

SAVINGS_PLAN_DISCOUNT = 0.28  # AWS Compute Savings Plan on the first AWS fine-tuning instance
ONPREM_DEPRECIATION_MONTHS = 36
ONPREM_OPS_USD_PER_GPU_MONTH = 120.0
