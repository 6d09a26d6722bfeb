-- One replica of every shard of cluster {c}, as this node's remote_servers lists them: where a
-- shard derives its own rows (the first replica; reads of staging tables prefer it too, with
-- load_balancing = 'in_order'). The weights say which shard a sharding-key value goes to.
SELECT shard_num, shard_weight, host_name
FROM system.clusters
WHERE cluster = {c:String} AND replica_num = 1
ORDER BY shard_num
