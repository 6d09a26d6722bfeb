-- Alerting: the state of every alert instance, its history, the notifications decided (an
-- outbox written before sending), each delivery attempt, and silences. All of it lives here so
-- that a restart of the platform neither repeats nor loses a notification.
-- Tables whose rows change are ReplacingMergeTree(version): read them with FINAL; ``version`` is
-- a nanosecond wall-clock stamp taken when the row is written.

-- Current state of each alert instance, one row per (rule, fingerprint).
CREATE TABLE IF NOT EXISTS alert_state
(
    rule          LowCardinality(String),
    fingerprint   String,                              -- hash of the sorted labels
    labels        Map(String, String),
    annotations   Map(String, String),
    severity      LowCardinality(String),              -- critical | warning | info
    state         LowCardinality(String),              -- pending | firing | resolved | inactive
    value         Float64,
    active_since  DateTime64(3, 'UTC'),                -- first round of the current activity
    fired_at      Nullable(DateTime64(3, 'UTC')),
    resolved_at   Nullable(DateTime64(3, 'UTC')),
    evaluated_at  DateTime64(3, 'UTC'),
    version       UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (rule, fingerprint);

-- Every state change, for history pages and audits.
CREATE TABLE IF NOT EXISTS alert_events
(
    ts            DateTime64(3, 'UTC'),
    rule          LowCardinality(String),
    fingerprint   String,
    labels        Map(String, String),
    severity      LowCardinality(String),
    from_state    LowCardinality(String),
    to_state      LowCardinality(String),
    value         Float64,
    summary       String
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(ts)
ORDER BY (rule, fingerprint, ts);

-- The outbox: a notification is written here (status pending) before it is sent, and marked
-- delivered after; undelivered ones are retried, also after a restart. ``key`` is the
-- idempotency key (sent to receivers that take one).
CREATE TABLE IF NOT EXISTS alert_notifications
(
    key             String,
    channel         LowCardinality(String),
    group_key       String,
    kind            LowCardinality(String),            -- firing | resolved | test
    firing          Array(String),                     -- fingerprints notified as firing
    resolved        Array(String),                     -- fingerprints notified as resolved
    payload         String,                            -- the notification as JSON, sent as is
    status          LowCardinality(String),            -- pending | delivered | failed
    created_at      DateTime64(3, 'UTC'),
    next_attempt_at DateTime64(3, 'UTC'),
    delivered_at    Nullable(DateTime64(3, 'UTC')),
    attempts        UInt16,
    last_error      String,
    version         UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY key;

-- Each attempt to deliver a notification: outcome, HTTP status, Retry-After, time taken.
CREATE TABLE IF NOT EXISTS alert_delivery_attempts
(
    ts              DateTime64(3, 'UTC'),
    key             String,
    channel         LowCardinality(String),
    attempt         UInt16,
    ok              Bool,
    status_code     UInt16,                            -- 0 when no HTTP status (SMTP, network)
    error           String,
    retry_after_s   Float64,
    duration_ms     Float64
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(ts)
ORDER BY (channel, ts);

-- Silences: alerts whose labels match every matcher are not notified between starts_at and
-- ends_at. Expiring a silence sets ends_at to the time of expiry.
CREATE TABLE IF NOT EXISTS alert_silences
(
    id            String,
    matchers      Array(Tuple(name String, op String, value String)),
    starts_at     DateTime64(3, 'UTC'),
    ends_at       DateTime64(3, 'UTC'),
    created_by    String,
    comment       String,
    created_at    DateTime64(3, 'UTC'),
    updated_by    String,
    version       UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY id;
