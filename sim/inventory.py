"""Building the inventory: on-prem pools and hosts, cloud instances, teams and budgets."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from . import catalog, ids
from .catalog import MODELS, REGIONS, InstanceSlot
from .fleet import Entity, Fleet, Host, Instance, Lane, PlantTargets, Pool, Team
from .traces import load_shapes


def build_fleet(gpus: int = 64, seed: int = 7, traces_dir: str | Path | None = None) -> Fleet:
    """The inventory for about ``gpus`` physical GPUs, half on-prem, half over three clouds.

    On-prem holds at least four 8-GPU hosts (two DGX H100, one MIG A100, one Slurm A100), so
    fleets below ~64 GPUs are more on-prem than half. ``traces_dir`` names the directory of the
    Helios/Philly trace files; None uses the embedded shapes of ``sim.traces``.
    """
    if gpus < 16:
        raise ValueError(f"gpus={gpus}: the simulated fleet needs at least 16 GPUs")
    rng = np.random.default_rng([seed, 1])
    builder = _Builder(rng)
    builder.add_onprem(max(4, round(gpus / 2 / 8)))
    for slots in _cloud_slots(gpus / 2).values():
        for slot in slots:
            builder.add_instance(slot)
    plant = builder.plant_targets()
    teams = tuple(_team(spec, budget) for spec, budget in
                  zip(catalog.TEAMS, _budgets(builder, plant.overrun_team)))
    return Fleet(seed=seed, gpus=gpus, teams=teams, pools=tuple(builder.pools.values()),
                 hosts=tuple(builder.hosts), instances=tuple(builder.instances),
                 entities=tuple(builder.entities), lanes=tuple(builder.lanes), plant=plant,
                 shapes=load_shapes(traces_dir))


def _cloud_slots(target: float) -> dict[str, list[InstanceSlot]]:
    """Special slots plus the fill cycle, until each provider holds about a third of ``target``."""
    per_provider = target / 3
    chosen: dict[str, list[InstanceSlot]] = {}
    for provider, cycle in catalog.FILL_CYCLE.items():
        slots = [s for s in catalog.SPECIAL_SLOTS if _provider(s) == provider]
        total = sum(catalog.INSTANCE_TYPES[s.instance_type].gpus for s in slots)
        position = misses = 0
        while total < per_provider - 1 and misses < len(cycle):
            slot = cycle[position % len(cycle)]
            position += 1
            n = catalog.INSTANCE_TYPES[slot.instance_type].gpus
            if total + n <= per_provider + 2:
                slots.append(slot)
                total += n
                misses = 0
            else:
                misses += 1
        chosen[provider] = slots
    return chosen


def _provider(slot: InstanceSlot) -> str:
    return catalog.INSTANCE_TYPES[slot.instance_type].provider


def _team(spec: catalog.TeamSpec, budget: float) -> Team:
    allowed = catalog.REGULATED_ALLOWED if spec.name == catalog.REGULATED_TEAM else None
    return Team(spec.name, spec.pattern, spec.users, spec.image, budget, allowed)


# Expected duty (share of the month an instance runs, hours left running after a job included;
# every other inference service runs around the clock) per role, and a generous on-prem GPU-hour
# rate: budgets are set far from expected spend so exactly one team overruns.
_DUTY = {"finetune": 0.3, "inference": 0.7, "regulated": 0.23, "planted": 0.02}
_ONPREM_RATE_CEILING = 4.0
_APPLICATIONS = {"finetune": "fine-tuning", "inference": "serving", "regulated": "cohort-analysis",
                 "planted": "sandbox"}
_HOURS_PER_MONTH = 730.0


def _budgets(builder: _Builder, overrun_team: str) -> list[float]:
    """Monthly budget per team: 2.5x expected spend, 0.35x of cloud spend for the overrun team."""
    cloud = {t.name: 0.0 for t in catalog.TEAMS}
    onprem = {t.name: 0.0 for t in catalog.TEAMS}
    for inst in builder.instances:
        itype = catalog.INSTANCE_TYPES[inst.instance_type]
        cloud[inst.team] += itype.price_hour * _DUTY[inst.role] * _HOURS_PER_MONTH
    for team, gpu_share in builder.onprem_shares.items():
        onprem[team] += gpu_share * _ONPREM_RATE_CEILING * _HOURS_PER_MONTH
    budgets = []
    for spec in catalog.TEAMS:
        if spec.name == overrun_team:
            budget = max(1000.0, round(0.35 * cloud[spec.name], -3))
        else:
            budget = max(5000.0, round(2.5 * (cloud[spec.name] + onprem[spec.name]) + 500, -3))
        budgets.append(float(budget))
    return budgets


class _Builder:
    """Accumulates the inventory in a fixed order so ids depend on the seed only."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.pools: dict[str, Pool] = {}
        self.hosts: list[Host] = []
        self.entities: list[Entity] = []
        self.instances: list[Instance] = []
        self.lanes: list[Lane] = []
        self.onprem_shares: dict[str, float] = {}
        self.accounts: dict[tuple[str, str], str] = {}

    def add_onprem(self, n_hosts: int) -> None:
        n_h100 = max(2, n_hosts // 2)
        n_mig = max(1, n_hosts // 4)
        n_slurm = max(1, n_hosts - n_h100 - n_mig)
        self._pool(Pool("dgx-h100", "onprem", "ams1", "ams1-k8s", "H100", "k8s"))
        self._pool(Pool("a100-mig", "onprem", "ams1", "ams1-k8s", "A100-80", "k8s", mig=True))
        self._pool(Pool("a100-slurm", "onprem", "bos1", "bos1-slurm", "A100-80", "slurm"))
        for i in range(n_h100):
            driver = (catalog.DRIFT_DRIVER, catalog.DRIFT_CUDA) if i == n_h100 - 1 else None
            self._onprem_host(f"dgx-h100-{i + 1:02d}", "dgx-h100", "baseline", driver)
        for i in range(n_mig):
            self._onprem_host(f"a100-mig-{i + 1:02d}", "a100-mig", "mig", None)
        for i in range(n_slurm):
            self._onprem_host(f"a100-slurm-{i + 1:02d}", "a100-slurm", "slurm", None)
        self._share("research", 8 * n_h100)
        self._share("search-inference", 8 * n_mig * 5 / 7)
        self._share("data-science", 8 * n_mig * 2 / 7)
        self._share("applied-ml", 8 * n_slurm * 0.65)
        self._share("clinical-ai", 8 * n_slurm * 0.35)

    def _share(self, team: str, gpus: float) -> None:
        self.onprem_shares[team] = self.onprem_shares.get(team, 0.0) + gpus

    def _pool(self, pool: Pool) -> None:
        self.pools[pool.name] = pool

    def _onprem_host(self, name: str, pool_name: str, kind: str, drift) -> None:
        pool = self.pools[pool_name]
        driver, cuda = drift or (catalog.BASELINE_DRIVER, catalog.BASELINE_CUDA)
        self.hosts.append(Host(name, pool_name, driver, cuda))
        offset = REGIONS[("onprem", pool.region)].utc_offset_h
        first = len(self.entities)
        for gpu in range(8):
            self._gpu_entities(name, pool, gpu, offset, -1)
        if kind == "mig":
            for k in range(first, len(self.entities)):
                lane_kind = "mig_dev" if self.entities[k].mig_profile == "1g.10gb" else "mig_inference"
                self.lanes.append(Lane(f"{name}/{self.entities[k].gpu_index}/{self.entities[k].mig_instance}",
                                       lane_kind, (k,)))
        else:
            self.lanes.append(Lane(name, kind, tuple(range(first, len(self.entities)))))

    def _gpu_entities(self, host: str, pool: Pool, gpu: int, offset: int, instance: int) -> None:
        uuid = ids.gpu_uuid(self.rng)
        model = MODELS[pool.model]
        bus = catalog.PCI_BUS_IDS.get(pool.model, catalog.DEFAULT_PCI_BUS_IDS)[gpu]
        pci = f"00000000:{bus}:00.0"
        if not pool.mig:
            self.entities.append(Entity(host, pool.name, uuid, gpu, "", "", pool.model,
                                        model.mem_mib, 1.0, pci, offset, instance))
            return
        for s in catalog.MIG_LAYOUT:
            self.entities.append(Entity(host, pool.name, uuid, gpu, s.gi, s.profile, pool.model,
                                        s.mem_mib, s.share, pci, offset, instance))

    def add_instance(self, slot: InstanceSlot) -> None:
        itype = catalog.INSTANCE_TYPES[slot.instance_type]
        region = REGIONS[(itype.provider, slot.region)]
        pool = Pool(f"{itype.provider}-{slot.region}-{ids.short_type(itype.name)}", itype.provider,
                    slot.region, f"{itype.provider}-{slot.region}", itype.model,
                    "k8s" if itype.gpus >= 4 else "vm")
        self._pool(pool)
        account = self._account(itype.provider, slot.team)
        inst_id, name, host = self._instance_names(itype.provider, region, slot, account)
        committed = (itype.provider == "aws" and slot.role == "finetune"
                     and not any(i.committed for i in self.instances))
        tags = [("team", slot.team)] if slot.planted != "untagged_instance" else []
        tags += [("environment", "prod"), ("application", _APPLICATIONS[slot.role])]
        index = len(self.instances)
        self.instances.append(Instance(inst_id, name, host, itype.provider, slot.region, region.zone,
                                       itype.name, slot.team, slot.role, account, tuple(tags),
                                       slot.planted, committed))
        self.hosts.append(Host(host, pool.name, catalog.BASELINE_DRIVER, catalog.BASELINE_CUDA, index))
        first = len(self.entities)
        for gpu in range(itype.gpus):
            self._gpu_entities(host, pool, gpu, region.utc_offset_h, index)
        self.lanes.append(Lane(host, slot.role, tuple(range(first, len(self.entities))), index))

    def _account(self, provider: str, team: str) -> str:
        key = (provider, team)
        if key not in self.accounts:
            if provider == "aws":
                self.accounts[key] = ids.aws_account(self.rng)
            elif provider == "gcp":
                self.accounts[key] = f"{team}-{ids.hex_digits(self.rng, 6)}"
            else:
                self.accounts[key] = ids.guid(self.rng)
        return self.accounts[key]

    def _instance_names(self, provider, region, slot, account) -> tuple[str, str, str]:
        suffix = ids.hex_digits(self.rng, 5)
        if provider == "aws":
            inst_id = ids.aws_instance_id(self.rng)
            return inst_id, inst_id, ids.aws_hostname(self.rng, region.id)
        name = f"{slot.team}-{ids.short_type(slot.instance_type)}-{suffix}"
        if provider == "gcp":
            return ids.gcp_instance_path(account, region.zone, name), name, name
        rg = f"rg-{slot.team}-{region.id}"
        return ids.azure_vm_id(account, rg, name), name, name

    def plant_targets(self) -> PlantTargets:
        def entities_of(host: str) -> list[int]:
            return [k for k, e in enumerate(self.entities) if e.host == host]

        h100 = [h.name for h in self.hosts if h.pool == "dgx-h100"]
        mig = entities_of(next(h.name for h in self.hosts if h.pool == "a100-mig"))
        slurm = entities_of(next(h.name for h in self.hosts if h.pool == "a100-slurm"))
        first_h100 = entities_of(h100[0])
        planted = {i.planted: k for k, i in enumerate(self.instances) if i.planted}
        return PlantTargets(
            notebook_entities=(first_h100[6], first_h100[7]),
            mig_notebook_entity=next(k for k in mig if self.entities[k].mig_profile == "1g.10gb"),
            unallocated_entities=(slurm[6], slurm[7]),
            health_entity=first_h100[3],
            drift_host=h100[-1],
            cloud_unused_instance=planted["idle_cloud_unused"],
            residency_instance=planted["residency_violation"],
            untagged_instance=planted["untagged_instance"],
            overrun_team=catalog.OVERRUN_TEAM,
        )
