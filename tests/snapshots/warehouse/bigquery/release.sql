WITH `__sqlclose_lookup_q0` AS (
  SELECT
    *
  FROM UNNEST([
    STRUCT('x' AS `value`, 0 AS `code`, 'x\'y' AS `label_1`),
    STRUCT('y' AS `value`, 0 AS `code`, 'x\'y' AS `label_1`),
    STRUCT('z' AS `value`, 1 AS `code`, 'z\\w' AS `label_1`),
    STRUCT('w' AS `value`, 1 AS `code`, 'z\\w' AS `label_1`),
    STRUCT('it\'s' AS `value`, 1 AS `code`, 'z\\w' AS `label_1`)
  ]) AS `t`
), `__sqlclose_lookup_q1` AS (
  SELECT
    *
  FROM UNNEST([STRUCT('a\\b' AS `value`, 0 AS `code`), STRUCT('o\'k' AS `value`, 1 AS `code`)]) AS `t`
), `__sqlclose_suppressed` AS (
  SELECT
    *
  FROM UNNEST([STRUCT(0 AS `q0`, 0 AS `q1`)]) AS `t`
)
SELECT
  `a"b`,
  `x; DROP TABLE t; --`,
  `c\`d'e`
FROM (
  SELECT
    `lk_q0`.`label_1` AS `a"b`,
    CASE
      WHEN `src`.`x; DROP TABLE t; --` IS NULL
      THEN NULL
      ELSE `src`.`x; DROP TABLE t; --`
    END AS `x; DROP TABLE t; --`,
    CASE WHEN `src`.`c\`d'e` IS NULL THEN NULL ELSE `src`.`c\`d'e` END AS `c\`d'e`
  FROM `my-project`.`ana;lytics`.`peo"ple` AS `src`
  JOIN `__sqlclose_lookup_q0` AS `lk_q0`
    ON `lk_q0`.`value` = COALESCE(COLLATE(CAST(`src`.`a"b` AS STRING), ''), 'it\'s')
  JOIN `__sqlclose_lookup_q1` AS `lk_q1`
    ON `lk_q1`.`value` = COLLATE(CAST(`src`.`c\`d'e` AS STRING), '')
  LEFT JOIN `__sqlclose_suppressed` AS `supp`
    ON `supp`.`q0` = `lk_q0`.`code` AND `supp`.`q1` = `lk_q1`.`code`
  WHERE
    `supp`.`q0` IS NULL
) AS `released`
ORDER BY
  `a"b` ASC NULLS LAST,
  `c\`d'e` ASC NULLS LAST,
  COLLATE(CAST(`c\`d'e` AS STRING), '') ASC NULLS LAST,
  `x; DROP TABLE t; --` ASC NULLS LAST,
  COLLATE(CAST(`x; DROP TABLE t; --` AS STRING), '') ASC NULLS LAST
