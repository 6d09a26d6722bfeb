-- The samples the derivation reads on a day with split hosts (minute.sql and idle_segments.sql read
-- this in place of gpu_samples; on any other day gpu_samples itself): one row per GPU entity and
-- sample time. A sample can arrive in parts: Prometheus remote_write spreads one scrape's series
-- over several requests, so one GPU's sample is stored as several rows at the same ts, each with
-- some of the columns (the receiver merges the parts within one request only). For the hosts
-- {split_hosts} (split_hosts.sql: some GPU entity of theirs has more than one row at one time) the
-- rows of one entity and ts are merged column by column: each column takes the largest value the
-- parts give (NULL where none gives one; a label a part lacks is '', so the one given wins).
-- Every other host's rows are read as they are. Read it with the range filtered outside: the
-- filter reaches both branches (on ts, a grouping key).
(
    SELECT host, gpu_uuid, mig_instance, ts, environment, region, pool, instance_id, model,
        util_gpu, util_mem, mem_used_bytes, mem_total_bytes, power_w, temperature_c, xid_count, xid_last,
        ecc_uncorrected_volatile, ecc_corrected_volatile, throttle_reasons, process_count,
        team, user, job_id, k8s_namespace, k8s_pod, slurm_account
    FROM gpu_samples
    WHERE NOT has({split_hosts:Array(String)}, host)
    UNION ALL
    SELECT host, gpu_uuid, mig_instance, ts, max(environment), max(region), max(pool), max(instance_id), max(model),
        max(util_gpu), max(util_mem), max(mem_used_bytes), max(mem_total_bytes), max(power_w), max(temperature_c),
        max(xid_count), max(xid_last), max(ecc_uncorrected_volatile), max(ecc_corrected_volatile),
        max(throttle_reasons), max(process_count),
        max(team), max(user), max(job_id), max(k8s_namespace), max(k8s_pod), max(slurm_account)
    FROM gpu_samples
    WHERE host IN {split_hosts:Array(String)}
    GROUP BY host, gpu_uuid, mig_instance, ts
)
