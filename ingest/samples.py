"""``gpuledger ingest samples``: bulk import of GPU samples from CSV / Parquet files, and from
Prometheus text exposition files (``.prom``, ``.txt``: a saved ``curl node:9400/metrics`` of our
agent or of dcgm-exporter, mapped like a scrape by ``collector.dcgm.GPULEDGER``; samples
without their own timestamp take the file's modification time).

Columns are those of ``gpu_samples`` (see ``sql/migrations/001_gpu_samples.sql`` and the README):
``ts``, ``host`` and ``gpu_uuid`` are required, the others default when absent (NULL for
telemetry, '' for labels), and an unknown column is refused by name. Each file loads
all-or-nothing; a file already loaded (same content) is skipped, so re-running a backfill
never doubles it.
"""
from __future__ import annotations

import csv
import glob
import gzip
import hashlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from base.errors import InputError, first_line
from collector.records import GPU_SAMPLE_COLUMNS
from ingest import badrows
from ingest.writer import file_format, load_file

log = logging.getLogger(__name__)

TABLE = "gpu_samples"
KEY = ("host", "gpu_uuid", "mig_instance", "ts")      # what makes a sample row the same row
INTENT = "samples:loading"                           # ingested_files kind of a load under way
REQUIRED = ("ts", "host", "gpu_uuid")
PROM_SUFFIXES = (".prom", ".txt")
SUFFIXES = (".csv", ".csv.gz", ".parquet", ".tsv", ".tsv.gz", ".jsonl", ".jsonl.gz") + PROM_SUFFIXES


@dataclass
class LoadReport:
    files_loaded: int = 0
    files_skipped: int = 0
    rows: int = 0
    skipped: list[str] = field(default_factory=list)


