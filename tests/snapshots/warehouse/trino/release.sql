WITH "__sqlclose_lookup_q0" AS (
  SELECT
    *
  FROM (VALUES
    ('x', 0, 'x''y'),
    ('y', 0, 'x''y'),
    ('z', 1, 'z\w'),
    ('w', 1, 'z\w'),
    ('it''s', 1, 'z\w')) AS "t"("value", "code", "label_1")
), "__sqlclose_lookup_q1" AS (
  SELECT
    *
  FROM (VALUES
    ('a\b', 0),
    ('o''k', 1)) AS "t"("value", "code")
), "__sqlclose_suppressed" AS (
  SELECT
    *
  FROM (VALUES
    (0, 0)) AS "t"("q0", "q1")
)
SELECT
  "a""b",
  "x; DROP TABLE t; --",
  "c`d'e"
FROM (
  SELECT
    "lk_q0"."label_1" AS "a""b",
    CASE
      WHEN "src"."x; DROP TABLE t; --" IS NULL
      THEN NULL
      ELSE "src"."x; DROP TABLE t; --"
    END AS "x; DROP TABLE t; --",
    CASE WHEN "src"."c`d'e" IS NULL THEN NULL ELSE "src"."c`d'e" END AS "c`d'e"
  FROM "my-project"."ana;lytics"."peo""ple" AS "src"
  JOIN "__sqlclose_lookup_q0" AS "lk_q0"
    ON "lk_q0"."value" = COALESCE(CAST("src"."a""b" AS VARCHAR), 'it''s')
  JOIN "__sqlclose_lookup_q1" AS "lk_q1"
    ON "lk_q1"."value" = CAST("src"."c`d'e" AS VARCHAR)
  LEFT JOIN "__sqlclose_suppressed" AS "supp"
    ON "supp"."q0" = "lk_q0"."code" AND "supp"."q1" = "lk_q1"."code"
  WHERE
    "supp"."q0" IS NULL
) AS "released"
ORDER BY
  "a""b" ASC,
  "c`d'e" ASC,
  CAST("c`d'e" AS VARCHAR) ASC,
  "x; DROP TABLE t; --" ASC,
  CAST("x; DROP TABLE t; --" AS VARCHAR) ASC
