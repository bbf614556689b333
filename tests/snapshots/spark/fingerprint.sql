SELECT COUNT(*) AS row_count, CAST(COALESCE(SUM(CAST(XXHASH64(__sqlclose_row.*) AS DECIMAL(38, 0))), 0) AS STRING) AS fingerprint FROM `t_src` AS __sqlclose_row
