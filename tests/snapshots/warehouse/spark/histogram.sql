SELECT
  CAST(CAST(CAST(`src`.`a"b` AS STRING) AS BINARY) AS STRING) AS `a"b`,
  CAST(CAST(CAST(`src`.`c``d'e` AS STRING) AS BINARY) AS STRING) AS `c``d'e`,
  `src`.`x; DROP TABLE t; --` AS `x; DROP TABLE t; --`,
  COUNT(*) AS `__sqlclose_count`
FROM `my-project`.`ana;lytics`.`peo"ple` AS `src`
GROUP BY
  CAST(CAST(CAST(`src`.`a"b` AS STRING) AS BINARY) AS STRING),
  CAST(CAST(CAST(`src`.`c``d'e` AS STRING) AS BINARY) AS STRING),
  `src`.`x; DROP TABLE t; --`
