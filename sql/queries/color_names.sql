-- Every figure: the names each colour is assigned from (dashboard/figures.py color()). All the
-- teams, pools and environments in the store, whatever the filters, so that a name keeps its colour
-- on every page and under every filter (until a new name arrives; the result is cached per data version).
SELECT kind, arraySort(groupUniqArray(name)) AS names
FROM
(
    SELECT 'team' AS kind, team AS name FROM team_spend_day
    UNION ALL SELECT 'environment', environment FROM team_spend_day
    UNION ALL SELECT 'team', team FROM gpu_cost_day
    UNION ALL SELECT 'pool', pool FROM gpu_cost_day
    UNION ALL SELECT 'environment', environment FROM gpu_cost_day
)
GROUP BY kind
ORDER BY kind
