-- The filter bar's choices: environments and teams seen in team spend, most spend (any currency)
-- first, at most {max_options:UInt32} of each; `seen` is how many there are in all. Names longer
-- than a URL value may be ({max_chars:UInt32} characters) are left out: no filter could name them.
SELECT kind, value, seen
FROM
(
    SELECT kind, value, count() OVER (PARTITION BY kind) AS seen,
           row_number() OVER (PARTITION BY kind ORDER BY spend DESC, value) AS n
    FROM
    (
        SELECT 'env' AS kind, environment AS value, sum(abs(cost)) AS spend FROM team_spend_day GROUP BY environment
        UNION ALL
        SELECT 'team' AS kind, team AS value, sum(abs(cost)) AS spend FROM team_spend_day GROUP BY team
    )
    WHERE lengthUTF8(value) <= {max_chars:UInt32}
)
WHERE n <= {max_options:UInt32}
ORDER BY kind, value
