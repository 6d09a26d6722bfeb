"""``gpuledger ingest samples``: bulk import of GPU samples from CSV / Parquet files, and from
Prometheus text exposition files (``.prom``, ``.txt``: a saved ``curl node:9400/metrics`` of our
agent or of dcgm-exporter, mapped like a scrape by ``collector.dcgm.GPULEDGER``, or of another
exporter recognised by its metric names, ``collector.exporters``; samples without their own
timestamp take the file's modification time), and ``nvidia-smi`` output
(``--query-gpu`` CSV logs and ``-q -x`` XML, told by their content whatever their name; see
``collector.nvidia_smi``; their host comes from ``--host``, as for exporters that do not name it).

Columns are those of ``gpu_samples`` (see ``sql/migrations/001_gpu_samples.sql`` and the README):
``ts``, ``host`` and ``gpu_uuid`` are required, the others default when absent (NULL for
telemetry, '' for labels), and an unknown column is refused by name. Each file loads
all-or-nothing; a file already loaded (same content) is skipped, so re-running a backfill
never doubles it.

Every format is read the same way: each number is checked against its column's type (text in a
numeric column, ``-1`` for a byte count or ``70000`` processes are refused, never stored as NULL
or wrapped), and a numeric ``ts`` is a Unix epoch in seconds (13 digits: milliseconds), the same
in CSV, JSON and Parquet. ``ts`` is accepted from 2000-01-01 up to ``FUTURE_LIMIT`` ahead of the
load. Text is held to its column's length (``ingest.limits``: labels 256 bytes, ids such as
``gpu_uuid`` or ``k8s_pod`` 2048), and a text line (CSV, TSV, JSONL) over 1 MiB is refused
before the file is parsed, so a huge cell is never read into memory. A refused value refuses
the file, naming its row and column. The same sample (GPU entity and ``ts``) repeated inside a
file is stored once, in .prom files too. A file may span any number of days.

Embedded stores read the file in-process; a ClickHouse server is sent its bytes into a text
table, and both fill the stage through the same checked SELECT (``checked_select``).
"""
from __future__ import annotations

import csv
import functools
import glob
import gzip
import hashlib
import logging
import uuid
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from base.errors import InputError, first_line
from collector.records import GPU_SAMPLE_COLUMNS
from ingest import badrows, limits
from ingest.store import STAGE_PREFIX
from ingest.writer import READ_SETTINGS, file_format, split_valid

log = logging.getLogger(__name__)

TABLE = "gpu_samples"
KEY = ("host", "gpu_uuid", "mig_instance", "ts")      # what makes a sample row the same row
INTENT = "samples:loading"                           # ingested_files kind of a load under way
REQUIRED = ("ts", "host", "gpu_uuid")
PROM_SUFFIXES = (".prom", ".txt")
FUTURE_LIMIT = limits.FUTURE_LIMIT                   # how far ahead of the load a sample's ts may be
ACCEPTED_TS = limits.ACCEPTED_TS
# a stage holds one file: its days may be many (a backfill), and numbers are read as text and checked
FILL_SETTINGS = {**READ_SETTINGS, "max_partitions_per_insert_block": 0,
                 "input_format_json_read_numbers_as_strings": 1, "input_format_json_read_bools_as_strings": 1}
_LINE_KIND = {"CSVWithNames": "csv", "TSVWithNames": "tsv", "JSONEachRow": "json"}
SUFFIXES = (".csv", ".csv.gz", ".parquet", ".tsv", ".tsv.gz", ".jsonl", ".jsonl.gz", ".xml") + PROM_SUFFIXES


@dataclass
class LoadReport:
    files_loaded: int = 0
    files_skipped: int = 0
    rows: int = 0
    duplicates: int = 0          # rows dropped because the same sample came earlier in the same file
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


def record_loaded(store, kind: str, path: Path | str, digest: str, rows: int) -> None:
    store.insert("ingested_files", [[kind, str(path), digest, rows]], ["kind", "path", "sha256", "rows"])


