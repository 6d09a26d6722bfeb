-- GPU health, one finding per GPU: uncorrected ECC errors, XID events, and hardware slowdown /
-- thermal / power-brake throttling ({throttle_mask:UInt64} of NVML's clocks-event reasons).
-- Errors are counted where they happen, at hour resolution, from each GPU's hours since a week
-- before {since:DateTime}, so a count that merely stays where it was is no new error:
--   ECC: the rises of the volatile uncorrected counter from one hour with a reading to the next
--        (after a fall, a reset by a reboot or driver reload, the whole new count);
--   XID: the events the agent counted (xid_count), or where the hour counted none, a change of
--        the last XID reported (dcgm-exporter's DCGM_FI_DEV_XID_ERRORS keeps the last XID and
--        gives no count).
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
    SELECT host, gpu_uuid, any(env) AS env, any(reg) AS reg, any(pl) AS pl,
           if({ecc:UInt8}, sum(new_ecc), 0) AS ecc,
           if({xid:UInt8}, sum(new_xids), 0) AS xids, argMaxIf(xid, hour, xid IS NOT NULL) AS last_xid,
           countIf(throttled) AS throttled_hours,
           minIf(hour, bad) AS first,
           maxIf(hour, bad) + INTERVAL 1 HOUR AS last
    FROM
    (
        SELECT *,
               toUInt64(if(ecc_count IS NULL, 0,
                           if(ecc_count >= coalesce(ecc_before, 0), ecc_count - coalesce(ecc_before, 0), ecc_count))) AS new_ecc,
               toUInt64(if(xid_count > 0, xid_count, xid IS NOT NULL AND (xid_before IS NULL OR xid != xid_before))) AS new_xids,
               ({ecc:UInt8} AND new_ecc > 0) OR ({xid:UInt8} AND new_xids > 0) OR throttled AS bad
        FROM
        (
            SELECT *,
                   anyLast(ecc_count) OVER w AS ecc_before,
                   anyLast(xid) OVER w AS xid_before
            FROM
            (
                -- one row per GPU and hour (its MIG instances' and owners' rows together)
                SELECT host, gpu_uuid, hour, any(environment) AS env, any(region) AS reg, any(pool) AS pl,
                       max(ecc_uncorrected_max) AS ecc_count, sum(xid_count) AS xid_count, max(xid_last) AS xid,
                       bitAnd(groupBitOr(throttle_reasons), {throttle_mask:UInt64}) != 0 AS throttled
                FROM gpu_hour
                WHERE hour >= {since:DateTime} - INTERVAL 7 DAY AND hour < {until:DateTime}
                  -- only GPUs with something to report in the window (most have nothing)
                  AND (host, gpu_uuid) IN
                  (
                      SELECT host, gpu_uuid FROM gpu_hour
                      WHERE hour >= {since:DateTime} AND hour < {until:DateTime}
                        AND (xid_count > 0 OR xid_last IS NOT NULL OR ecc_uncorrected_max > 0
                             OR bitAnd(throttle_reasons, {throttle_mask:UInt64}) != 0)
                  )
                GROUP BY host, gpu_uuid, hour
            )
            WINDOW w AS (PARTITION BY host, gpu_uuid ORDER BY hour ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
        )
    )
    WHERE hour >= {since:DateTime}
    GROUP BY host, gpu_uuid
)
WHERE ecc > 0 OR xids > 0 OR throttled_hours > 0
