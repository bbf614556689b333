SELECT CAST(COALESCE(SUM(CAST(CONV(SUBSTRING(MD5(CONCAT(:p1, TO_JSON(STRUCT(__sqlclose_row.*)))), 17, 16), 16, 10) AS DECIMAL(38, 0))), 0) AS STRING) AS fingerprint FROM `t_src` AS __sqlclose_row
