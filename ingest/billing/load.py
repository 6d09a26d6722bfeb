"""``gpuledger ingest billing``: load cloud billing (FOCUS or provider-native) into the store.

    ingest_billing(store, ["exports/2024-09/", "s3://bucket/focus/", "cur.csv.gz"], fmt=None)

Inputs are files, directories (searched recursively), glob patterns and ``s3://bucket/prefix``
URLs. ``fmt`` is ``focus``, ``aws-cur``, ``azure`` (``azure-actual`` / ``azure-amortized``)
or ``gcp``; when None each file's format is sniffed from its header.

Rules an operator can rely on:

* **Replacement, never doubling.** A load replaces, for every (billing month, ProviderName,
  BillingAccountId) present in its rows, everything stored for it before. Load every file of
  one export delivery together (a directory, glob or S3 prefix): the last delivery of a month
  wins, whatever it was (FOCUS export, CUR, API pull).
* **All or nothing.** A refused file stops the load before anything is replaced; a crash
  leaves the previous state (each month's swap is atomic).
* **A truncated or half-bad bill never replaces a month.** A CSV that ends mid-record
  (unterminated quote, short last row without a line break) is refused; so is an input with more
  than ``max_quarantined_share`` of its rows quarantined (default 0: any). Nothing is stored then.
* **Bad rows are kept aside** when that share allows. Unparseable numbers, timestamps,
  currencies, Tags, and text over its column's length (``ingest.limits``: ids such as ResourceId
  2048 bytes, other labels 256, a tag key or value 512) go to ``billing_quarantine`` with file,
  row, column, reason and the raw row; the rest loads. A CSV or JSON line over 1 MiB refuses the
  file (naming row and column) before anything is parsed. Negative costs (credits, refunds) are data. Currencies are stored as given.
* **Each line once.** Lines of a load that share their identity (``stage.IDENTITY``: rows that
  differ only in tags, quantities or costs) get keys of their own (``distinct_line_keys``), as
  the derivation joins bill lines on ``line_item_key``.
* **One provider, one partition.** ProviderName aliases (``Amazon Web Services`` = ``AWS``, …)
  are stored under one name (``stage.PROVIDER_ALIASES``).

Errors (all ``base.errors``): ``InputError`` for a missing file, an unknown format, a file
with missing required columns (names them and the unknown ones), an empty, non-UTF-8, corrupt
or truncated file; ``StoreError`` if the schema is not migrated. Anything else is a bug.
"""
from __future__ import annotations

import logging
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from base.errors import InputError, StoreError
from base.sqlfiles import sql
from collector.billing import adapters
from collector.billing.focus import HeaderMatch, match_header
from ingest import limits
from ingest.billing import stage
from ingest.billing.config import MAX_QUARANTINED_SHARE
from ingest.billing.read import check_complete, csv_frame, file_source, first_error_line, frame_source, kind_of, read_header
from ingest.store import Stage

log = logging.getLogger(__name__)

SUFFIXES = (".csv", ".csv.gz", ".parquet", ".json", ".jsonl", ".json.gz", ".jsonl.gz")
FORMATS = ("focus", "aws-cur", "azure", "azure-actual", "azure-amortized", "gcp", "oci")


@dataclass
class Input:
    """One thing to load. ``path`` for a local file, else ``frame`` builds its FOCUS rows."""

    label: str                                   # stored as source_file
    source_kind: str
    path: Path | None = None
    match: HeaderMatch | None = None
    frame: Callable[[], object] | None = None


@dataclass
class FileResult:
    label: str
    rows: int
    quarantined_rows: int
    reasons: dict[str, int] = field(default_factory=dict)   # "column: reason" -> bad cells
    unknown_columns: list[str] = field(default_factory=list)


