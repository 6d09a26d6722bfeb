-- Spend per team and day by environment and cost kind.
CREATE OR REPLACE VIEW v_team_spend AS
SELECT day, team, environment, cost_kind, currency, cost AS cost_usd, estimated_cost AS estimated_usd,
       gpu_hours, utilized_gpu_hours
FROM team_spend_day;
