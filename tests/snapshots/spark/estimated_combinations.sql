SELECT APPROX_COUNT_DISTINCT((`src`.`a"b`, `src`.`x; DROP TABLE t; --`, `src`.`age`)) AS combinations FROM `t_src` AS src