def ingest_samples(store, paths: Iterable[str | Path], progress: Callable[[str], None] = log.info,
                   force: bool = False, names: dict[str, str] | None = None, host: str | None = None) -> LoadReport:
    """Load sample files into gpu_samples; see the module docstring for the rules. ``names`` maps
    a path to the name ``ingested_files`` records for it (a file uploaded to the platform is
    recorded under the name it was sent with, not its temporary copy's). ``host`` names the host
    of nvidia-smi files and of exporters' .prom files that do not name it themselves; other files
    ignore it."""
    files = expand(paths)
    names = names or {}
    types = store.column_types(TABLE)
    report = LoadReport()
    for number, path in enumerate(files, 1):
        smi = nvidia_smi_kind(path)
        records = read_nvidia_smi(path, smi, host) if smi else None
        promtext = not smi and path.name.lower().endswith(PROM_SUFFIXES)
        if not promtext and not smi:
            fmt = file_format(path)
            limits.check_lines(path, _LINE_KIND.get(fmt, ""), functools.partial(header, path, fmt))
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
            progress(f"[{number}/{len(files)}] {path}: an earlier load of it did not finish; loading it again "
                     "(rows it may have stored are not stored twice)")
        record_loaded(store, INTENT, names.get(str(path), path), digest, 0)
        label = f"[{number}/{len(files)}] {path}"
        if smi:
            rows, repeats = load_records(store, path, records, repair)
        elif promtext:
            rows, repeats = load_promtext(store, path, repair, host)
        else:
            rows, repeats = load_one(store, path, fmt, columns, types, repair, days_progress(progress, label))
        record_loaded(store, "samples", names.get(str(path), path), digest, rows)
        report.files_loaded += 1
        report.rows += rows
        report.duplicates += repeats
        dropped = f" ({repeats:,} repeated rows dropped)" if repeats else ""
        progress(f"{label}: {rows:,} rows{dropped}")
    return report


def days_progress(progress: Callable[[str], None], label: str, every: int = 50) -> Callable[[int, int], None]:
    """A ``Stage.attach_to`` progress callback that reports every ``every`` days of a long file."""
    def report(done: int, total: int) -> None:
        if total > every and (done % every == 0 or done == total):
            progress(f"{label}: attached {done}/{total} days")
    return report


def load_one(store, path: Path, fmt: str, columns: list[str], types: dict[str, str], repair=(),
             progress: Callable[[int, int], None] | None = None) -> tuple[int, int]:
    """Load one CSV/TSV/JSONL/Parquet file all-or-nothing; return (rows stored, repeats dropped)."""
    read = read_types(path, fmt, columns, types)
    horizon = (datetime.now(timezone.utc) + FUTURE_LIMIT).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    try:
        with store.staging(TABLE) as stage:
            fill(store, stage, path, fmt, columns, types, read)
            keys = ", ".join(KEY)
            rows, unique, ahead = store.rows(f"SELECT count(), uniqExact({keys}), countIf(ts > {{h:DateTime64(3, 'UTC')}}) "
                                             f"FROM `{stage.name}`", {"h": horizon})[0]
            if ahead:
                row = first_row_ahead(store, path, fmt, columns, types, read, horizon)
                raise InputError(f"{ahead:,} row(s) have a ts more than {FUTURE_LIMIT.days} day ahead of now ({ACCEPTED_TS}); "
                                 "nothing from this file was stored", path=str(path), row=row, column="ts")
            repeats = stage.drop_repeats(KEY) if unique != rows else 0
            stage.attach_to(unless_stored=repair, progress=progress)
            return int(rows) - repeats, repeats
    except InputError:
        raise
    except Exception as exc:
        if not hasattr(exc, "code") and "DB::Exception" not in str(exc):
            raise
        found = badrows.locate(store, TABLE, path, fmt, columns, types) if store.target.embedded else None
        if found:
            row, column, reason = found
            accepted = f" ({ACCEPTED_TS})" if column == "ts" else ""
            raise InputError(f"{reason}{accepted}; nothing from this file was stored",
                             path=str(path), row=row, column=column) from None
        raise InputError(f"ClickHouse refused the file ({first_line(exc)}); nothing from this file was stored", path=str(path)) from None


