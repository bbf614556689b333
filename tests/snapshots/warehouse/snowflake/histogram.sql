SELECT
  COLLATE(CAST("src"."a""b" AS VARCHAR), 'utf8') AS "a""b",
  COLLATE(CAST("src"."c`d'e" AS VARCHAR), 'utf8') AS "c`d'e",
  "src"."x; DROP TABLE t; --" AS "x; DROP TABLE t; --",
  COUNT(*) AS "__sqlclose_count"
FROM "my-project"."ana;lytics"."peo""ple" AS "src"
GROUP BY
  COLLATE(CAST("src"."a""b" AS VARCHAR), 'utf8'),
  COLLATE(CAST("src"."c`d'e" AS VARCHAR), 'utf8'),
  "src"."x; DROP TABLE t; --"
