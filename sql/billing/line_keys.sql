-- The load's lines (staged in __STAGE__), each with a line_item_key of its own. The key hashes a
-- line's identity (ingest/billing/stage.py IDENTITY: the same across restatements, costs not part
-- of it), and lines can share one: rows that differ only in tags, quantities or amounts, or not at
-- all (FOCUS, Azure and GCP rows carry no line id; the FOCUS spec's own examples repeat rows). The
-- derivation joins bill lines on the key, so a shared key doubled a line in the showback and
-- spread each GPU-instance line over the others' weight. The first of such lines (by file and row)
-- keeps the key; the n-th after it takes the hash of (key, n).
SELECT * REPLACE (if(n = 0, line_item_key, toFixedString(hex(sipHash128(line_item_key, n)), 32)) AS line_item_key)
FROM
(
    SELECT *, row_number() OVER (PARTITION BY line_item_key ORDER BY source_file, source_row) - 1 AS n
    FROM `__STAGE__`
)
