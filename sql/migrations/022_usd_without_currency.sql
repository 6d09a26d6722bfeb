-- Bill lines with no BillingCurrency are USD in team_spend_day (they had a '' currency of their
-- own, left out of every USD figure): every day in the lookback is derived again by the next
-- `gpuledger rollup` (or the platform's rollup job). Days older than the lookback keep their rows
-- until `gpuledger rollup --force --since DAY`.
TRUNCATE TABLE IF EXISTS derivation_state;
