SELECT
  CAST("src"."a""b" AS TEXT) COLLATE "C" AS "a""b",
  CAST("src"."c`d'e" AS TEXT) COLLATE "C" AS "c`d'e",
  "src"."x; DROP TABLE t; --" AS "x; DROP TABLE t; --",
  COUNT(*) AS "__sqlclose_count"
FROM "my-project"."ana;lytics"."peo""ple" AS "src"
GROUP BY
  CAST("src"."a""b" AS TEXT) COLLATE "C",
  CAST("src"."c`d'e" AS TEXT) COLLATE "C",
  "src"."x; DROP TABLE t; --"
