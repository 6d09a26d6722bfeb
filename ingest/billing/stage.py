"""Staging for billing loads: ClickHouse parses, splits good rows from bad, then swaps partitions.

For each input (one file, one S3 object, one API pull) two staging tables are made
(``Store.staging``): ``good`` (structure of ``billing_line_items``) and ``bad`` (structure of
``billing_quarantine``). The input is read as text and parsed by one SELECT (``typed_select``)
that also flags each row with a bad cell:

* pass 1: ``INSERT INTO good SELECT …`` with bad rows marked into a partition of their own
  (ProviderName ``__quarantine__``) — the only pass for a clean file;
* pass 2, only when that partition has rows: ``INSERT INTO bad SELECT … ARRAY JOIN _errors
  WHERE _bad`` (one quarantine row per bad cell, with the raw row), then the marked partition
  is dropped from ``good``.

A file that fails midway leaves only its own staging tables, which are dropped. A successful
file's ``good`` partitions are attached to the load's stage; at commit every partition of that
stage replaces the one in ``billing_line_items`` (``REPLACE PARTITION`` — exact and atomic
per partition, so sums never double, even before merges).
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from collector.billing.focus import COLUMNS, REQUIRED_VALUES
from ingest import limits
from ingest.store import Stage

TABLE = "billing_line_items"
QUARANTINE = "billing_quarantine"
# the bad stage is unpartitioned: its rows are copied into billing_quarantine, never attached
QUARANTINE_STAGE_ENGINE = "ENGINE = MergeTree ORDER BY tuple()"

# Columns whose values identify a line item across restatements (costs are not identity).
IDENTITY = (
    "ProviderName", "BillingAccountId", "SubAccountId", "BillingPeriodStart", "ChargePeriodStart", "ChargePeriodEnd",
    "ChargeCategory", "ChargeClass", "ChargeFrequency", "ChargeDescription", "ResourceId", "SkuId", "SkuPriceId",
    "SkuMeter", "PricingCategory", "PricingUnit", "ConsumedUnit", "CommitmentDiscountId", "CommitmentDiscountStatus",
    "CapacityReservationId", "RegionId", "AvailabilityZone", "InvoiceId", "BillingCurrency",
)
# ProviderName spellings that mean one provider, lower-case with single spaces -> the name stored
# (what the providers' own FOCUS exports and our adapters write). One provider, one partition.
PROVIDER_ALIASES = {
    "aws": "AWS", "amazon": "AWS", "amazon web services": "AWS", "amazon web services, inc.": "AWS",
    "amazon aws": "AWS", "amazon web services inc.": "AWS",
    "microsoft": "Microsoft", "azure": "Microsoft", "microsoft azure": "Microsoft",
    "microsoft corporation": "Microsoft",
    "google cloud": "Google Cloud", "gcp": "Google Cloud", "google": "Google Cloud",
    "google cloud platform": "Google Cloud", "google llc": "Google Cloud",
    "oracle": "Oracle", "oci": "Oracle", "oracle cloud": "Oracle", "oracle cloud infrastructure": "Oracle",
    "oracle corporation": "Oracle",
}
LINE_ID_EXTENSION = "x_LineItemId"   # adapters put a provider's own line-item id here when it has one
ROW_ERROR = "__row_error"            # set by readers on a row that is broken as a whole (wrong field count)


def q(name: str) -> str:
    """Backquote an identifier."""
    return "`" + name.replace("`", "``") + "`"


def lit(value: str) -> str:
    """A ClickHouse string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _value(col: str, present: bool) -> str:
    """The column's text, NULL when missing (empty, NULL or null); a constant NULL when absent."""
    if not present:
        return "CAST(NULL, 'Nullable(String)')"
    c = q(col)
    return f"if({c} IN ('', 'NULL', 'null'), NULL, {c})"


def _time_ok(v: str) -> str:
    # parseDateTime64BestEffort wraps 30:00 into the next day; refuse out-of-range clock fields.
    return (f"NOT (length({v}) >= 16 AND substring({v}, 11, 1) IN ('T', ' ') AND "
            f"(toUInt8OrZero(substring({v}, 12, 2)) > 23 OR toUInt8OrZero(substring({v}, 15, 2)) > 59 "
            f"OR toUInt8OrZero(substring({v}, 18, 2)) > 60))")


def decimal12(v: str) -> str:
    """SQL parsing the text ``v`` to Decimal(38, 12), rounded half-even (NULL when not a number).

    ClickHouse's text-to-Decimal cuts extra decimals toward zero, so text with more than 12
    decimals (or an exponent) is read exactly at scale 50 first, then rounded with roundBankers.
    """
    wide = f"accurateCastOrNull(roundBankers(toDecimal256OrNull({v}, 50), 12), 'Decimal(38, 12)')"
    return f"if(match({v}, '[.][0-9]{{13}}|[eE]'), {wide}, toDecimal128OrNull({v}, 12))"


