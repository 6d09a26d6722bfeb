"""Getting one input's rows in front of the staging SELECT (see ``ingest.billing.stage``).

Two ways in, same result:

* ``file_source`` — ClickHouse reads a local FOCUS CSV / CSV.gz / Parquet file itself
  (embedded store): every column as text, by position, so odd headers (BOM, case, duplicates)
  never confuse it. Blank lines are counted as rows and skipped.
* ``frame_source`` — rows already in Python (provider adapters, API pulls, S3 objects on a
  server store, and CSV that ClickHouse could not split into rows) are inserted as text.
"""
from __future__ import annotations

import csv
import gzip
import logging
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from base.errors import InputError
from collector.billing.focus import COLUMNS, MISSING, HeaderMatch
from ingest.billing.stage import ROW_ERROR, lit, q

log = logging.getLogger(__name__)

CSV_SETTINGS = {
    "input_format_csv_skip_first_lines": 1,
    "input_format_csv_allow_variable_number_of_columns": 1,
    "input_format_csv_empty_as_default": 1,
    "input_format_csv_trim_whitespaces": 1,
    # read with pread, not mmap: a mapped file counts in the process's resident memory
    "storage_file_read_method": "pread",
    # smaller insert blocks: peak memory ~1.3 GB instead of ~1.7 GB on a 1M-row file
    "min_insert_block_size_bytes": 64 << 20,
}


MAX_HEADER = 1 << 20   # bytes: a header row longer than this is refused


def kind_of(path: str) -> str:
    """'csv' or 'parquet' from a file name (``.csv``, ``.csv.gz``, ``.parquet``, ``.snappy.parquet``)."""
    name = path.lower()
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".csv", ".csv.gz", ".csv.zst", ".csv.zip")) or name.endswith(".gz"):
        return "csv"
    raise InputError("unknown file type: expected .csv, .csv.gz or .parquet", path=path)


def read_header(path: Path) -> list[str]:
    """The header row of a CSV (plain or gzip) or the column names of a Parquet file."""
    if kind_of(str(path)) == "parquet":
        import pyarrow.parquet as pq

        try:
            return list(pq.read_schema(path).names)
        except Exception as exc:  # pyarrow raises its own error types for corrupt files
            raise InputError(f"not a readable Parquet file ({exc})", path=str(path)) from None
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rb") as handle:
            head = handle.read(1 << 16)
            while b"\n" not in head and len(head) < MAX_HEADER:
                more = handle.read(1 << 16)
                if not more:
                    break
                head += more
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"cannot be read ({exc}); if it is gzip, it is truncated or corrupt", path=str(path)) from None
    if not head.strip():
        raise InputError("the file is empty: expected a header row naming FOCUS columns", path=str(path))
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in head[:200]:
        raise InputError("the file is UTF-16 text; save or export it as UTF-8 CSV and load it again", path=str(path))
    first = head.split(b"\n", 1)[0]
    if b"\n" not in head and len(head) >= MAX_HEADER:
        raise InputError(f"the header row is longer than {MAX_HEADER >> 20} MiB: not a billing export", path=str(path))
    try:
        text = first.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError("the header is not UTF-8 text; export the file as UTF-8 CSV", path=str(path)) from None
    try:
        return next(csv.reader([text.rstrip("\r")]), [])
    except csv.Error as exc:
        raise InputError(f"the header row is not valid CSV ({exc})", path=str(path)) from None


CHUNK = 1 << 22


def check_complete(path: Path, width: int) -> None:
    """Refuse a CSV (plain or gzip) that ends mid-record: truncated, or with an unterminated quote.

    One pass over the bytes: an odd number of quote characters means a quoted field is never
    closed; a last line without a line break must hold as many fields as the header. (A file
    cut exactly between two records cannot be told from a complete one.)
    """
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    quotes = newlines = 0
    tail = b""          # what follows the last line break so far (bounded)
    try:
        with opener(path, "rb") as handle:
            while chunk := handle.read(CHUNK):
                quotes += chunk.count(b'"')
                newlines += chunk.count(b"\n")
                cut = chunk.rfind(b"\n")
                tail = chunk[cut + 1:] if cut >= 0 else (tail + chunk)[-(1 << 20):]
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"cannot be read to the end ({exc}); if it is gzip, it is truncated or corrupt",
                         path=str(path)) from None
    last_line = newlines + (1 if tail else 0)
    if quotes % 2:
        line = _quote_error_line(path) or last_line
        where = ("so the file ends mid-record: it looks truncated" if line >= last_line
                 else "its quoting is broken")
        raise InputError(f"line {line}: unterminated quote (the quote characters do not pair up: a quoted field is "
                         f"never closed), {where}. Nothing was loaded; the stored months are unchanged", path=str(path))
    if not tail.strip() or tail.count(b'"') % 2:
        return
    try:
        fields = next(csv.reader([tail.decode("utf-8", "replace").rstrip("\r")]), [])
    except csv.Error:
        return          # the readers name what is wrong with this row
    if len(fields) < width:
        raise InputError(f"line {last_line}: the file ends mid-record (the last row has {len(fields)} of the header's "
                         f"{width} fields and no line break): it looks truncated. Nothing was loaded; the stored months "
                         "are unchanged", path=str(path))


def _quote_error_line(path: Path) -> int | None:
    """The line where Python's CSV reader finds the broken quoting, if it does."""
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace", newline="") as handle:
        reader = csv.reader(handle, strict=True)
        try:
            for _ in reader:
                pass
        except csv.Error:
            return reader.line_num
    return None