def read_types(path: Path, fmt: str, columns: list[str], types: dict[str, str]) -> dict[str, str]:
    """The type each column is read from the file as: the table's own where no value can change on
    the way (text columns, Parquet date-times, Parquet numbers into a float or the same type);
    otherwise text (CSV, TSV, JSON, Parquet text) or the Parquet column's own number type, which
    ``checked`` converts."""
    schema = None
    if fmt == "Parquet":
        import pyarrow.parquet as pq

        schema = pq.read_schema(path)
    read = {}
    for c in columns:
        base = badrows.base_type(types[c])
        source = _parquet_type(schema.field(c).type) if schema is not None else None
        if base == "String" or source == base or (source == "DateTime" and base.startswith("DateTime")) \
                or (source and source != "DateTime" and base.startswith("Float")):
            read[c] = types[c]
        elif source and source != "DateTime" and not base.startswith("DateTime"):
            read[c] = f"Nullable({source})"
        else:
            read[c] = "Nullable(String)"
    return read


def _parquet_type(arrow_type) -> str | None:
    import pyarrow as pa

    if pa.types.is_timestamp(arrow_type) or pa.types.is_date(arrow_type):
        return "DateTime"
    if pa.types.is_integer(arrow_type):
        return f"{'U' if pa.types.is_unsigned_integer(arrow_type) else ''}Int{arrow_type.bit_width}"
    if pa.types.is_floating(arrow_type):
        return "Float64" if arrow_type.bit_width == 64 else "Float32"
    return None


def parsed(column: str, ch_type: str) -> str:
    """``column`` (read as text or a number) as ``ch_type``, NULL where it cannot be: the rule
    badrows.locate names rows by."""
    base = badrows.base_type(ch_type)
    if base.startswith("DateTime64"):
        return f"parseDateTime64BestEffortOrNull(`{column}`, 3, 'UTC')"
    return f"accurateCastOrNull(`{column}`, '{base}')"


def checked(column: str, ch_type: str, read_type: str) -> str:
    """``parsed``, but a value that is given and cannot be read stops the insert."""
    value = parsed(column, ch_type)
    given = f"ifNull(`{column}`, '') != ''" if read_type == "Nullable(String)" else f"`{column}` IS NOT NULL"
    message = f"a value in column {column} cannot be read as {badrows.base_type(ch_type).split('(')[0]}"
    return f"if(throwIf({given} AND {value} IS NULL, '{message}') = 0, {value}, NULL)"


def read_structure(columns: list[str], read: dict[str, str]) -> str:
    return ", ".join(f"`{c}` {read[c]}" for c in columns)


def checked_select(columns: list[str], types: dict[str, str], read: dict[str, str]) -> str:
    """The SELECT list turning columns read as ``read`` into ``types``: numbers and times through
    ``checked``, text held to its length (``ingest.limits``); a value that fails stops the insert.
    Every fill uses it, whatever the store."""
    def one(c: str) -> str:
        if badrows.base_type(types[c]) == "String":
            limit = limits.max_bytes(c)
            return f"if(throwIf(length(`{c}`) > {limit}, 'a value in column {c} is over {limit} bytes') = 0, `{c}`, '') AS `{c}`"
        return f"`{c}`" if read[c] == types[c] else f"{checked(c, types[c], read[c])} AS `{c}`"
    return ", ".join(one(c) for c in columns)


