-- The samples of the split hosts, as the derivation reads them (minute.sql and idle_segments.sql read
-- this in place of gpu_samples in their run for those hosts): one row per GPU entity and sample
-- time. A sample can arrive in parts: Prometheus remote_write spreads one scrape's series
-- over several requests, so one GPU's sample is stored as several rows at the same ts, each with
-- some of the columns (the receiver merges the parts within one request only). For the hosts
-- {split_hosts} (split_hosts.sql: some GPU entity of theirs has more than one row at one time) the
-- rows of one entity and ts are merged column by column: each column takes the largest value the
-- parts give (NULL where none gives one; a label a part lacks is '', so the one given wins).
-- Every other host's rows are read as they are, in a run of their own, in the table's order (a
-- window over them then needs no sort). Read it with the range filtered outside: the filter on
-- ts, a grouping key, reaches the table.
(
    SELECT host, gpu_uuid, mig_instance, ts, max(environment) AS environment, max(region) AS region,
        max(pool) AS pool, max(instance_id) AS instance_id, max(model) AS model,
        max(util_gpu) AS util_gpu, max(util_mem) AS util_mem, max(mem_used_bytes) AS mem_used_bytes,
        max(mem_total_bytes) AS mem_total_bytes, max(power_w) AS power_w, max(temperature_c) AS temperature_c,
        max(xid_count) AS xid_count, max(xid_last) AS xid_last, max(ecc_uncorrected_volatile) AS ecc_uncorrected_volatile,
        max(ecc_corrected_volatile) AS ecc_corrected_volatile, max(throttle_reasons) AS throttle_reasons,
        max(process_count) AS process_count, max(team) AS team, max(user) AS user, max(job_id) AS job_id,
        max(k8s_namespace) AS k8s_namespace, max(k8s_pod) AS k8s_pod, max(slurm_account) AS slurm_account
    FROM gpu_samples
    WHERE host IN {split_hosts:Array(String)}
    GROUP BY host, gpu_uuid, mig_instance, ts
)
