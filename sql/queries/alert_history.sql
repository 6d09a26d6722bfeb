-- Alerts: state changes in the range, newest first.
-- An alert's environment is its `environment` label, else its `provider` (a compliance finding's);
-- an alert with neither shows under every environment.
SELECT ts, rule, severity, from_state, to_state, labels['team'] AS team, value, summary, labels, fingerprint
FROM alert_events
WHERE ts >= {start:DateTime('UTC')} AND ts < {end:DateTime('UTC')}
  AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, labels['team']))
  AND (empty({envs:Array(String)}) OR has(arrayPushBack({envs:Array(String)}, ''),
                                      if(labels['environment'] != '', labels['environment'], labels['provider'])))
ORDER BY ts DESC, rule, fingerprint
LIMIT 500
