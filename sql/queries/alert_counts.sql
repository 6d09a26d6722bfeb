-- Overview: alerts per state (firing, pending, resolved), for the selected teams and environments.
-- An alert's environment is its `environment` label, else its `provider` (a compliance finding's);
-- an alert with neither shows under every environment.
SELECT state, severity, count() AS alerts
FROM alert_state FINAL
WHERE state IN ('firing', 'pending', 'resolved')
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, labels['team']))
  AND (empty({envs:Array(String)}) OR has(arrayPushBack({envs:Array(String)}, ''),
                                      if(labels['environment'] != '', labels['environment'], labels['provider'])))
GROUP BY state, severity
ORDER BY state, severity
