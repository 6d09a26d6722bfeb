-- Alerts: state changes in the range, newest first.
SELECT ts, rule, severity, from_state, to_state, labels['team'] AS team, value, summary, labels, fingerprint
FROM alert_events
WHERE ts >= {start:DateTime('UTC')} AND ts < {end:DateTime('UTC')}
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, labels['team']))
  AND (empty({envs:Array(String)}) OR labels['environment'] = '' OR has({envs:Array(String)}, labels['environment']))
ORDER BY ts DESC, rule, fingerprint
LIMIT 500
