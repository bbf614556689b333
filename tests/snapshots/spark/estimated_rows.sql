SELECT APPROX_COUNT_DISTINCT(`src`.`key`) AS e0, APPROX_COUNT_DISTINCT(`src`.`key` & 67) AS e1 FROM `t_keyed` AS src
