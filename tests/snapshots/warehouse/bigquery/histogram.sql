SELECT
  COLLATE(CAST(`src`.`a"b` AS STRING), '') AS `a"b`,
  COLLATE(CAST(`src`.`c\`d'e` AS STRING), '') AS `c\`d'e`,
  `src`.`x; DROP TABLE t; --` AS `x; DROP TABLE t; --`,
  COUNT(*) AS `__sqlclose_count`
FROM `my-project`.`ana;lytics`.`peo"ple` AS `src`
GROUP BY
  COLLATE(CAST(`src`.`a"b` AS STRING), ''),
  COLLATE(CAST(`src`.`c\`d'e` AS STRING), ''),
  `src`.`x; DROP TABLE t; --`
