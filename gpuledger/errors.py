"""The errors gpuledger raises on purpose.

Every error a user can cause or fix is a ``GpuledgerError``; its message says what went wrong
and what to do next. The CLI, the web server and the scheduler print these as one clean line
(no traceback); anything else is a bug and keeps its traceback.

    GpuledgerError
    ├── ConfigError          a config file or environment value is wrong (names file and key)
    ├── StoreError           the ClickHouse store cannot be used
    │   ├── StoreLocked      an embedded store directory is owned by another process
    │   └── StoreUnreachable a ClickHouse server does not answer
    ├── MigrationError       the store's schema cannot be brought to this code's version
    ├── InputError           an input file is unusable (names file, row, column)
    └── QueryError           a user's query was refused or failed
"""


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


class MigrationError(GpuledgerError):
    pass


class InputError(GpuledgerError):
    """Bad input data. ``path``, ``row`` (1-based data row) and ``column`` say where."""

    def __init__(self, message: str, *, path: str = "", row: int | None = None, column: str = ""):
        where = path
        if row is not None:
            where += f", row {row}"
        if column:
            where += f", column {column!r}"
        super().__init__(f"{where}: {message}" if where else message)
        self.path, self.row, self.column = path, row, column


class QueryError(GpuledgerError):
    pass
