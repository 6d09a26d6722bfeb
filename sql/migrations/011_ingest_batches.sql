-- The ids of the agent batches and remote_write bodies (rw:<sha256 of the body>) the receiver has
-- taken, each recorded before its rows are inserted. Requests are stored in groups, one insert per
-- table for many senders, so a per-insert deduplication token cannot say which batch a resend
-- repeats; this ledger can: a resent id's rows are looked up and only the missing ones inserted
-- (ingest/group_commit.py). Kept 90 days, far longer than any sender retries.
CREATE TABLE IF NOT EXISTS ingest_batches
(
    id       String,
    tbl      LowCardinality(String),
    received DateTime DEFAULT now()
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(received)
ORDER BY id
TTL received + INTERVAL 90 DAY
SETTINGS ttl_only_drop_parts = 1;
