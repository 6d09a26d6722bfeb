-- The waste digest: one team's waste over [start, end), whole UTC days of gpu_waste_day, by part
-- (DESIGN.md "Waste"; formula in sql/README.md). spend_usd is the cost of the team's GPU time with
-- data; idle (allocated + unallocated) + unused = waste, efficiency = 1 - waste / spend;
-- no_data_usd, time without data at the same rate, is shown apart and is never waste.
-- The team `unallocated` is what no attribution rule claimed (stored as '').
SELECT
    sum(cost_usd)             AS spend_usd,
    sum(idle_allocated_usd)   AS idle_allocated_usd,
    sum(idle_unallocated_usd) AS idle_unallocated_usd,
    sum(unused_usd)           AS unused_usd,
    sum(no_data_usd)          AS no_data_usd,
    sum(gpu_hours)            AS gpu_hours
FROM gpu_waste_day
WHERE team = if({team:String} = 'unallocated', '', {team:String})
  AND day >= toDate({start:DateTime('UTC')}, 'UTC') AND day < toDate({end:DateTime('UTC')}, 'UTC')