@dataclass(frozen=True)
class Typed:
    expr: str          # the typed value (may define helper aliases first)
    bad: str           # 1 when the value is refused
    reason: str        # why, for the quarantine
    reason_sql: str = ""   # why, as SQL, when the reason depends on the value


def typed(col: str, kind: str) -> Typed:
    """How one FOCUS column is parsed from text and when a value is refused."""
    v, p = f"v_{col}", f"p_{col}"
    required = col in REQUIRED_VALUES
    missing = f"{v} IS NULL" if required else "0"
    if kind == "time":
        expr = f"ifNull({p}, toDateTime64(0, 3, 'UTC'))" if required else p
        wrong = f"({v} IS NOT NULL AND ({p} IS NULL OR NOT ({_time_ok(v)})))"
        return Typed(f"parseDateTime64BestEffortOrNull({v}, 3, 'UTC') AS {p}, {expr}",
                     f"({missing} OR {wrong})", "not a valid timestamp")
    if kind in ("money", "number"):
        expr = f"ifNull({p}, toDecimal128(0, 12))" if required or kind == "money" else p
        return Typed(f"{decimal12(v)} AS {p}, {expr}",
                     f"({missing} OR ({v} IS NOT NULL AND {p} IS NULL))", "not a number")
    if kind == "currency":
        return Typed(f"ifNull({v}, '')", f"({missing} OR ({v} IS NOT NULL AND NOT match({v}, '^[A-Z]{{3}}$')))",
                     "not an ISO 4217 currency code")
    if kind == "json_map":
        ok = f"(isValidJSON({v}) AND JSONType({v}) = 'Object')"
        tag = limits.TAG_MAX
        long = (f"arrayExists(x -> length(x) > {tag}, arrayConcat(mapKeys(m_{col}), mapValues(m_{col})))")
        return Typed(f"if({v} IS NOT NULL AND {ok}, JSONExtract(ifNull({v}, '{{}}'), 'Map(String, String)'), map()) "
                     f"AS m_{col}, m_{col}",
                     f"({missing} OR ({v} IS NOT NULL AND (NOT {ok} OR {long})))", "not a JSON object",
                     f"if({ok}, {lit(f'a tag key or value over the {tag}-byte limit of {col}')}, 'not a JSON object')")
    text = f"ifNull({v}, '')"
    if col == "ProviderName":
        text = provider_name(text)
    limit = limits.max_bytes(col)
    return Typed(text, f"({missing} OR ({v} IS NOT NULL AND (NOT isValidUTF8({v}) OR length({v}) > {limit})))",
                 "not UTF-8 text", f"if(length({v}) > {limit}, concat(toString(length({v})), "
                 f"{lit(f' bytes, over the {limit}-byte limit of {col}')}), 'not UTF-8 text')")


def provider_name(text: str) -> str:
    """SQL giving the canonical ProviderName (``PROVIDER_ALIASES``) of the text expression ``text``."""
    keys = ", ".join(lit(k) for k in PROVIDER_ALIASES)
    names = ", ".join(lit(v) for v in PROVIDER_ALIASES.values())
    return f"transform(lower(replaceRegexpAll(trim({text}), '\\\\s+', ' ')), [{keys}], [{names}], trim({text}))"


def typed_select(source: str, outputs: list[str], present: set[str] | None = None, *, source_kind: str,
                 source_file: str, load_id: str, loaded_at: str) -> str:
    """SELECT turning the text columns of ``source`` into the typed row (``outputs``).

    Besides the table's columns it yields ``_bad`` (the row has a refused cell), ``_errors``
    ([(column, reason, value)], computed for bad rows only) and ``_raw`` (the row as text, for
    bad rows only). ``present``: the FOCUS columns the input has (others are constant NULL).
    ``source`` is a table name or a parenthesised subquery with ``source_row``,
    ``x_extensions`` and the FOCUS columns as text.
    """
    present = set(COLUMNS) if present is None else present
    values = ",\n    ".join(f"{_value(c, c in present)} AS v_{c}" for c in COLUMNS)
    parts = {c: typed(c, kind) for c, kind in COLUMNS.items()}
    exprs = ",\n    ".join(f"{parts[c].expr} AS {q(c)}" for c in COLUMNS)
    row_error = f"x_extensions[{lit(ROW_ERROR)}]"
    checked = [c for c in COLUMNS if c in present or c in REQUIRED_VALUES]
    bad = " OR ".join([f"{row_error} != ''"] + [parts[c].bad for c in checked])
    errors = ",\n        ".join(
        [f"if({row_error} != '', ('(row)', {row_error}, ''), ('', '', ''))"]
        + [f"if({parts[c].bad}, ({lit(c)}, if(v_{c} IS NULL, 'missing required value', "
           f"{parts[c].reason_sql or lit(parts[c].reason)}), "
           f"ifNull(v_{c}, '')), ('', '', ''))" for c in checked])
    raw = ", ".join(f"{lit(c)}, ifNull(v_{c}, '')" for c in COLUMNS if c in present)
    identity = ", ".join(
        f"toString({q(c)})" if COLUMNS[c] == "time" else q(c) for c in IDENTITY
    ) + f", x_extensions[{lit(LINE_ID_EXTENSION)}]"
    src = source if source.startswith("(") else q(source)
    return f"""SELECT {', '.join(q(c) for c in outputs)} FROM (SELECT
    {exprs},
    x_extensions AS x_extensions,
    {lit(source_kind)} AS source_kind,
    {lit(source_file)} AS source_file,
    source_row AS source_row,
    toFixedString(hex(sipHash128({identity})), 32) AS line_item_key,
    {lit(load_id)} AS load_id,
    toDateTime64({lit(loaded_at)}, 3, 'UTC') AS loaded_at,
    {bad} AS _bad,
    if(_bad, arrayFilter(e -> e.1 != '', [
        {errors}]), []) AS _errors,
    if(_bad, mapFilter((k, v) -> v != '', mapConcat(map({raw}), x_extensions)), map()) AS _raw
FROM (SELECT source_row, x_extensions, {values} FROM {src}))"""


