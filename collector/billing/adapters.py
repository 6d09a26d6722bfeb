"""Which adapter reads a file, and reading it: sniffing formats, header checks, dispatch.

Formats: ``focus`` (read by the store itself), ``aws-cur``, ``azure`` (actual or amortized,
told apart by file name or Unused* charges), ``azure-actual``, ``azure-amortized``, ``gcp``,
``oci`` (OCI's native cost report, or its FOCUS report with ``oci_…`` columns).
"""
from __future__ import annotations

from pathlib import Path

from base.errors import InputError
from collector.billing import aws_cur, azure, gcp, oci, tables
from collector.billing.focus import COLUMNS, HeaderMatch

SOURCE_KIND = {"focus": "focus", "aws-cur": "aws-cur", "azure": "azure-export", "azure-actual": "azure-actual",
               "azure-amortized": "azure-amortized", "gcp": "gcp-export", "oci": "oci-export"}


def sniff(header: list[str]) -> str | None:
    """The format a header belongs to, or None."""
    names = {h.strip().lstrip("\ufeff") for h in header}
    lower = {n.lower() for n in names}
    if {aws_cur.cur2_name(n) for n in names} & {"line_item_unblended_cost", "line_item_line_item_type"}:
        return "aws-cur"
    if oci.is_cost_report(header) or oci.is_focus_report(header):
        return "oci"
    if "MeterCategory" in names or ("ChargeType" in names and names & set(azure.COST)):
        return "azure"
    if {"billing_account_id", "cost"} <= lower and ({"usage_start_time"} & lower):
        return "gcp"
    # FOCUS: most FOCUS names present (a FOCUS file missing a required column is still FOCUS,
    # and is then refused naming what is missing)
    if {"billedcost", "chargeperiodstart"} <= lower or len(lower & {c.lower() for c in COLUMNS}) >= 4:
        return "focus"
    return None


def check_header(kind: str, header: list[str], label: str) -> None:
    """Refuse a native file missing the columns its adapter cannot do without."""
    names = {h.strip().lstrip("\ufeff") for h in header}
    if kind == "aws-cur":
        present = {aws_cur.cur2_name(n) for n in names}
        missing = [c for c in aws_cur.REQUIRED if c not in present]
    elif kind.startswith("azure"):
        missing = [c for c in azure.REQUIRED if c not in names]
        if not names & set(azure.COST):
            missing.append(" or ".join(azure.COST))
    elif kind == "gcp":
        flat = {n.replace(".", "_") for n in names}
        missing = [c for c in gcp.REQUIRED if c not in flat]
    elif kind == "oci":
        missing = oci.missing_columns(header)
    else:
        raise InputError(f"unknown billing format {kind!r}", path=label)
    if missing:
        raise InputError(f"not a complete {kind} file: missing column(s) {', '.join(missing)}. Nothing was loaded",
                         path=label)


def read_native(path: Path, kind: str, label: str):
    """The FOCUS text frame of a provider-native file."""
    name = path.name.lower()
    if kind == "gcp":
        if name.endswith((".json", ".jsonl", ".json.gz", ".jsonl.gz")):
            rows = tables.read_json_rows(path, label)
            missing = [c for c in gcp.REQUIRED if rows and c not in rows[0]]
            if missing:
                raise InputError(f"not GCP billing export rows: missing field(s) {', '.join(missing)}", path=label)
            return gcp.to_focus(gcp.frame_from_rows(rows))
        if name.endswith(".parquet"):
            import pyarrow.parquet as pq

            return gcp.to_focus(gcp.frame_from_rows(pq.read_table(path).to_pylist()))
        return gcp.to_focus(tables.read_csv(path, label))
    frame = tables.read_parquet(path, label) if name.endswith(".parquet") else tables.read_csv(path, label)
    if kind == "aws-cur":
        return aws_cur.to_focus(frame)
    if kind == "oci":
        return oci.to_focus(frame)
    amortized = kind == "azure-amortized" or (kind == "azure" and azure.is_amortized(frame, label))
    return azure.to_focus(frame, amortized=amortized)


def read_focus_parquet(path: Path, match: HeaderMatch):
    """A FOCUS Parquet file as a FOCUS text frame (for stores that cannot read local files)."""
    frame = tables.read_parquet(path)
    rename = dict(zip(frame.columns[: len(match.columns)], match.columns))
    frame = frame.rename(columns=rename)
    frame["x_extensions"] = [
        {k: v for k, v in zip(match.extensions, row) if v is not None}
        for row in frame[match.extensions].itertuples(index=False, name=None)
    ] if match.extensions else [{} for _ in range(len(frame))]
    return frame.drop(columns=match.extensions)
