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
* a text line of a sample file at most ``LINE_MAX`` = 1 MiB: longer cannot be a valid row, and
  is refused before anything is parsed, so a huge cell never reaches memory;
* ``ts`` from ``TS_MIN`` (2000-01-01) up to ``FUTURE_LIMIT`` (1 day) ahead of now.

A longer value or a ``ts`` outside the range refuses its row, naming it and the column.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

LABEL_MAX = 256
ID_MAX = 2048
TEXT_MAX = 8192
TAG_MAX = 512
LINE_MAX = 1 << 20

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
