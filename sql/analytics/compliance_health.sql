-- GPU health: uncorrected ECC errors, XID events, and hardware slowdown / thermal / power-brake
-- throttling ({throttle_mask:UInt64} of NVML's clocks-event reasons).
SELECT
    'gpu_health'                                                    AS policy,
    concat('health/', host, '/', gpu_uuid, '/', problem)            AS finding_key,
    if(problem = 'throttle', 'warning', 'critical')                 AS severity,
    '' AS team, env AS environment, env AS provider, reg AS region, pl AS pool, host, gpu_uuid, '' AS resource_id,
    multiIf(problem = 'ecc', format('GPU {} on {}: {} uncorrected ECC errors', gpu_uuid, host, toString(ecc)),
            problem = 'xid', format('GPU {} on {}: {} XID events (last XID {})', gpu_uuid, host, toString(xids), toString(last_xid)),
            format('GPU {} on {}: hardware throttling during {} hours', gpu_uuid, host, toString(throttled_hours))) AS summary,
    toJSONString([map('host', host, 'gpu_uuid', gpu_uuid, 'ecc_uncorrected', toString(ecc), 'xid_events', toString(xids),
                      'xid_last', toString(last_xid), 'throttled_hours', toString(throttled_hours),
                      'first', toString(first), 'last', toString(last))]) AS evidence,
    0.                                                              AS cost_usd,
    first                                                           AS first_seen,
    last                                                            AS last_seen
FROM
(
    SELECT host, gpu_uuid, any(environment) AS env, any(region) AS reg, any(pool) AS pl,
           coalesce(max(ecc_uncorrected_max), 0) AS ecc,
           sum(xid_count) AS xids, argMaxIf(xid_last, hour, xid_last IS NOT NULL) AS last_xid,
           uniqExactIf(hour, bitAnd(throttle_reasons, {throttle_mask:UInt64}) != 0) AS throttled_hours,
           minIf(hour, xid_count > 0 OR coalesce(ecc_uncorrected_max, 0) > 0 OR bitAnd(throttle_reasons, {throttle_mask:UInt64}) != 0) AS first,
           maxIf(hour, xid_count > 0 OR coalesce(ecc_uncorrected_max, 0) > 0 OR bitAnd(throttle_reasons, {throttle_mask:UInt64}) != 0) + INTERVAL 1 HOUR AS last
    FROM gpu_hour
    WHERE hour >= {since:DateTime} AND hour < {until:DateTime}
    GROUP BY host, gpu_uuid
)
ARRAY JOIN arrayFilter(p -> (p = 'ecc' AND ecc > 0 AND {ecc:UInt8}) OR (p = 'xid' AND xids > 0 AND {xid:UInt8})
                            OR (p = 'throttle' AND throttled_hours > 0), ['ecc', 'xid', 'throttle']) AS problem