def expand(paths: Iterable[str | Path], suffixes: tuple[str, ...] = SUFFIXES) -> list[Path]:
    """Files named, found under directories, or matched by glob patterns; sorted, no repeats."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.is_file() and p.name.lower().endswith(suffixes))
        elif path.exists():
            found.append(path)
        else:
            matches = sorted(map(Path, glob.glob(str(raw), recursive=True))) if any(ch in str(raw) for ch in "*?[") else []
            if not matches:
                raise InputError("no such file or directory", path=str(raw))
            found += [p for p in matches if p.is_file()]
    return list(dict.fromkeys(found))


def header(path: Path, fmt: str) -> list[str]:
    """The column names a file declares, read without loading it."""
    try:
        if fmt == "Parquet":
            import pyarrow.parquet as pq

            return list(pq.read_schema(path).names)
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8-sig", newline="") as handle:
            if fmt == "JSONEachRow":
                import json

                first = handle.readline()
                return list(json.loads(first)) if first.strip() else []
            delimiter = "\t" if fmt.startswith("TSV") else ","
            return next(csv.reader(handle, delimiter=delimiter), [])
    except (OSError, UnicodeDecodeError, ValueError, EOFError) as exc:
        raise InputError(f"cannot read the file's header ({exc})", path=str(path)) from None


def check_columns(path: Path, columns: list[str], known: Iterable[str], required: Iterable[str]) -> None:
    known = list(known)
    if not columns:
        raise InputError("the file is empty: expected a header row naming columns", path=str(path))
    unknown = [c for c in columns if c not in known]
    if unknown:
        raise InputError(
            f"unknown column(s) {', '.join(map(repr, unknown))}; the columns of {TABLE} are: {', '.join(known)}",
            path=str(path),
        )
    missing = [c for c in required if c not in columns]
    if missing:
        raise InputError(f"missing required column(s) {', '.join(map(repr, missing))}", path=str(path))
    duplicated = sorted({c for c in columns if columns.count(c) > 1})
    if duplicated:
        raise InputError(f"column(s) named twice: {', '.join(duplicated)}", path=str(path))


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def already_loaded(store, kind: str, digest: str) -> str | None:
    return store.scalar(
        "SELECT any(path) FROM ingested_files WHERE kind = {k:String} AND sha256 = {d:String}", {"k": kind, "d": digest}
    )


def record_loaded(store, kind: str, path: Path, digest: str, rows: int) -> None:
    store.insert("ingested_files", [[kind, str(path), digest, rows]], ["kind", "path", "sha256", "rows"])


def ingest_samples(store, paths: Iterable[str | Path], progress: Callable[[str], None] = log.info,
                   force: bool = False) -> LoadReport:
    """Load sample files into gpu_samples; see the module docstring for the rules."""
    files = expand(paths)
    types = store.column_types(TABLE)
    report = LoadReport()
    for number, path in enumerate(files, 1):
        promtext = path.name.lower().endswith(PROM_SUFFIXES)
        if not promtext:
            fmt = file_format(path)
            columns = header(path, fmt)
            check_columns(path, columns, GPU_SAMPLE_COLUMNS, REQUIRED)
        digest = sha256(path)
        previous = already_loaded(store, "samples", digest)
        if previous and not force:
            report.files_skipped += 1
            report.skipped.append(str(path))
            progress(f"[{number}/{len(files)}] {path}: already loaded (as {previous}), skipped")
            continue
        # an intent recorded first: if this process is killed before the file is recorded as
        # loaded, the next run finds the intent and does not attach the file's days twice
        repair = KEY if not previous and already_loaded(store, INTENT, digest) else ()
        if repair:
            progress(f"[{number}/{len(files)}] {path}: an earlier load of it was interrupted; finishing it")
        record_loaded(store, INTENT, path, digest, 0)
        rows = load_promtext(store, path, repair) if promtext else load_one(store, path, fmt, columns, types, repair)
        record_loaded(store, "samples", path, digest, rows)
        report.files_loaded += 1
        report.rows += rows
        progress(f"[{number}/{len(files)}] {path}: {rows:,} rows")
    return report


def load_one(store, path: Path, fmt: str, columns: list[str], types: dict[str, str], repair=()) -> int:
    try:
        return load_file(store, TABLE, path, columns, fmt, repair=repair)
    except Exception as exc:
        if not hasattr(exc, "code") and "DB::Exception" not in str(exc):
            raise
        found = badrows.locate(store, TABLE, path, fmt, columns, types) if store.target.embedded else None
        if found:
            row, column, reason = found
            raise InputError(f"{reason}; nothing from this file was stored", path=str(path), row=row, column=column) from None
        raise InputError(f"ClickHouse refused the file ({first_line(exc)}); nothing from this file was stored", path=str(path)) from None


def load_promtext(store, path: Path, repair=()) -> int:
    """Load one Prometheus text exposition file all-or-nothing; return the rows stored."""
    from datetime import datetime, timezone

    from collector.dcgm import records_from_text
    from collector.promtext import PromTextError
    from collector.records import as_row
    from ingest.writer import insert_rows

    try:
        text = path.read_text(encoding="utf-8")
        when = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
        records = records_from_text(text, when, defaults={"host": ""}, source="import")
    except PromTextError as exc:
        raise InputError(f"not Prometheus text exposition ({exc}); nothing from this file was stored",
                         path=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the file ({exc})", path=str(path)) from None
    if not records:
        raise InputError("no GPU samples found: expected dcgm-exporter or gpuledger metrics with a UUID label",
                         path=str(path))
    nameless = next((r for r in records if not r.host), None)
    if nameless is not None:
        raise InputError(f"GPU {nameless.gpu_uuid} has no Hostname label, so its host is unknown; "
                         "nothing from this file was stored", path=str(path))
    with store.staging(TABLE) as stage:
        try:
            insert_rows(store, stage.name, GPU_SAMPLE_COLUMNS, [as_row(r) for r in records])
        except Exception as exc:
            if "DB::Exception" not in str(exc) and not hasattr(exc, "code"):
                raise
            raise InputError(f"ClickHouse refused the samples ({first_line(exc)}); nothing from this file was stored",
                             path=str(path)) from None
        stage.attach_to(unless_stored=repair)
        return len(records)
