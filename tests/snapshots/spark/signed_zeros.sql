SELECT COALESCE(SUM(IF(`x` = 0 AND CAST(`x` AS STRING) LIKE '-%', 1, 0)), 0) AS negative, COALESCE(SUM(IF(`x` = 0 AND NOT CAST(`x` AS STRING) LIKE '-%', 1, 0)), 0) AS positive FROM `t_floats`
