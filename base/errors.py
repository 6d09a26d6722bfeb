"""Every error an operator can see, in one tree.

Each one's message says what went wrong and what to do next. The CLI, the web server and the
scheduler print a ``GpuledgerError`` as one clean line (no traceback); anything else is a bug
and keeps its traceback.

    GpuledgerError
    ├── ConfigError           a config file or environment value is wrong (names file and key)
    │   └── MappingError      a scrape mapping names a column gpu_samples does not have
    ├── StoreError            the ClickHouse store cannot be used
    │   ├── StoreLocked       an embedded store directory is owned by another process
    │   ├── StoreUnreachable  a ClickHouse server does not answer
    │   └── PlatformUnreachable  the platform holding an embedded store does not take a command
    ├── MigrationError        the store's schema cannot be brought to this code's version
    ├── SchemaError           the cluster DDL cannot be generated from sql/
    ├── SqlFileError          a file in sql/ is missing or malformed, or a placeholder is unfilled
    ├── InputError            input data is unusable (names file, row, column)
    │   ├── PromTextError     Prometheus text exposition that cannot be parsed
    │   ├── RemoteWriteError  a remote_write payload that cannot be decoded
    │   │   └── PayloadTooLarge
    │   ├── BatchError        an agent batch that is malformed
    │   └── BatchRejected     the store refused a batch's data; resending cannot help
    ├── QueryError            a user's query failed
    │   ├── QueryRefused      the query policy (ingest/sqlguard.py) refuses a statement
    │   └── ClickHouseError   the SQL port's answer in ClickHouse's shape (code, name, HTTP status)
    ├── TelemetryError        a telemetry source cannot be used
    │   ├── NvmlUnavailable   no NVIDIA driver / NVML on this machine
    │   ├── UnknownLabel      a label key the sampler does not know
    │   ├── GpuLost           a GPU fell off the bus or stopped answering
    │   ├── OwnerLookupError  kubelet / Slurm could not say who owns a process
    │   ├── ScrapeError       a scrape target did not answer with metrics
    │   ├── SpoolError        the agent's on-disk spool cannot be used
    │   └── Unavailable       the agent's destination does not take batches now (retried)
    ├── Refused               the receiver refuses a request (carries the HTTP status)
    ├── BillingSourceError    a cloud billing API failed
    │   ├── CostExplorerError
    │   └── AzureQueryError
    └── AlertsError           something about alerting an operator can fix
        ├── RuleError         a rule is unusable: its SQL fails or returns the wrong shape
        ├── SilenceError      a silence request is invalid (bad matcher, no author, unknown id)
        ├── ChannelError      a channel is misconfigured or unknown
        └── DeliveryError     one attempt to deliver a notification failed
            └── RateLimited   the receiver answered 429; ``retry_after`` says when to come back

``DeliveryError.retryable`` says whether trying again can help (network errors, 5xx, 429) or not
(4xx other than 408/429). Messages never contain a channel's URL or a password: they name the
channel and, at most, the receiver's scheme and host.
"""
from __future__ import annotations


class GpuledgerError(Exception):
    """An error with a message meant for the operator."""


class ConfigError(GpuledgerError):
    pass


class StoreError(GpuledgerError):
    pass


class StoreLocked(StoreError):
    pass


class StoreUnreachable(StoreError):
    pass


class PlatformUnreachable(StoreError):
    """The running platform that holds an embedded store (``gpuledger up``) does not answer, or
    refuses the command's token (gpuledger/link.py)."""


class MigrationError(GpuledgerError):
    pass


class SchemaError(GpuledgerError):
    pass


class SqlFileError(GpuledgerError):
    """A file in sql/ is missing or malformed, or a placeholder in it was left unfilled."""


class InputError(GpuledgerError, ValueError):
    """Bad input data. ``path``, ``row`` (1-based data row) and ``column`` say where."""

    def __init__(self, message: str, *, path: str = "", row: int | None = None, column: str = ""):
        where = path
        if row is not None:
            where += f", row {row}"
        if column:
            where += f", column {column!r}"
        super().__init__(f"{where}: {message}" if where else message)
        self.path, self.row, self.column = path, row, column


class PromTextError(InputError):
    pass


class MappingError(ConfigError, ValueError):
    """A metric mapping names a column gpu_samples does not have (or no gpu_uuid label)."""


class RemoteWriteError(InputError):
    pass


class PayloadTooLarge(RemoteWriteError):
    pass


class BatchError(InputError):
    """A batch that is malformed (bad JSON, unknown table or column, wrong row length)."""


class BatchRejected(InputError):
    """The store refused the batch's data (e.g. a CHECK constraint); resending cannot help."""


class QueryError(GpuledgerError):
    pass


class QueryRefused(QueryError):
    """A statement the query policy does not allow a reader or an admin to run (says which part, why)."""


class TelemetryError(GpuledgerError):
    pass


class NvmlUnavailable(TelemetryError):
    pass


class UnknownLabel(TelemetryError, ValueError):
    pass


class GpuLost(TelemetryError):
    """NVML says the GPU is lost or in an unknown state; ``code`` is the NVML error code."""

    def __init__(self, code: int):
        super().__init__(f"NVML error {code}")
        self.code = code


class OwnerLookupError(TelemetryError):
    pass


class ScrapeError(TelemetryError):
    pass


class SpoolError(TelemetryError, OSError):
    pass


class Unavailable(TelemetryError):
    pass


class Refused(GpuledgerError):
    """The receiver refuses a request; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class PartlyRefused(Refused):
    """Some rows of a request were refused (400); ``stored`` rows of it were stored."""

    def __init__(self, what: str, stored: int, problems: list[str], refused: int):
        super().__init__(400, f"{refused} of {refused + stored} rows of {what} refused "
                              f"(values their columns cannot hold, or no host); {stored} stored. "
                              f"First: {problems[0]}")
        self.stored, self.refused, self.problems = stored, refused, problems


class BillingSourceError(GpuledgerError):
    pass


class CostExplorerError(BillingSourceError):
    """Cost Explorer refused or failed a request (credentials, permission ce:GetCostAndUsage, endpoint)."""


class AzureQueryError(BillingSourceError):
    """The Azure Cost Management Query API refused or failed a request."""


class AlertsError(GpuledgerError):
    pass


class RuleError(AlertsError):
    pass


class SilenceError(AlertsError):
    pass


class ChannelError(AlertsError):
    pass


class DeliveryError(AlertsError):
    def __init__(self, message: str, *, retryable: bool = True, status: int | None = None,
                 retry_after: float | None = None):
        super().__init__(message)
        self.retryable, self.status, self.retry_after = retryable, status, retry_after


class RateLimited(DeliveryError):
    pass


class ClickHouseError(QueryError):
    """An error the SQL port (ingest/sql_http.py) answers in ClickHouse's shape: ``code`` (its
    error code), ``name`` (e.g. READONLY) and the HTTP ``status`` ClickHouse gives that code."""

    def __init__(self, code: int, message: str, status: int = 500, name: str = "UNKNOWN_EXCEPTION"):
        super().__init__(message)
        self.code, self.status, self.name = code, status, name

    def body(self) -> str:
        return f"Code: {self.code}. DB::Exception: {self}. ({self.name})\n"


def first_line(exc: BaseException, limit: int = 400) -> str:
    """The first line of an exception's text (without ClickHouse's "(version …)" tail), for a
    log line or a one-line error; the exception's type when it has no text."""
    text = str(exc).strip().split("(version ")[0].strip()
    return (text.splitlines() or [type(exc).__name__])[0][:limit]
