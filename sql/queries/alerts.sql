-- Alerts: current alerts (firing, pending, resolved) with labels and summary.
SELECT state, severity, rule, labels['team'] AS team, labels, annotations['summary'] AS summary, value,
       active_since, fired_at, resolved_at, evaluated_at, fingerprint
FROM alert_state FINAL
WHERE state IN ('firing', 'pending', 'resolved')
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, labels['team']))
  AND (empty({envs:Array(String)}) OR labels['environment'] = '' OR has({envs:Array(String)}, labels['environment']))
ORDER BY state = 'firing' DESC, state = 'pending' DESC, severity = 'critical' DESC, active_since DESC
LIMIT 1000