@dataclass
class Source:
    """An input as ClickHouse sees it: a subquery giving source_row, x_extensions and FOCUS text."""

    sql: str
    present: set[str]
    parameters: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)


def file_source(store, path: Path, match: HeaderMatch) -> Source:
    """ClickHouse reads ``path`` itself (embedded store only): CSV by position, or Parquet."""
    params = {"path": str(path.resolve())}
    if kind_of(str(path)) == "parquet":
        types = {r[0]: r[1] for r in store.rows("DESCRIBE file({path:String}, 'Parquet')", params)}
        text = [_parquet_text(q(n), types[n]) for n in types]
        source = "file({path:String}, 'Parquet')"
        settings = {}
    else:
        text = [f"c{i}" for i in range(len(match.columns))]
        # one column more than the header: a row with extra fields fills it and is quarantined
        structure = ", ".join(f"c{i} String" for i in range(len(match.columns))) + ", c_extra String"
        source = f"file({{path:String}}, 'CSV', {lit(structure)})"
        settings = dict(CSV_SETTINGS)
        row_error = "if(c_extra != '', 'the row has more fields than the header', '')"
    select, where = _select(text, match, row_error if kind_of(str(path)) == "csv" else None)
    return Source(f"(SELECT _row_number + 1 AS source_row, {select} FROM {source} {where})",
                  {c for c in match.columns if c in COLUMNS}, params, settings)


def frame_source(store, table: str, frame) -> Source:
    """Insert a DataFrame of FOCUS text columns (+ ``x_extensions`` dicts, ``source_row``) into ``table``."""
    from ingest.billing.stage import text_table_ddl

    store.command(text_table_ddl(table))
    present = {c for c in frame.columns if c in COLUMNS}
    if len(frame):
        frame = frame.copy()
        for col in present:
            frame[col] = [None if v is None or v != v else str(v).strip() for v in frame[col]]
        if "x_extensions" not in frame:
            frame["x_extensions"] = [{} for _ in range(len(frame))]
        else:
            frame["x_extensions"] = [
                {str(k): str(v).strip() for k, v in (d or {}).items() if v is not None and str(v).strip() not in MISSING}
                for d in frame["x_extensions"]]
        if "source_row" not in frame:
            frame["source_row"] = range(1, len(frame) + 1)
        store.insert(table, frame[["source_row", "x_extensions", *sorted(present)]])
    return Source(table, present)


def _parquet_text(col: str, ch_type: str) -> str:
    if ch_type.startswith(("Map(", "Tuple(", "Array(", "Nullable(Map", "Nullable(Tuple")) or ch_type.startswith("JSON"):
        return f"toJSONString({col})"
    return f"toString({col})"


def _select(text: list[str], match: HeaderMatch, row_error: str | None = None) -> tuple[str, str]:
    """Column expressions for the pipeline input from per-position text expressions."""
    position = {}
    for i, name in enumerate(match.columns):
        position.setdefault(name, i)
    parts = [f"{text[position[c]]} AS {q(c)}" if c in position else f"NULL AS {q(c)}" for c in COLUMNS]
    ext = [f"{lit(name)}, {text[position[name]]}" for name in match.extensions]
    if row_error:
        ext.append(f"{lit(ROW_ERROR)}, {row_error}")
    missing = ", ".join(lit(m) for m in MISSING)
    parts.append(f"mapFilter((k, v) -> v NOT IN ({missing}), map({', '.join(ext)})) AS x_extensions" if ext
                 else "map() AS x_extensions")
    where = "WHERE NOT (" + " AND ".join(f"ifNull({t}, '') = ''" for t in text) + ")"
    return ",\n    ".join(parts), where


def csv_frame(path: Path, match: HeaderMatch):
    """Read a CSV in Python, row by row, for files ClickHouse could not split into rows.

    A row whose number of fields differs from the header's goes to quarantine (column ``(row)``)
    rather than loading with its values shifted.
    """
    import pandas as pd

    opener = gzip.open if path.name.lower().endswith(".gz") else open
    records, rows = [], []
    width = len(match.columns)
    try:
        with opener(path, "rt", encoding="utf-8-sig", newline="", errors="strict") as handle:
            reader = csv.reader(handle, strict=True)
            next(reader, None)
            for number, fields in enumerate(reader, 1):
                if not any(f.strip() for f in fields):
                    continue
                record = dict(zip(match.columns, fields))
                ext = {name: record.pop(name) for name in match.extensions if name in record}
                if len(fields) != width:
                    ext[ROW_ERROR] = f"the row has {len(fields)} fields, the header {width}"
                record["x_extensions"] = ext
                records.append(record)
                rows.append(number)
    except UnicodeDecodeError as exc:
        raise InputError(f"is not UTF-8 text ({exc.reason} at byte {exc.start}); export it as UTF-8 CSV",
                         path=str(path)) from None
    except (EOFError, OSError, zlib.error) as exc:
        raise InputError(f"cannot be read to the end ({exc}); if it is gzip, it is truncated or corrupt",
                         path=str(path)) from None
    except csv.Error as exc:
        raise InputError(f"is not valid CSV ({exc}); check quoting around row {len(rows) + 1}",
                         path=str(path), row=len(rows) + 1) from None
    frame = pd.DataFrame.from_records(records, columns=[*dict.fromkeys(c for c in match.columns if c in COLUMNS), "x_extensions"])
    frame["source_row"] = rows
    return frame


def first_error_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [""])[0][:300]
