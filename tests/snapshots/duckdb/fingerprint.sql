SELECT COUNT(*) AS row_count, CAST(COALESCE(SUM(HASH(__sqlclose_row)), 0) AS TEXT) AS fingerprint FROM "t_src" AS __sqlclose_row
