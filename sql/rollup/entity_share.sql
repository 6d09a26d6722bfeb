-- The part of its physical GPU that each GPU entity-hour stands for: a CTE body filled into
-- cost.sql and line_hours.sql (their ENTITY_SHARE placeholder), over the gpu_hour rows of their CTE
-- `entity_rows`; one row per (host, gpu_uuid, hour, mig_instance) with its instance_key, covered
-- seconds, `share`, and `gpu_share_s` (its GPU's covered seconds × share, summed over the GPU's entities).
-- A GPU without MIG instances: 1. With MIG, the GPU is shared by compute slices (A30: 4 a GPU,
-- every other MIG GPU 7; a profile `3g.40gb` holds 3):
-- * beside a whole-GPU row (the NVML agent sends one with the instances) an instance holds its
--   slices ÷ the GPU's, and the whole-GPU row the slices no instance holds;
-- * with no whole-GPU row (dcgm-exporter has none) the instances share the whole GPU by their
--   slices, so slices no instance holds are not lost;
-- * instances without a known profile (nvidia-smi -q -x gives none) share the GPU equally.
-- The slices in use in an hour are weighted by coverage (an instance there half the hour counts
-- half), so an hour in which the GPU is re-partitioned still adds up to the GPU.
SELECT host, gpu_uuid, hour, mig_instance, instance_key, covered_s, mig, share,
       sum(covered_s * share) OVER gpu AS gpu_share_s
FROM
(
    SELECT *,
        multiIf(NOT mig, 1.,
                unknown > 0, if(mig_instance = '', 0., 1. / instances),
                mig_instance = '', greatest(0., 1. - in_use / per_gpu),
                whole, slices / per_gpu,
                if(in_use > 0, slices / in_use, 0.)) AS share
    FROM
    (
        SELECT *, instances > 0 AS mig,
            least(per_gpu, coalesce(slice_s / nullIf(longest_s, 0), 0)) AS in_use
        FROM
        (
            SELECT host, gpu_uuid, hour, mig_instance, instance_key, covered_s, slices, per_gpu,
                countIf(mig_instance != '') OVER gpu                  AS instances,
                countIf(mig_instance != '' AND slices = 0) OVER gpu   AS unknown,
                countIf(mig_instance = '') OVER gpu > 0               AS whole,
                sum(slices * covered_s) OVER gpu                      AS slice_s,
                maxIf(covered_s, mig_instance != '') OVER gpu         AS longest_s
            FROM
            (
                SELECT host, gpu_uuid, hour, mig_instance, any(instance_key) AS instance_key, sum(covered_s) AS covered_s,
                    if(mig_instance = '', 0, toUInt32OrZero(extract(any(mig_profile), '(\\d+)g\\.'))) AS slices,
                    if(any(model) ILIKE '%A30%', 4, 7) AS per_gpu
                FROM entity_rows
                GROUP BY host, gpu_uuid, hour, mig_instance
            )
            WINDOW gpu AS (PARTITION BY host, gpu_uuid, hour)
        )
    )
)
WINDOW gpu AS (PARTITION BY host, gpu_uuid, hour)
