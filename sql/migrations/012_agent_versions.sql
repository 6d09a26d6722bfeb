-- Which gpuledger version each agent runs, as it announces itself when it pushes a batch
-- (User-Agent: gpuledger-collect/<version>; the host is the batch's `host` column). History is
-- kept: one row per host and version it ran, with when the platform first and last heard it, so
-- an upgrade rolled across the fleet shows which hosts moved when. The receiver writes a row
-- only when a host's version changes or its last write is over an hour old (ingest/receiver.py),
-- and merges fold the rows of a (host, version) into one: first_seen its min, last_seen its max.
-- Read it without FINAL, grouping (sql/README.md "Agents and their versions"):
--   SELECT host, argMax(version, last_seen) AS running_version, max(last_seen) AS last_heard
--   FROM agent_versions GROUP BY host ORDER BY host
-- AggregatingMergeTree rather than ReplacingMergeTree(last_seen) ORDER BY host (latest only): it
-- keeps the history, and min() keeps first_seen although a restarted platform, which forgot what
-- it wrote, writes the row again with first_seen = now (no read before a write).
-- Microseconds, so an upgrade within the same second still orders after the version it replaced.
-- An operator table: not granted to the read-only role.
CREATE TABLE IF NOT EXISTS agent_versions
(
    host       LowCardinality(String),
    version    LowCardinality(String),
    first_seen SimpleAggregateFunction(min, DateTime64(6)),
    last_seen  SimpleAggregateFunction(max, DateTime64(6))
)
ENGINE = AggregatingMergeTree
ORDER BY (host, version);
