"""Value types of the inventory: teams, pools, hosts, GPU entities, cloud instances, lanes and
where the planted problems live. ``sim.inventory.build_fleet`` makes them."""
from __future__ import annotations

from dataclasses import dataclass

from .traces import TraceShapes


@dataclass(frozen=True)
class Team:
    name: str
    pattern: str
    users: tuple[str, ...]
    image: str
    budget_usd: float  # per month
    allowed: tuple[dict, ...] | None  # residency policy, None when unrestricted


@dataclass(frozen=True)
class Pool:
    name: str
    environment: str  # onprem | aws | gcp | azure
    region: str
    cluster: str
    model: str  # key of catalog.MODELS
    scheduler: str  # k8s | slurm | vm
    mig: bool = False


@dataclass(frozen=True)
class Instance:
    """A cloud VM with GPUs; ``instance_id`` is its billing ResourceId."""

    instance_id: str
    name: str
    host: str
    provider: str
    region: str
    zone: str
    instance_type: str
    team: str
    role: str
    account: str  # FOCUS SubAccountId: AWS account, GCP project, Azure subscription
    tags: tuple[tuple[str, str], ...]
    planted: str = ""
    committed: bool = False  # usage covered by a savings plan


@dataclass(frozen=True)
class Host:
    name: str
    pool: str
    driver: str
    cuda: str
    instance: int = -1  # index into Fleet.instances, -1 on-prem


@dataclass(frozen=True)
class Entity:
    """One GPU-sample identity: a whole GPU or one MIG instance of it."""

    host: str
    pool: str
    gpu_uuid: str
    gpu_index: int
    mig_instance: str
    mig_profile: str
    model: str
    mem_mib: int
    share: float
    pci_bus_id: str
    utc_offset_h: int
    instance: int = -1


@dataclass(frozen=True)
class Lane:
    """GPU entities that are scheduled together, and the workload pattern that fills them."""

    name: str
    kind: str  # baseline | slurm | mig_inference | mig_dev | finetune | inference | regulated | planted
    entities: tuple[int, ...]
    instance: int = -1


@dataclass(frozen=True)
class PlantTargets:
    """Where the planted problems live (their timing depends on the simulated window)."""

    notebook_entities: tuple[int, ...]
    mig_notebook_entity: int
    unallocated_entities: tuple[int, ...]
    health_entity: int
    drift_host: str
    cloud_unused_instance: int
    residency_instance: int
    untagged_instance: int
    overrun_team: str

    def idle_entities(self) -> frozenset[int]:
        """Entities that carry a planted idle window: natural idle patterns stay off them."""
        return frozenset((*self.notebook_entities, self.mig_notebook_entity,
                          *self.unallocated_entities))


@dataclass(frozen=True, eq=False)
class Fleet:
    seed: int
    gpus: int
    teams: tuple[Team, ...]
    pools: tuple[Pool, ...]
    hosts: tuple[Host, ...]
    instances: tuple[Instance, ...]
    entities: tuple[Entity, ...]
    lanes: tuple[Lane, ...]
    plant: PlantTargets
    shapes: TraceShapes

    def pool(self, name: str) -> Pool:
        return next(p for p in self.pools if p.name == name)

    def team(self, name: str) -> Team:
        return next(t for t in self.teams if t.name == name)

    def host(self, name: str) -> Host:
        return next(h for h in self.hosts if h.name == name)
