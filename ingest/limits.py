"""What every way in accepts, in one place: text lengths per column and the ``ts`` range.

Every ingest path uses these: sample files (``ingest.samples``), agent batches and remote_write
(``ingest.receiver`` through ``ingest.writer.insert_valid``), scrapes (``ingest.scrape``) and
billing loads (``ingest.billing.stage``).

* a label (team, user, job_id, host, pool, cluster, environment, model, ... — any text column not
  named below) holds at most ``LABEL_MAX`` = 256 bytes of UTF-8;
* an identifier (GPU/MIG uuid, pod, instance id, container image, billing ResourceId, ...)
  at most ``ID_MAX`` = 2048 bytes (AWS ARNs and Azure resource ids run to several hundred);
* free text (billing ChargeDescription and SkuPriceDetails, health-event detail) at most
  ``TEXT_MAX`` = 8192 bytes; a billing tag key or value at most ``TAG_MAX`` = 512 bytes;
* a text line of a sample or billing file at most ``LINE_MAX`` = 1 MiB: longer cannot be a valid
  row, and is refused (``check_lines``) before anything is parsed, so a huge cell never reaches
  memory (a .prom file's lines too); a scrape's answer at most ``SCRAPE_MAX`` = 64 MiB;
* ``ts`` from ``TS_MIN`` (2000-01-01) up to ``FUTURE_LIMIT`` (1 day) ahead of now.

A longer value or a ``ts`` outside the range refuses its row, naming it and the column.
"""
from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

from base.errors import InputError

LABEL_MAX = 256
ID_MAX = 2048
TEXT_MAX = 8192
TAG_MAX = 512
LINE_MAX = 1 << 20
SCRAPE_MAX = 64 << 20          # bytes of one scrape's answer

TS_MIN = datetime(2000, 1, 1, tzinfo=timezone.utc)
FUTURE_LIMIT = timedelta(days=1)
ACCEPTED_TS = ("accepted: ts from 2000-01-01 up to 1 day ahead of now, as date-time text or a Unix epoch "
               "in seconds (13 digits: milliseconds)")

ID_COLUMNS = frozenset({
    # gpu_samples, gpu_processes, gpu_health_events, derived tables
    "gpu_uuid", "mig_instance", "instance_id", "pci_bus_id", "image", "k8s_pod", "container_id", "process_name",
    # billing_line_items (FOCUS)
    "ResourceId", "ResourceName", "SkuId", "SkuPriceId", "CommitmentDiscountId", "CommitmentDiscountName",
    "CapacityReservationId", "InvoiceId", "BillingAccountId", "SubAccountId",
})
TEXT_COLUMNS = frozenset({"detail", "ChargeDescription", "SkuPriceDetails"})


def max_bytes(column: str) -> int:
    """The longest value (UTF-8 bytes) a text column accepts."""
    return ID_MAX if column in ID_COLUMNS else TEXT_MAX if column in TEXT_COLUMNS else LABEL_MAX


def too_long(column: str, value: str) -> str | None:
    """Why ``value`` is too long for ``column`` (None: it is not)."""
    limit = max_bytes(column)
    if len(value) * 4 <= limit:            # no UTF-8 text of this many characters can be longer
        return None
    size = len(value.encode("utf-8", "surrogatepass"))
    return f"{size:,} bytes, over the {limit:,}-byte limit of {column}" if size > limit else None


def latest(now: datetime | None = None) -> datetime:
    """The latest ``ts`` accepted at ``now``."""
    return (now or datetime.now(timezone.utc)) + FUTURE_LIMIT


def check_lines(path: Path, kind: str, header: Callable[[], list[str]] | None = None, label: str = "",
                limit: int = LINE_MAX) -> None:
    """Refuse a text file (``kind``: csv, tsv, json lines or prom; anything else is not checked) with a line
    over ``limit`` bytes, naming its row and, as far as the line's first ``limit`` bytes tell, its
    column (``header()`` gives a CSV/TSV file's column names). Reads the file in blocks, so a huge
    cell is never held whole."""
    if kind not in ("csv", "tsv", "json", "prom"):
        return
    too_long = re.compile(rb"[^\n]{%d}" % (limit + 1))
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    lines, carry = 0, b""
    try:
        with opener(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                text = carry + block
                found = too_long.search(text)
                if found:
                    start = text.rfind(b"\n", 0, found.start()) + 1
                    lines += text.count(b"\n", 0, start)
                    raise InputError(f"a line of over {limit:,} bytes (at most {LABEL_MAX} bytes per label, "
                                     f"{ID_MAX} per id); nothing from this file was stored", path=label or str(path),
                                     row=lines + (kind in ("json", "prom")),
                                     column=_column_at(kind, lines, text[start:start + limit], header))
                cut = text.rfind(b"\n") + 1
                lines += text.count(b"\n", 0, cut)
                carry = text[cut:][-limit - 1:]
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"cannot be read to the end ({exc}); if it is gzip, it is truncated or corrupt",
                         path=label or str(path)) from None


def _column_at(kind: str, line: int, start: bytes, header) -> str:
    """The column whose value runs past ``start`` (the first bytes of line ``line``, 0-based)."""
    text = start.decode("utf-8", "replace")
    if kind == "json":
        keys = re.findall(r'"((?:[^"\\]|\\.)*)"\s*:', text)
        return keys[-1] if keys else ""
    if line == 0 or header is None or kind == "prom":
        return ""
    if kind == "tsv":
        fields = text.count("\t") + 1
    else:    # commas outside quoted fields (the last one may be cut short)
        fields = re.sub(r'"(?:[^"]|"")*("|$)', "", text).count(",") + 1
    names = header()
    return names[fields - 1] if 0 < fields <= len(names) else ""
