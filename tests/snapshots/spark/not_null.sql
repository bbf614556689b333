SELECT COUNT(*) AS n FROM `t_src` AS src WHERE NOT `src`.`a"b` IS NULL AND NOT `src`.`x; DROP TABLE t; --` IS NULL