@dataclass
class BillingReport:
    """What a load did. ``summary()`` is the text printed after ``gpuledger ingest billing``."""

    load_id: str
    files: list[FileResult] = field(default_factory=list)
    periods: list[str] = field(default_factory=list)        # "YYYY-MM provider account" replaced
    totals: list[tuple[str, float, float]] = field(default_factory=list)  # (currency, billed, effective) loaded
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)

    @property
    def quarantined_rows(self) -> int:
        return sum(f.quarantined_rows for f in self.files)

    def summary(self) -> str:
        lines = [f"billing load {self.load_id}: {self.rows:,} rows from {len(self.files)} input(s) in "
                 f"{self.seconds:.1f}s; {self.quarantined_rows:,} row(s) quarantined"]
        for currency, billed, effective in self.totals:
            lines.append(f"  {currency or '(no currency)'}: BilledCost {billed:,.2f}, EffectiveCost {effective:,.2f}")
        for period in self.periods:
            lines.append(f"  replaced {period}")
        lines += [f"  warning: {w}" for w in self.warnings]
        for f in self.files:
            if f.unknown_columns:
                lines.append(f"  {f.label}: non-FOCUS columns kept in x_extensions: {', '.join(f.unknown_columns)}")
            for reason, count in sorted(f.reasons.items(), key=lambda kv: -kv[1])[:5]:
                lines.append(f"  {f.label}: {count:,} bad value(s) in {reason}")
        if self.quarantined_rows:
            lines.append(f"  see: SELECT * FROM billing_quarantine WHERE load_id = '{self.load_id}'")
        return "\n".join(lines)


def ingest_billing(store, paths: Iterable[str | Path], fmt: str | None = None,
                   progress: Callable[[str], None] = print, *, s3_client=None,
                   max_quarantined_share: float | None = None) -> BillingReport:
    """Load billing files / directories / globs / s3:// prefixes; see the module docstring.

    ``max_quarantined_share`` (``[billing] max_quarantined_share``, default 0): the largest share
    of one input's rows that may be quarantined while the rest replaces its months.
    """
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"unknown billing format {fmt!r}; expected one of {', '.join(FORMATS)}")
    with tempfile.TemporaryDirectory(prefix="gpuledger-billing-") as tmp:
        located = locate(paths, s3_client, Path(tmp), progress)
        inputs = [describe(path, label, fmt) for path, label in located]
        report = load_inputs(store, inputs, progress, max_quarantined_share=max_quarantined_share)
    progress(report.summary())
    return report


def locate(paths, s3_client, tmp: Path, progress) -> list[tuple[Path, str]]:
    """(local path, label) for every input file; S3 objects are downloaded to ``tmp`` first."""
    from ingest.samples import expand

    found: list[tuple[Path, str]] = []
    for raw in paths:
        raw = str(raw)
        if raw.startswith("s3://"):
            from collector.billing import s3

            client = s3_client or s3.client()
            for url in s3.list_objects(client, raw, SUFFIXES):
                found.append((s3.download(client, url, tmp), url))
            progress(f"{raw}: {sum(1 for _, u in found if u.startswith(raw))} object(s) downloaded")
        else:
            found += [(p, str(p)) for p in expand([raw], SUFFIXES)]
    if not found:
        raise InputError("no billing files found (expected .csv, .csv.gz, .parquet or .json[l] files)",
                         path=", ".join(map(str, paths)))
    return found


def describe(path: Path, label: str, fmt: str | None) -> Input:
    """Check a file's header and decide how it is read; refuse it here, before anything loads."""
    if path.name.lower().endswith((".json", ".jsonl", ".json.gz", ".jsonl.gz")):
        if fmt not in (None, "gcp"):
            raise InputError(f"JSON files are read as GCP billing export rows, not as {fmt}", path=label)
        limits.check_lines(path, "json", label=label)
        return Input(label, "gcp-export", frame=lambda: adapters.read_native(path, "gcp", label))
    header = read_header(path)
    if kind_of(str(path)) == "csv":
        limits.check_lines(path, "csv", lambda: header, label)
        check_complete(path, len(header))
    kind = fmt or adapters.sniff(header)
    if kind is None:
        raise InputError(
            "cannot tell the billing format from the header (not FOCUS: no BilledCost/ChargePeriodStart; not AWS CUR, "
            f"Azure, GCP or OCI either); first columns: {', '.join(header[:8])}. Pass --format focus|aws-cur|azure|gcp|oci",
            path=label)
    if kind != "focus":
        adapters.check_header(kind, header, label)
        item = Input(label, adapters.SOURCE_KIND[kind], frame=lambda: adapters.read_native(path, kind, label))
        if kind == "azure":   # actual or amortized is told by the content: its rows are stored as the view read
            item.frame = lambda: _viewed(item, adapters.read_native(path, kind, label))
        return item
    match = match_header(header)
    if match.missing or match.duplicated:
        problems = []
        if match.missing:
            problems.append(f"missing required FOCUS column(s): {', '.join(match.missing)}")
        if match.duplicated:
            problems.append(f"column(s) named twice: {', '.join(match.duplicated)}")
        if match.unknown:
            problems.append(f"unknown column(s) (neither FOCUS nor x_…): {', '.join(match.unknown)}")
        raise InputError("; ".join(problems) + ". Nothing was loaded; fix the header or pass --format", path=label)
    return Input(label, "focus", path=path, match=match)


