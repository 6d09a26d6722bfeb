-- Utilization of each team's GPU time, per day and environment.
CREATE OR REPLACE VIEW v_team_utilization AS
SELECT day, team, environment, hours AS gpu_hours, utilized AS utilized_gpu_hours,
       100 * utilized / nullIf(hours, 0) AS utilization_pct
FROM
(
    SELECT toDate(hour) AS day, team, environment, sum(gpu_hours) AS hours, sum(utilized_gpu_hours) AS utilized
    FROM gpu_cost_hour
    WHERE held
    GROUP BY day, team, environment
);
