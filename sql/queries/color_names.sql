-- Every figure: the names each colour is assigned from (dashboard/figures.py color()). All the
-- teams, pools and environments in the store, whatever the filters, so that a name keeps its colour
-- on every page and under every filter (until a new name arrives; the result is cached per data version).
-- One pass over each table: the distinct names of every kind at once.
SELECT kind, arraySort(arrayDistinct(arrayFlatten(groupArray(names)))) AS names
FROM
(
    SELECT ['team', 'environment'] AS kinds, [groupUniqArray(team), groupUniqArray(environment)] AS found
    FROM team_spend_day
    UNION ALL
    SELECT ['team', 'pool', 'environment'], [groupUniqArray(team), groupUniqArray(pool), groupUniqArray(environment)]
    FROM gpu_cost_day
)
ARRAY JOIN kinds AS kind, found AS names
GROUP BY kind
ORDER BY kind