def _viewed(item: Input, frame):
    item.source_kind = frame.attrs.get("source_kind", item.source_kind)
    return frame


AZURE_VIEWS = {"azure-actual": "actual", "azure-amortized": "amortized"}


def azure_view_warnings(store, stage_name: str) -> list[str]:
    """One warning per Azure billing account and month where a load meets both cost views:
    both in its own rows (stored together: costs counted twice), or one replacing the other."""
    warnings = []
    for month, account, seen in store.rows(sql("billing/azure_views", stage=stage_name), {"views": list(AZURE_VIEWS)}):
        named = {(o, v): ", ".join(sorted({f for o2, v2, f in seen if (o2, v2) == (o, v)})) for o, v, _ in seen}
        loaded = sorted({v for o, v, _ in seen if o == "loaded"})
        if len(loaded) > 1:
            text = (f"Azure billing account {account}, {month}: this load holds both cost views, actual "
                    f"({named['loaded', 'azure-actual']}) and amortized ({named['loaded', 'azure-amortized']}); both are "
                    "stored, so the month's costs are counted twice. Load one view per month")
        else:
            new = loaded[0]
            old = next(v for o, v, _ in seen if v != new)
            text = (f"Azure billing account {account}, {month}: the {AZURE_VIEWS[new]} cost view "
                    f"({named['loaded', new]}) replaces the {AZURE_VIEWS[old]} view stored from {named['stored', old]}")
        log.warning("%s", text)
        warnings.append(text)
    return warnings


def load_inputs(store, inputs: list[Input], progress: Callable[[str], None] = print, *,
                max_quarantined_share: float | None = None) -> BillingReport:
    """Parse every input into one staging area, then swap the months it holds into the table.

    An input with more than ``max_quarantined_share`` of its rows quarantined stops the load
    before anything is replaced (``InputError`` naming its first bad rows).
    """
    limit = MAX_QUARANTINED_SHARE if max_quarantined_share is None else max_quarantined_share
    started = time.monotonic()
    load_id = uuid.uuid4().hex[:12]
    report = BillingReport(load_id)
    loaded_at = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    _check_schema(store)
    with stage.staging(store) as (good, bad):
        for number, item in enumerate(inputs, 1):
            result = _load_one(store, item, load_id, loaded_at, good, bad)
            report.files.append(result)
            _check_share(store, result, bad.name, limit)
            progress(f"[{number}/{len(inputs)}] {item.label}: {result.rows:,} rows"
                     + (f", {result.quarantined_rows:,} quarantined" if result.quarantined_rows else ""))
        report.periods = [f"{m} {p or '-'} {a or '-'}" for m, p, a in store.rows(sql("billing/load_periods", stage=good.name))]
        report.totals = [(c, float(b), float(e)) for c, b, e in store.rows(sql("billing/load_totals", stage=good.name))]
        report.warnings = azure_view_warnings(store, good.name)
        with distinct_line_keys(store, good) as lines:
            lines.replace_in()
        store.command(f"INSERT INTO {stage.QUARANTINE} SELECT * FROM {stage.q(bad.name)}")
        store.insert("billing_loads", [[
            load_id, ",".join(sorted({i.source_kind for i in inputs})), [i.label for i in inputs],
            report.rows, report.quarantined_rows, report.periods, loaded_at]],
            ["load_id", "source_kind", "sources", "rows", "quarantined", "periods", "started_at"])
    report.seconds = time.monotonic() - started
    return report


@contextmanager
def distinct_line_keys(store, good) -> Iterator[Stage]:
    """The load's staged lines with a ``line_item_key`` each of its own (sql/billing/line_keys.sql):
    ``good`` itself when no two share one, else a copy whose repeated keys are told apart."""
    if int(store.scalar(f"SELECT count() - uniqExact(line_item_key) FROM {stage.q(good.name)}")) == 0:
        yield good
        return
    with store.staging(stage.TABLE) as lines:
        lines.fill(sql("billing/line_keys", stage=good.name), columns=store.columns(stage.TABLE))
        yield lines


