-- The earliest hour whose waste the idle windows just recomputed (__STAGE__: every window ending at
-- or after {cutoff:DateTime64(3)}) can change, compared with the stored windows they replace
-- (NULL: none). gpu_waste_hour reads of a window only its GPU entity, start, end, kind and team
-- (its first hour's, which changes only with that hour's costs, derived again then), so a
-- window found again with the same start and kind changes nothing before the hour that holds the
-- earlier of its two ends (an open window that grew: the hour it had reached before); any other
-- window, found only now or no longer found, changes everything from its start.
-- A union grouped, not a join: on a cluster both sides are Distributed tables.
SELECT min(changed)
FROM
(
    SELECT multiIf(countIf(stored) = 1 AND countIf(NOT stored) = 1,
                   if(minIf(end, stored) = minIf(end, NOT stored), NULL, toStartOfHour(min(end))),
                   start) AS changed
    FROM
    (
        SELECT host, gpu_uuid, mig_instance, start, kind, end, false AS stored FROM __STAGE__
        UNION ALL
        SELECT host, gpu_uuid, mig_instance, start, kind, end, true AS stored FROM idle_windows
        WHERE end >= {cutoff:DateTime64(3)}
    )
    GROUP BY host, gpu_uuid, mig_instance, start, kind
)
