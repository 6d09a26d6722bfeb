-- What each day was last derived from: sample rows, billing fingerprint, config fingerprint.
SELECT day,
       argMax(sample_rows, computed_at),
       argMax(billing_fingerprint, computed_at),
       argMax(config_fingerprint, computed_at)
FROM derivation_state
GROUP BY day