def fill(store, stage, path: Path, fmt: str, columns: list[str], types: dict[str, str], read: dict[str, str]) -> None:
    """Fill the stage from the file through ``checked_select``. Embedded stores read it in-process;
    servers are sent its bytes (``fill_sent``)."""
    if store.target.embedded:
        stage.fill(f"SELECT {checked_select(columns, types, read)} FROM file({{path:String}}, {{fmt:String}}, {{structure:String}})",
                   parameters={"path": str(path.resolve()), "fmt": fmt, "structure": read_structure(columns, read)},
                   settings=FILL_SETTINGS, columns=columns)
    else:
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        fill_sent(store, stage, data, fmt, columns, types, read, path)


def fill_sent(store, stage, data: bytes, fmt: str, columns: list[str], types: dict[str, str], read: dict[str, str],
              path: Path) -> None:
    """Fill the stage from a file's bytes sent to the store (the path for a ClickHouse server; it
    works on any store): the bytes go into a text table with the ``read`` structure, then into the
    stage through ``checked_select``, like a file read in-process. A refused value is named by row
    and column (InputError)."""
    with text_table(store, read_structure(columns, read)) as name:
        store.client.raw_insert(name, list(columns), insert_block=data, fmt=fmt, settings=FILL_SETTINGS)
        try:
            stage.fill(f"SELECT {checked_select(columns, types, read)} FROM `{name}`", settings=FILL_SETTINGS,
                       columns=columns)
        except Exception as exc:
            if not hasattr(exc, "code") and "DB::Exception" not in str(exc):
                raise
            found = badrows.locate_in(store, TABLE, name, columns, types)
            if not found:
                raise
            row, column, reason = found
            accepted = f" ({ACCEPTED_TS})" if column == "ts" else ""
            raise InputError(f"{reason}{accepted}; nothing from this file was stored",
                             path=str(path), row=row, column=column) from None


@contextmanager
def text_table(store, structure: str):
    """A table (Memory: rows stay in the order inserted) with ``structure``, dropped after use."""
    name = f"{STAGE_PREFIX}text_{uuid.uuid4().hex[:12]}"
    store.command(f"CREATE TABLE `{name}` ({structure}) ENGINE = Memory")
    try:
        yield name
    finally:
        store.command(f"DROP TABLE IF EXISTS `{name}`")


def first_row_ahead(store, path: Path, fmt: str, columns: list[str], types: dict[str, str], read: dict[str, str],
                    horizon: str) -> int | None:
    """The 1-based row of the file's first ts beyond ``horizon`` (embedded stores only)."""
    if not store.target.embedded:
        return None
    ts = "`ts`" if read["ts"] == types["ts"] else parsed("ts", types["ts"])
    rows = store.client.query(
        f"SELECT row FROM (SELECT rowNumberInAllBlocks() + 1 AS row, {ts} AS t "
        "FROM file({path:String}, {fmt:String}, {structure:String})) WHERE t > {h:DateTime64(3, 'UTC')} ORDER BY row LIMIT 1",
        parameters={"path": str(path.resolve()), "fmt": fmt, "structure": read_structure(columns, read), "h": horizon},
        settings={**FILL_SETTINGS, "max_threads": 1, "input_format_parallel_parsing": 0, "input_format_skip_unknown_fields": 1},
    ).result_rows
    return int(rows[0][0]) if rows else None