def text_table_ddl(name: str) -> str:
    """A table holding an input as text, for rows that come from Python."""
    cols = ",\n    ".join(f"{q(c)} Nullable(String)" for c in COLUMNS)
    return (f"CREATE TABLE {q(name)} (\n    source_row UInt64,\n    {cols},\n"
            f"    x_extensions Map(String, String)\n) ENGINE = MergeTree ORDER BY tuple()")


@dataclass
class Targets:
    """The staging tables of one input: ``good`` (billing_line_items' structure), ``bad``
    (billing_quarantine's) and ``text``, the input as text when it comes from Python."""

    good: str
    bad: str
    text: str


@contextmanager
def staging(store) -> Iterator[tuple[Stage, Stage]]:
    """A good and a bad stage (see ``Store.staging``), dropped when the block ends."""
    with store.staging(TABLE) as good, store.staging(QUARANTINE, engine=QUARANTINE_STAGE_ENGINE) as bad:
        yield good, bad


@contextmanager
def targets(store) -> Iterator[Targets]:
    """The staging tables of one input, dropped when the block ends whatever happens."""
    with staging(store) as (good, bad):
        t = Targets(good.name, bad.name, f"{good.name}_text")
        try:
            yield t
        finally:
            store.command(f"DROP TABLE IF EXISTS {q(t.text)}")


QUARANTINE_PROVIDER = "__quarantine__"  # marks bad rows inside a good stage until they are dropped


def split_into(store, targets: Targets, source: str, present: set[str] | None, *,
               parameters: dict | None = None, settings: dict | None = None, **labels) -> tuple[int, int]:
    """Parse ``source`` into the targets; return (rows stored, rows quarantined).

    Pass 1 writes every row to ``good``, bad ones marked into a partition of their own (so the
    clean file costs one pass and no count). Only if that partition has rows does pass 2 write
    their details to ``bad``; then the marked partition is dropped from ``good``.
    """
    columns = store.columns(TABLE)
    select = typed_select(source, ["_bad", "_errors", "_raw", *columns], present, **labels)
    marked = {"ProviderName": f"if(_bad, {lit(QUARANTINE_PROVIDER)}, ProviderName)",
              "BillingAccountId": "if(_bad, '', BillingAccountId)",
              "BillingPeriodStart": "if(_bad, toDateTime64(0, 3, 'UTC'), BillingPeriodStart)"}
    cols = ", ".join(marked.get(c, q(c)) for c in columns)
    store.command(f"INSERT INTO {q(targets.good)} ({', '.join(q(c) for c in columns)}) SELECT {cols} FROM ({select})",
                  parameters=parameters, settings=settings)
    bad_parts = [r[0] for r in store.rows(
        f"SELECT DISTINCT _partition_id FROM {q(targets.good)} WHERE ProviderName = {lit(QUARANTINE_PROVIDER)}")]
    if bad_parts:
        store.command(
            f"INSERT INTO {q(targets.bad)} (load_id, source_kind, source_file, source_row, column, reason, value, raw, "
            f"loaded_at) SELECT load_id, source_kind, source_file, source_row, e.1, e.2, e.3, _raw, loaded_at "
            f"FROM ({select}) ARRAY JOIN _errors AS e WHERE _bad", parameters=parameters, settings=settings)
        for pid in bad_parts:
            store.command(f"ALTER TABLE {q(targets.good)} DROP PARTITION ID {lit(pid)}")
    good = int(store.scalar(f"SELECT count() FROM {q(targets.good)}"))
    bad = int(store.scalar(f"SELECT uniqExact(source_row) FROM {q(targets.bad)}")) if bad_parts else 0
    return good, bad
