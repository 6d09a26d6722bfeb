-- GPUs idle now (DESIGN.md "Idle window"): one alert per open idle window and GPU (or MIG slice).
-- A window is open when it holds its GPU entity's latest sample (is_open) and that sample is at
-- most {stale_minutes} old at {now} (a GPU that stopped reporting, or a derivation that stopped,
-- does not keep paging); it fires once it has lasted {min_hours} and resolves when the window ends,
-- at the first derivation after (`gpuledger up` derives every analytics.interval_minutes, which
-- stale_minutes must exceed). A window that ended before never fires: it goes into the team's
-- digest. The window's start is its identity; value: the hours it has lasted.
SELECT
    host,
    gpu_uuid,
    mig_instance,
    pool,
    environment,
    region,
    kind,
    team,
    user,
    job_id,
    k8s_namespace,
    k8s_pod,
    formatDateTime(start, '%Y-%m-%dT%H:%i:%SZ', 'UTC')                      AS window_start,
    duration_s / 3600.0                                                      AS value,
    formatDateTime(end, '%Y-%m-%dT%H:%i:%SZ', 'UTC')                        AS annotation_window_end,
    formatDateTime(start, '%Y-%m-%d %H:%i', 'UTC')                          AS annotation_since,
    toString(round(cost_usd, 2))                                             AS annotation_usd,
    toString(round(cost_usd / greatest(covered_s, 1) * 3600, 2))             AS annotation_usd_per_hour,
    if(mig_instance = '', gpu_uuid, concat(gpu_uuid, ' MIG ', mig_instance)) AS annotation_gpu,
    concat(if(model = '', 'GPU', model), if(mig_instance = '', '', concat(' (MIG ', mig_instance, ')')),
           ' on ', host)                                                     AS annotation_what,
    if(kind = 'allocated',
       concat(multiIf(job_id != '' AND user != '', concat('job ', job_id, ' of user ', user),
                      job_id != '', concat('job ', job_id),
                      k8s_pod != '', concat('pod ', if(k8s_namespace = '', '', concat(k8s_namespace, '/')), k8s_pod),
                      user != '', concat('user ', user),
                      'a process'),
              ' (team ', team, ') has held an idle ', annotation_what),
       concat('the unallocated ', annotation_what, ' has sat idle'))        AS annotation_situation,
    multiIf(kind = 'allocated' AND job_id != '', 'stop the job or release the GPU',
            kind = 'allocated' AND k8s_pod != '', 'scale the pod down or release its GPU',
            kind = 'allocated', 'end the idle process or release the GPU',
            environment IN ('onprem', ''), 'schedule work onto it or power it down',
            'stop the instance or scale its node group down')              AS annotation_action
FROM v_idle_waste
WHERE is_open = 1
  AND duration_s >= {min_hours:Float64} * 3600
  AND end >= {now:DateTime64(3, 'UTC')} - toIntervalSecond(toUInt64({stale_minutes:Float64} * 60))
  AND start <= {now:DateTime64(3, 'UTC')}
