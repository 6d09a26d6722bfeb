"""Reading provider files into text tables (pandas DataFrames of str / None), no ClickHouse.

Every value stays text so the store parses it (and quarantines what it cannot); nested
Parquet / JSON values (maps, structs, lists) become JSON text.
"""
from __future__ import annotations

import csv
import gzip
import json
import zlib
from pathlib import Path

from base.errors import InputError


def read_csv(path: Path, label: str | None = None):
    """A CSV (plain or .gz, UTF-8 with or without BOM) as text; blank lines skipped."""
    import pandas as pd

    label = label or str(path)
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig", skip_blank_lines=True,
                            compression="infer")
    except UnicodeDecodeError as exc:
        raise InputError(f"is not UTF-8 text ({exc.reason}); export it as UTF-8 CSV", path=label) from None
    except (EOFError, OSError, zlib.error) as exc:
        raise InputError(f"cannot be read to the end ({exc}); a .gz file may be truncated", path=label) from None
    except pd.errors.EmptyDataError:
        raise InputError("the file is empty: expected a header row", path=label) from None
    except (pd.errors.ParserError, csv.Error) as exc:
        raise InputError(f"is not valid CSV ({str(exc).strip()})", path=label) from None
    frame.columns = [str(c).strip().lstrip("\ufeff") for c in frame.columns]
    frame["source_row"] = range(1, len(frame) + 1)
    return frame


def read_parquet(path: Path, label: str | None = None):
    """A Parquet file as text columns (nested values as JSON)."""
    import pyarrow.parquet as pq

    label = label or str(path)
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow's own error classes
        raise InputError(f"not a readable Parquet file ({exc})", path=label) from None
    frame = table.to_pandas(types_mapper=None)
    for col in frame.columns:
        frame[col] = [_text(v) for v in frame[col]]
    frame["source_row"] = range(1, len(frame) + 1)
    return frame


def read_json_rows(path: Path, label: str | None = None) -> list[dict]:
    """Newline-delimited JSON (or one JSON array) of objects, plain or .gz."""
    label = label or str(path)
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8-sig") as handle:
            text = handle.read()
    except UnicodeDecodeError as exc:
        raise InputError(f"is not UTF-8 text ({exc.reason})", path=label) from None
    except (EOFError, OSError, zlib.error) as exc:
        raise InputError(f"cannot be read to the end ({exc}); a .gz file may be truncated", path=label) from None
    if not text.strip():
        raise InputError("the file is empty", path=label)
    if text.lstrip().startswith("["):
        try:
            return json.loads(text)
        except ValueError as exc:
            raise InputError(f"is not valid JSON ({exc})", path=label) from None
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except ValueError as exc:
                raise InputError(f"is not valid JSON ({exc})", path=label, row=number) from None
    return rows


def _text(value):
    if value is None:
        return None
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, (dict, list, tuple)) or type(value).__name__ == "ndarray":
        return json.dumps(_plain(value), default=str)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def _plain(value):
    if type(value).__name__ == "ndarray":
        value = value.tolist()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        # pyarrow gives Map columns as lists of (key, value) pairs
        if value and all(isinstance(i, tuple) and len(i) == 2 for i in value):
            return {k: _plain(v) for k, v in value}
        return [_plain(v) for v in value]
    return value
