-- The columns of table {t} that an INSERT may name (default kinds {kinds}: '' and/or 'DEFAULT';
-- never MATERIALIZED or ALIAS), in order, with their types.
SELECT name, type
FROM system.columns
WHERE database = currentDatabase() AND table = {t:String} AND default_kind IN {kinds:Array(String)}
ORDER BY position
