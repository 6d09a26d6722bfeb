-- The Kubernetes container that holds a GPU (issue #18): dcgm-exporter's `container` label, and
-- the container name the agent's kubelet lookup finds for a process's cgroup (collector/owners.py).
-- Raw tables only: attribution stays per pod (the rollups' owner is team, user, job, namespace,
-- pod, account); the container says which of a pod's containers held the GPU. Rows stored before
-- this migration read ''.
ALTER TABLE gpu_samples ADD COLUMN IF NOT EXISTS k8s_container LowCardinality(String) DEFAULT '' AFTER k8s_pod;

ALTER TABLE gpu_processes ADD COLUMN IF NOT EXISTS k8s_container LowCardinality(String) DEFAULT '' AFTER k8s_pod;
