"""A store that plans instead of writing: ``gpuledger rollup --dry-run`` and the cluster checks.

``PlanStore(reads)`` is a ``Store`` whose writes (``command``, ``insert``, ``insert_bytes``, and so
every staging step: create, fill, attach, replace, exchange, drop) are recorded as ``Step``s, in
order, instead of run; reads are answered by ``reads`` (a real store, or nothing at all: empty
results). Code such as ``ingest/rollup/run.py`` runs against it unchanged, so the plan is made of
exactly the statements that code issues. A staging table does not exist while planning: a read
of one is answered from an empty table of the same structure, and its partitions are the ones
the caller expects to swap in (``stage_partitions``), or ``<each>`` when it cannot know them.

A ``ClusterStore`` (``ingest/cluster_store.py``) plans by taking ``PlanStore``s as its node and its
shards' handles (``plan_cluster``): the steps then say where each runs (``where``).
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from ingest.store import Store, StoreTarget

EACH = "<each>"        # a partition id only known when the plan runs


@dataclass
class Step:
    where: str              # "" on a single node; on a cluster the node (ON CLUSTER) or a shard's replica
    sql: str
    parameters: dict | None = None
    note: str = ""


@dataclass
class Plan:
    steps: list[Step] = field(default_factory=list)
    stages: dict[str, str] = field(default_factory=dict)     # staging table -> the table it copies

    def render(self) -> str:
        """SQL text: every statement in order, under a comment saying where it runs."""
        out = []
        for i, step in enumerate(self.steps, 1):
            head = f"-- {i}." + (f" {step.where}" if step.where else "") + (f" ({step.note})" if step.note else "")
            out.append(head)
            if step.parameters:
                out.append("-- parameters: " + ", ".join(f"{k} = {_show(v)}" for k, v in sorted(step.parameters.items())))
            out.append(step.sql.rstrip().rstrip(";") + ";\n")
        return "\n".join(out)


class PlanStore(Store):
    """Records writes into ``plan``; answers reads from ``reads`` (None: every read is empty).

    ``delocalize`` (a database name): reads name ``db.t_local`` tables of a cluster while
    ``reads`` is a single-node store; they are answered from its ``t``."""

    def __init__(self, reads: Store | None, *, target: StoreTarget | None = None, where: str = "",
                 plan: Plan | None = None, delocalize: str = ""):
        super().__init__(target or reads.target, None)
        self.reads, self.where, self.delocalize = reads, where, delocalize
        self.plan = plan if plan is not None else Plan()

    def __repr__(self) -> str:
        return f"PlanStore({self.target}{', ' + self.where if self.where else ''})"

    # ---- writes: recorded ------------------------------------------------------------
    def record(self, sql: str, parameters: dict | None = None, note: str = "") -> None:
        self.plan.steps.append(Step(self.where, sql.strip(), dict(parameters) if parameters else None, note))

    def command(self, sql: str, parameters: dict | None = None, settings: dict | None = None):
        self.record(sql, parameters)

    def insert(self, table: str, rows, columns: Sequence[str] | None = None, *, token: str | None = None,
               settings: dict | None = None, types: Sequence[str] | None = None) -> int:
        names = list(columns) if columns is not None else list(rows.columns)
        self.record(f"INSERT INTO {table} ({', '.join(f'`{c}`' for c in names)}) VALUES", note=f"{len(rows)} row(s)")
        return len(rows)

    def insert_bytes(self, table: str, data: bytes, columns: Sequence[str], fmt: str, settings: dict | None = None) -> None:
        self.record(f"INSERT INTO {table} ({', '.join(f'`{c}`' for c in columns)}) FORMAT {fmt}", note=f"{len(data)} bytes")

    def note_stage(self, name: str, like: str) -> None:
        self.plan.stages[name] = like

    # ---- reads: answered -------------------------------------------------------------
    def rows(self, sql: str, parameters: dict | None = None) -> list[tuple]:
        return self.reads.rows(self.readable(sql), parameters) if self.reads else []

    def query_df(self, sql: str, parameters: dict | None = None):
        if self.reads is None:
            raise NotImplementedError("a plan without a store to read cannot answer a DataFrame query")
        return self.reads.query_df(self.readable(sql), parameters)

    def column_types(self, table: str, *, defaulted: bool = True) -> dict[str, str]:
        return self.reads.column_types(self.plain(table), defaulted=defaulted) if self.reads else {}

    def partitions(self, table: str) -> list[str]:
        if self.plain(table) in self.plan.stages or self.reads is None:
            return []
        return self.reads.partitions(self.plain(table))

    def stage_partitions(self, name: str, expected: Sequence[str] = ()) -> list[str]:
        return list(expected) or [EACH]

    def readable(self, sql: str) -> str:
        """``sql`` with every staging table replaced by an empty table of its structure (and, with
        ``delocalize``, every ``db.t_local`` by ``t``)."""
        for name in sorted(self.plan.stages, key=len, reverse=True):
            empty = f"(SELECT *, _partition_id FROM `{self.plan.stages[name]}` WHERE 0)"
            sql = re.sub(rf"(?:\b\w+\.)?`?{re.escape(name)}(?:_local)?`?(?!\w)", empty, sql)
        if self.delocalize:
            sql = re.sub(rf"\b{re.escape(self.delocalize)}\.`?(\w+?)(?:_local)?`?(?!\w)", r"`\1`", sql)
        return sql

    def plain(self, table: str) -> str:
        name = table.split(".")[-1].strip("`")
        if self.delocalize and name.endswith("_local"):
            name = name[: -len("_local")]
        return name

    # ---- handles ---------------------------------------------------------------------
    @contextmanager
    def sharing_cores(self, handles: int) -> Iterator[None]:
        yield                             # a plan holds the derivation's statements, not its sessions' settings

    def clone(self) -> PlanStore:
        return self                       # one plan, in order: a planned rollup runs one day on one handle

    def read_only(self) -> Store:
        return self.reads.read_only() if self.reads else self

    def close(self) -> None:
        pass


def _show(value) -> str:
    text = repr(value) if not hasattr(value, "isoformat") else value.isoformat(" ") if hasattr(value, "hour") else value.isoformat()
    return text if len(text) <= 120 else text[:117] + "..."
