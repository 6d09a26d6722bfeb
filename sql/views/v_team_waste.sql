-- Waste in money per month, team and environment (DESIGN.md "Waste"; formula in sql/README.md):
-- spend_usd is the cost of the team's GPU time with data; idle_usd the part inside idle windows
-- (allocated + unallocated), unused_usd the part of the rest left unused; waste_usd = idle_usd +
-- unused_usd; efficiency_pct = 100 × (1 - waste_usd / spend_usd). no_data_usd, time without data
-- at the same rate, is neither spend nor waste.
CREATE OR REPLACE VIEW v_team_waste AS
SELECT month, team, environment, spend_usd,
    allocated + unallocated                                    AS idle_usd,
    unused                                                     AS unused_usd,
    allocated + unallocated + unused                           AS waste_usd,
    if(spend_usd > 0, 100 * (1 - waste_usd / spend_usd), NULL) AS efficiency_pct,
    no_data                                                    AS no_data_usd,
    allocated                                                  AS idle_allocated_usd,
    unallocated                                                AS idle_unallocated_usd
FROM
(
    SELECT toStartOfMonth(day) AS month, if(team = '', 'unallocated', team) AS team, environment,
        sum(cost_usd) AS spend_usd, sum(idle_allocated_usd) AS allocated, sum(idle_unallocated_usd) AS unallocated,
        sum(unused_usd) AS unused, sum(no_data_usd) AS no_data
    FROM gpu_waste_day
    GROUP BY month, team, environment
);
