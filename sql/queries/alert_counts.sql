-- Overview: alerts per state (firing, pending, resolved), for the selected teams.
SELECT state, severity, count() AS alerts
FROM alert_state FINAL
WHERE state IN ('firing', 'pending', 'resolved')
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, labels['team']))
  AND (empty({envs:Array(String)}) OR labels['environment'] = '' OR has({envs:Array(String)}, labels['environment']))
GROUP BY state, severity
ORDER BY state, severity
