-- Showback of the whole fleet in FOCUS columns, attributed to teams (x_Team): every cloud bill
-- line (split among the teams that used it where it paid for GPU time), cloud GPU time whose bill
-- has not arrived (at list price, x_Estimated = 1) and on-prem GPU cost by component
-- (ProviderName 'On-premises'). One row per day, team and charge; sql/README.md "FOCUS showback"
-- says how each column is filled. Derived by the scheduler into showback_focus_day.
CREATE OR REPLACE VIEW v_showback_focus AS
SELECT * EXCEPT (day)
FROM showback_focus_day;
