-- GPU health, one finding per GPU: uncorrected ECC errors, XID events, and hardware slowdown /
-- thermal / power-brake throttling ({throttle_mask:UInt64} of NVML's clocks-event reasons).
SELECT
    'gpu_health'                                                    AS policy,
    concat('health/', host, '/', gpu_uuid)                          AS finding_key,
    if(ecc > 0 OR xids > 0, 'critical', 'warning')                  AS severity,
    '' AS team, env AS environment, env AS provider, reg AS region, pl AS pool, host, gpu_uuid, '' AS resource_id,
    format('GPU {} on {}: {}', gpu_uuid, host, arrayStringConcat(arrayFilter(x -> x != '', [
        if(ecc > 0, format('{} uncorrected ECC errors', toString(ecc)), ''),
        if(xids > 0, format('{} XID events (last XID {})', toString(xids), toString(last_xid)), ''),
        if(throttled_hours > 0, format('hardware throttling during {} hours', toString(throttled_hours)), '')]), '; ')) AS summary,
    toJSONString([map('host', host, 'gpu_uuid', gpu_uuid, 'ecc_uncorrected', toString(ecc), 'xid_events', toString(xids),
                      'xid_last', toString(last_xid), 'throttled_hours', toString(throttled_hours),
                      'first', toString(first), 'last', toString(last))]) AS evidence,
    0.                                                              AS cost_usd,
    first                                                           AS first_seen,
    last                                                            AS last_seen
FROM
(
    SELECT host, gpu_uuid, any(environment) AS env, any(region) AS reg, any(pool) AS pl,
           if({ecc:UInt8}, coalesce(max(ecc_uncorrected_max), 0), 0) AS ecc,
           if({xid:UInt8}, sum(xid_count), 0) AS xids, argMaxIf(xid_last, hour, xid_last IS NOT NULL) AS last_xid,
           uniqExactIf(hour, bitAnd(throttle_reasons, {throttle_mask:UInt64}) != 0) AS throttled_hours,
           minIf(hour, xid_count > 0 OR coalesce(ecc_uncorrected_max, 0) > 0 OR bitAnd(throttle_reasons, {throttle_mask:UInt64}) != 0) AS first,
           maxIf(hour, xid_count > 0 OR coalesce(ecc_uncorrected_max, 0) > 0 OR bitAnd(throttle_reasons, {throttle_mask:UInt64}) != 0) + INTERVAL 1 HOUR AS last
    FROM gpu_hour
    WHERE hour >= {since:DateTime} AND hour < {until:DateTime}
    GROUP BY host, gpu_uuid
)
WHERE ecc > 0 OR xids > 0 OR throttled_hours > 0
