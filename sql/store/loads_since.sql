-- What the sample files and billing loads recorded since a time (a command run through the
-- platform): rows loaded from sample files, rows and quarantined rows of billing loads.
SELECT
    (SELECT sum(rows) FROM ingested_files WHERE kind = 'samples' AND loaded_at >= {since:DateTime64(3, 'UTC')}) AS sample_rows,
    (SELECT sum(rows) FROM billing_loads WHERE finished_at >= {since:DateTime64(3, 'UTC')}) AS billing_rows,
    (SELECT sum(quarantined) FROM billing_loads WHERE finished_at >= {since:DateTime64(3, 'UTC')}) AS quarantined
