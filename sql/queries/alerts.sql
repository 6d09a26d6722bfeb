-- Alerts: current alerts (firing, pending, resolved) with labels and summary; the value's unit as
-- the engine wrote it (annotations['value'] is alerts.evaluate.with_unit(value, rule unit): "$1,234.50"
-- for USD, else "<number> <unit>"); the team's contact channel (config_teams, [[teams]] contact);
-- and where each alert was delivered: per channel, the newest notification of its current activity
-- that names it (alert_notifications, firing or resolved) and that notification's last attempt
-- (alert_delivery_attempts). Unmatched LEFT JOIN columns are their defaults ('', [], 0): the
-- dashboard's read-only handles cannot set join_use_nulls.
-- An alert's environment is its `environment` label, else its `provider` (a compliance finding's);
-- an alert with neither shows under every environment.
WITH current AS (
    SELECT state, severity, rule, labels, annotations, value, active_since, fired_at, resolved_at,
           evaluated_at, fingerprint
    FROM alert_state FINAL
    WHERE state IN ('firing', 'pending', 'resolved')
      AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, labels['team']))
      AND (empty({envs:Array(String)}) OR has(arrayPushBack({envs:Array(String)}, ''),
                                          if(labels['environment'] != '', labels['environment'], labels['provider'])))
),
newest AS (
    SELECT n.fp AS fingerprint, n.channel AS channel,
           argMax((n.key, n.kind, n.status, n.attempts, n.delivered_at, n.next_attempt_at, n.last_error), n.created_at) AS last,
           max(n.created_at) AS notified_at
    FROM (
        SELECT key, channel, kind, status, attempts, delivered_at, next_attempt_at, last_error, created_at, fp
        FROM alert_notifications FINAL
        ARRAY JOIN arrayConcat(firing, resolved) AS fp
        WHERE kind != 'test' AND fp IN (SELECT fingerprint FROM current)
    ) AS n
    INNER JOIN current AS c ON c.fingerprint = n.fp
    WHERE n.created_at >= c.active_since
    GROUP BY fingerprint, channel
),
tried AS (
    SELECT key, argMax(status_code, ts) AS status_code, argMax(error, ts) AS error, max(ts) AS tried_at
    FROM alert_delivery_attempts
    WHERE key IN (SELECT last.1 FROM newest)
    GROUP BY key
),
delivered AS (
    SELECT nw.fingerprint AS fingerprint,
           arraySort(x -> x.1, groupArray((nw.channel, nw.last.2, nw.last.3, toUInt32(nw.last.4), nw.notified_at,
                                           nw.last.5, nw.last.6, nw.last.7, t.status_code, t.error, t.tried_at))) AS deliveries
    FROM newest AS nw
    LEFT JOIN tried AS t ON t.key = nw.last.1
    GROUP BY fingerprint
)
SELECT c.state AS state, c.severity AS severity, c.rule AS rule, c.labels['team'] AS team, c.labels AS labels,
       c.annotations['summary'] AS summary, c.value AS value,
       if(startsWith(c.annotations['value'], '$'), c.annotations['value'],
          extract(c.annotations['value'], '^-?[0-9][0-9,]*(?:\\.[0-9]+)?')) AS value_text,
       if(startsWith(c.annotations['value'], '$'), 'USD',
          trimBoth(replaceRegexpOne(c.annotations['value'], '^-?[0-9][0-9,]*(?:\\.[0-9]+)?', ''))) AS unit,
       c.active_since AS active_since, c.fired_at AS fired_at, c.resolved_at AS resolved_at,
       c.evaluated_at AS evaluated_at, c.fingerprint AS fingerprint,
       ct.contact AS contact, d.deliveries AS deliveries
FROM current AS c
LEFT JOIN (SELECT team, any(t.contact) AS contact FROM config_teams AS t WHERE t.contact != '' GROUP BY team) AS ct
    ON ct.team = c.labels['team']
LEFT JOIN delivered AS d ON d.fingerprint = c.fingerprint
ORDER BY c.state = 'firing' DESC, c.state = 'pending' DESC, c.severity = 'critical' DESC, c.active_since DESC,
         c.rule, c.fingerprint
LIMIT 1000
