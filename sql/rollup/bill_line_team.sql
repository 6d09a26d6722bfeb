-- Every bill line with gpuledger's environment for its provider and the team the attribution
-- rules (__TEAM_RULES__, from config) give it: the one definition of a line's owner, filled as
-- the bill_lines fragment into the queries that attribute whole lines (spend.sql, showback.sql). A line has
-- no process owner, so only the tag, account, region and resource fields can match.
SELECT *, __TEAM_RULES__ AS attribution
FROM
(
    SELECT *,
        multiIf(lower(ProviderName) LIKE '%amazon%' OR lower(ProviderName) LIKE 'aws%', 'aws',
                lower(ProviderName) LIKE '%microsoft%' OR lower(ProviderName) LIKE '%azure%', 'azure',
                lower(ProviderName) LIKE '%google%' OR lower(ProviderName) LIKE 'gcp%', 'gcp',
                lower(ProviderName)) AS environment,
        Tags AS tags, SubAccountId AS account, RegionId AS region, ResourceId AS instance_id,
        '' AS team, '' AS user, '' AS job_id, '' AS k8s_namespace, '' AS k8s_pod, '' AS slurm_account,
        '' AS host, '' AS pool, '' AS cluster, '' AS instance_type
    FROM billing_line_items
)
