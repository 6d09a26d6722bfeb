-- Every figure: the names each colour is assigned from (dashboard/figures.py color()). All the
-- teams, pools and environments in the store, whatever the filters, so that a name keeps its colour
-- on every page and under every filter (until a new name arrives; the result is cached per data version).
-- Each name column is grouped on its own: the engine groups a single LowCardinality column on its
-- dictionary, so on 10,000 GPUs × 90 days this takes ~15 ms, not the ~25 ms of one pass collecting
-- every kind at once.
SELECT kind, arraySort(groupUniqArray(name)) AS names
FROM
(
    SELECT 'team' AS kind, toString(team) AS name FROM team_spend_day GROUP BY team
    UNION ALL SELECT 'environment', toString(environment) FROM team_spend_day GROUP BY environment
    UNION ALL SELECT 'team', toString(team) FROM gpu_cost_day GROUP BY team
    UNION ALL SELECT 'pool', toString(pool) FROM gpu_cost_day GROUP BY pool
    UNION ALL SELECT 'environment', toString(environment) FROM gpu_cost_day GROUP BY environment
)
GROUP BY kind
ORDER BY kind
