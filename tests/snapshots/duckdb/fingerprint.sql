SELECT CAST(COALESCE(SUM(MD5_NUMBER_LOWER($1 || CAST(__sqlclose_row AS TEXT))), 0) AS TEXT) AS fingerprint FROM "t_src" AS __sqlclose_row