def _load_one(store, item: Input, load_id: str, loaded_at: str, good, bad) -> FileResult:
    labels = dict(source_file=item.label, load_id=load_id, loaded_at=loaded_at)
    try:
        with stage.targets(store) as targets:
            if item.path is not None and store.target.embedded:
                source = file_source(store, item.path, item.match)
            else:
                source = frame_source(store, targets.text, _frame(item))
            return _accept(store, item, targets, _split(store, targets, source, item, labels), good, bad)
    except InputError:
        raise
    except Exception as exc:
        if item.path is None or kind_of(str(item.path)) != "csv" or not _is_clickhouse_error(exc):
            raise
        # ClickHouse could not split the file into rows: read it again in Python, which names
        # the broken row or quarantines rows of the wrong width.
        log.info("%s: ClickHouse could not read it (%s); reading it row by row", item.label, first_error_line(exc))
    with stage.targets(store) as targets:
        source = frame_source(store, targets.text, csv_frame(item.path, item.match))
        return _accept(store, item, targets, _split(store, targets, source, item, labels), good, bad)


def _accept(store, item: Input, targets, counts: tuple[int, int], good, bad) -> FileResult:
    """Move one input's staged rows into the load's stages; say what it held."""
    rows, quarantined = counts
    reasons = dict(store.rows(f"SELECT concat(column, ': ', reason), count() FROM {stage.q(targets.bad)} GROUP BY 1"))
    Stage(store, stage.TABLE, targets.good).attach_to(good.name)
    if quarantined:
        store.command(f"INSERT INTO {stage.q(bad.name)} SELECT * FROM {stage.q(targets.bad)}")
    return FileResult(item.label, rows, quarantined, reasons, item.match.unknown if item.match else [])


def _check_share(store, result: FileResult, bad_stage: str, limit: float) -> None:
    """Refuse the load when too many of one input's rows were quarantined (nothing is replaced yet)."""
    total = result.rows + result.quarantined_rows
    if not result.quarantined_rows or result.quarantined_rows <= limit * total:
        return
    label = stage.lit(result.label)
    first = store.rows(
        f"SELECT source_row, column, reason, value FROM {stage.q(bad_stage)} WHERE source_file = {label} "
        "ORDER BY source_row, column LIMIT 3")
    provider = stage.provider_name("raw['ProviderName']")
    months = [r[0] for r in store.rows(
        f"SELECT DISTINCT concat(formatDateTime(month, '%Y-%m'), ' ', {provider}, ' ', "
        f"raw['BillingAccountId']) FROM (SELECT raw, parseDateTimeBestEffortOrNull(raw['BillingPeriodStart'], 'UTC') AS month "
        f"FROM {stage.q(bad_stage)} WHERE source_file = {label}) WHERE month IS NOT NULL ORDER BY 1 LIMIT 5")]
    examples = "; ".join(f"row {row} {column}: {reason} ({value[:40]!r})" for row, column, reason, value in first)
    raise InputError(
        f"{result.quarantined_rows:,} of {total:,} row(s) quarantined ({result.quarantined_rows / total:.2%}), more than "
        f"[billing] max_quarantined_share = {limit:g} allows: {examples}"
        + (f"; month(s) with bad rows: {', '.join(m.strip() for m in months)}" if months else "")
        + ". Nothing was loaded; the stored months are unchanged. Fix those rows, or raise max_quarantined_share "
        "to load the rest", path=result.label)


def _split(store, targets, source, item: Input, labels) -> tuple[int, int]:
    # source_kind only now: reading an Azure export decides its view (``_viewed``)
    return stage.split_into(store, targets, source.sql, source.present, parameters=source.parameters,
                            settings=source.settings, source_kind=item.source_kind, **labels)


def _frame(item: Input):
    if item.frame is not None:
        return item.frame()
    if kind_of(str(item.path)) == "parquet":
        return adapters.read_focus_parquet(item.path, item.match)
    return csv_frame(item.path, item.match)


def _is_clickhouse_error(exc: Exception) -> bool:
    return hasattr(exc, "code") or "DB::Exception" in str(exc)


def _check_schema(store) -> None:
    if not store.scalar("SELECT count() FROM system.tables WHERE database = currentDatabase() AND name = {t:String}",
                        {"t": stage.TABLE}):
        raise StoreError(f"the store {store.target} has no {stage.TABLE} table: run `gpuledger init` "
                         "(or start `gpuledger up`) to bring its schema up to date")