def load_promtext(store, path: Path, repair=(), host: str | None = None) -> tuple[int, int]:
    """Load one Prometheus text exposition file all-or-nothing; return (rows stored, repeats dropped):
    a GPU entity at one ``ts`` (a line repeated, two saved scrapes without timestamps) is stored
    once, the last one read. Series of an exporter in ``collector.exporters`` are read with its
    mapping, on ``host``."""
    from collector import exporters
    from collector.dcgm import GPULEDGER
    from collector.promtext import PromTextError, parse
    from collector.sample_mapping import samples_to_records

    limits.check_lines(path, "prom")
    try:
        text = path.read_text(encoding="utf-8")
        when = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
        samples = parse(text).samples
        records = samples_to_records(samples, GPULEDGER, when, defaults={"host": ""}, source="import")
        exporter = exporters.recognise(samples)
        if exporter:
            if not host:
                raise InputError(f"{exporter} files do not name their host: pass --host NAME", path=str(path))
            records += samples_to_records(samples, exporters.EXPORTERS[exporter], when, defaults={"host": host},
                                          source="import")
    except PromTextError as exc:
        raise InputError(f"not Prometheus text exposition ({exc}); nothing from this file was stored",
                         path=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the file ({exc})", path=str(path)) from None
    if not records:
        raise InputError("no GPU samples found: expected dcgm-exporter, gpuledger or nvidia_gpu_exporter metrics "
                         "with a UUID label",
                         path=str(path))
    nameless = next((r for r in records if not r.host), None)
    if nameless is not None:
        raise InputError(f"GPU {nameless.gpu_uuid} has no Hostname label, so its host is unknown; "
                         "nothing from this file was stored", path=str(path))
    return load_records(store, path, records, repair)


def load_records(store, path: Path, records: list, repair=()) -> tuple[int, int]:
    """Load one file's GpuSample records all-or-nothing, each checked against its column; return
    (rows stored, repeats dropped): a GPU entity at one ``ts`` is stored once, the last one read."""
    from collector.records import as_row
    from collector.sample_mapping import one_per_sample
    from ingest.writer import insert_rows

    unique = one_per_sample(records)
    rows = [as_row(r) for r in unique]
    _, problems = split_valid(store.column_types(TABLE), GPU_SAMPLE_COLUMNS, rows)
    if problems:
        bad, r = problems[0], unique[problems[0].row]
        accepted = f" ({ACCEPTED_TS})" if bad.column == "ts" and ACCEPTED_TS not in bad.reason else ""
        raise InputError(f"GPU {r.gpu_uuid[:80]} on {r.host[:80]} at {r.ts.isoformat()}: {bad.reason}{accepted} "
                         f"({len(problems)} sample(s) refused); nothing from this file was stored",
                         path=str(path), column=bad.column)
    with store.staging(TABLE) as stage:
        try:
            insert_rows(store, stage.name, GPU_SAMPLE_COLUMNS, rows)
        except Exception as exc:
            if "DB::Exception" not in str(exc) and not hasattr(exc, "code"):
                raise
            raise InputError(f"ClickHouse refused the samples ({first_line(exc)}); nothing from this file was stored",
                             path=str(path)) from None
        stage.attach_to(unless_stored=repair)
        return len(unique), len(records) - len(unique)


def nvidia_smi_kind(path: Path) -> str | None:
    """``"query-csv"`` or ``"xml"`` when the file is nvidia-smi output (``collector.nvidia_smi.sniff``,
    by its first line, whatever its name), else None: the file is read as before."""
    from collector.nvidia_smi import sniff

    name = path.name.lower()
    if name.endswith((".parquet", ".jsonl", ".jsonl.gz", ".tsv", ".tsv.gz")):
        return None
    try:
        opener = gzip.open if name.endswith(".gz") else open
        with opener(path, "rb") as handle:
            head = handle.read(4096)
    except (OSError, EOFError):
        return None        # read as before: its own reader says what is wrong
    return sniff(head.decode("utf-8", errors="replace"))


def read_nvidia_smi(path: Path, kind: str, host: str | None) -> list:
    """The records of an nvidia-smi file (``kind`` from ``nvidia_smi_kind``); InputError naming the
    file for anything unreadable, or when no host is known (``--host``)."""
    from collector import nvidia_smi

    if kind == "query-csv":
        limits.check_lines(path, "csv")
    try:
        opener = gzip.open if path.name.lower().endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8-sig") as handle:
            text = handle.read()
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the file ({exc})", path=str(path)) from None
    if kind == "xml":
        records = nvidia_smi.records_from_xml(text, host=host, path=str(path))
    else:
        records = nvidia_smi.records_from_query_csv(text, host=host, path=str(path))
    if not records:
        raise InputError("no GPU samples found in this nvidia-smi output", path=str(path))
    return records
