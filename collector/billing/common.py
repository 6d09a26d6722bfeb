"""Helpers shared by the provider adapters: column lookup, text values, dates, tag JSON."""
from __future__ import annotations

import decimal
import json
import re

import pandas as pd

from collector.billing.focus import COLUMNS


def col(frame: pd.DataFrame, *names: str) -> pd.Series:
    """The first of ``names`` present (as text, '' when absent from the file)."""
    for name in names:
        if name in frame.columns:
            return frame[name].astype(object).where(frame[name].notna(), "").astype(str)
    return pd.Series([""] * len(frame), index=frame.index, dtype=object)


def has(frame: pd.DataFrame, name: str) -> bool:
    return name in frame.columns


def number(series: pd.Series) -> pd.Series:
    return pd.to_numeric(series.str.strip().replace("", None), errors="coerce")


def text_of(values: pd.Series) -> pd.Series:
    """Numbers back to text without float noise; NaN -> ''."""
    return values.map(lambda v: "" if pd.isna(v) else repr(float(v)))


def times(a: pd.Series, b: pd.Series) -> pd.Series:
    """The exact product of two columns of decimal text, as text; '' where either is blank or not a number."""
    def one(x: str, y: str) -> str:
        try:
            product = decimal.Decimal(x.strip()) * decimal.Decimal(y.strip())
        except decimal.InvalidOperation:
            return ""
        return format(product, "f") if product.is_finite() else ""

    with decimal.localcontext(decimal.Context(prec=100)):
        return pd.Series([one(x, y) for x, y in zip(a, b)], index=a.index, dtype=object)


def pick(condition: pd.Series, when_true: pd.Series, when_false: pd.Series) -> pd.Series:
    return when_true.where(condition, when_false)


def lookup(series: pd.Series, table: dict[str, str], default: str | None = None) -> pd.Series:
    """Map values through ``table``; unknown values become ``default`` (or stay as they are)."""
    return series.map(lambda v: table.get(v, v if default is None else default))


def dates(series: pd.Series, formats: tuple[str, ...], shift_days: int = 0) -> pd.Series:
    """Parse dates in any of ``formats`` to ISO text (UTC); values no format reads pass through as given."""
    out = pd.Series([pd.NaT] * len(series), index=series.index, dtype="datetime64[ns]")
    for fmt in formats:
        parsed = pd.to_datetime(series, format=fmt, errors="coerce")
        out = out.fillna(parsed)
    if shift_days:
        out = out + pd.Timedelta(days=shift_days)
    iso = out.dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    return iso.where(out.notna(), series)


def tags_json(frame: pd.DataFrame, prefixes: dict[str, str]) -> pd.Series:
    """Tags from columns named ``<prefix><key>`` as a JSON object per row (``prefixes``: prefix -> key prefix kept)."""
    tag_cols = []
    for c in frame.columns:
        for p, keep in sorted(prefixes.items(), key=lambda kv: -len(kv[0])):  # longest prefix wins
            if c.startswith(p):
                tag_cols.append((c, keep + c[len(p):]))
                break
    if not tag_cols:
        return pd.Series([""] * len(frame), index=frame.index, dtype=object)
    values = frame[[c for c, _ in tag_cols]].astype(object).where(frame[[c for c, _ in tag_cols]].notna(), "")
    keys = [k for _, k in tag_cols]
    return pd.Series([json.dumps({k: v for k, v in zip(keys, row) if v != ""}) if any(row) else ""
                      for row in values.itertuples(index=False, name=None)], index=frame.index, dtype=object)


def extensions(frame: pd.DataFrame, used: set[str], extra: dict[str, pd.Series] | None = None) -> list[dict]:
    """Every source column no FOCUS column was made from, as ``x_<name>``, plus ``extra``."""
    rest = [c for c in frame.columns if c not in used and c != "source_row"]
    names = ["x_" + re.sub(r"[^A-Za-z0-9_:.]+", "_", c) for c in rest]
    values = frame[rest].astype(object).where(frame[rest].notna(), "") if rest else None
    extra = extra or {}
    extra_values = list(zip(*extra.values())) if extra else None
    rows = values.to_numpy().tolist() if values is not None else [[] for _ in range(len(frame))]
    out = []
    for i, row in enumerate(rows):
        d = {n: str(v) for n, v in zip(names, row) if v != ""}
        if extra_values:
            d.update({k: v for k, v in zip(extra.keys(), extra_values[i]) if v not in ("", None)})
        out.append(d)
    return out


def focus_frame(columns: dict[str, pd.Series], frame: pd.DataFrame, ext: list[dict]) -> pd.DataFrame:
    """Assemble the FOCUS text frame an adapter returns ('' -> None; unknown names refused)."""
    unknown = set(columns) - set(COLUMNS)
    if unknown:
        raise ValueError(f"adapter produced non-FOCUS columns {sorted(unknown)}")
    out = pd.DataFrame({name: series.astype(object).where(series.astype(str) != "", None)
                        for name, series in columns.items()}, index=frame.index)
    out["x_extensions"] = ext
    out["source_row"] = frame["source_row"].values if "source_row" in frame else range(1, len(frame) + 1)
    return out.reset_index(drop=True)
