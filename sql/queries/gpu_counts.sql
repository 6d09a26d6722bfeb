-- Overview's GPUs tile and the demo summary: GPUs and GPU entities seen in the range.
-- A GPU is a physical GPU, one (host, gpu_uuid); a GPU entity is what the samples are of: a whole
-- GPU or one MIG instance of it (host, gpu_uuid, mig_instance). A GPU split into MIG instances is
-- one GPU and as many GPU entities as it has instances (docs/dashboard.md "Definitions").
-- Reads gpu_cost_day, like the rest of the Overview: the range is whole UTC days.
-- Each entity once first (grouped by its key, then counted): four uniqExact over every day's row
-- of a 10,000-GPU fleet's 90 days took ~2.7× as long.
SELECT uniqExact(host, gpu_uuid)                      AS gpus,
       count()                                        AS gpu_entities,
       countIf(mig_instance != '')                    AS mig_instances,
       uniqExactIf((host, gpu_uuid), mig_instance != '') AS mig_gpus
FROM
(
    SELECT host, gpu_uuid, mig_instance
    FROM (__GPU_COST__)
    WHERE (empty({envs:Array(String)}) OR has({envs:Array(String)}, environment))
      AND (empty({teams:Array(String)}) OR has({teams:Array(String)}, team))
    GROUP BY host, gpu_uuid, mig_instance
)
