WITH "__sqlclose_lookup_q0" AS (
  SELECT
    *
  FROM (VALUES
    ('x', 0, 'x\'y'),
    ('y', 0, 'x\'y'),
    ('z', 1, 'z\\w'),
    ('w', 1, 'z\\w'),
    ('it\'s', 1, 'z\\w')) AS "t"("value", "code", "label_1")
), "__sqlclose_lookup_q1" AS (
  SELECT
    *
  FROM (VALUES
    ('a\\b', 0),
    ('o\'k', 1)) AS "t"("value", "code")
), "__sqlclose_suppressed" AS (
  SELECT
    *
  FROM (VALUES
    (0, 0)) AS "t"("q0", "q1")
), "__sqlclose_released" AS (
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
      ON "lk_q0"."value" = COALESCE(COLLATE(CAST("src"."a""b" AS VARCHAR), 'utf8'), 'it\'s')
    JOIN "__sqlclose_lookup_q1" AS "lk_q1"
      ON "lk_q1"."value" = COLLATE(CAST("src"."c`d'e" AS VARCHAR), 'utf8')
    LEFT JOIN "__sqlclose_suppressed" AS "supp"
      ON "supp"."q0" = "lk_q0"."code" AND "supp"."q1" = "lk_q1"."code"
    WHERE
      "supp"."q0" IS NULL
  ) AS "released"
), "__sqlclose_classed" AS (
  SELECT
    "a""b",
    "c`d'e",
    COLLATE(CAST("a""b" AS VARCHAR), 'utf8') AS "__sqlclose_b0",
    COLLATE(CAST("c`d'e" AS VARCHAR), 'utf8') AS "__sqlclose_b1",
    "x; DROP TABLE t; --" AS "__sqlclose_s0"
  FROM "__sqlclose_released"
), "__sqlclose_counts_s0" AS (
  SELECT
    DENSE_RANK() OVER (
      ORDER BY "a""b" ASC NULLS LAST, "c`d'e" ASC NULLS LAST, "__sqlclose_b0" ASC NULLS LAST, "__sqlclose_b1" ASC NULLS LAST
    ) AS "cls",
    "__sqlclose_v" AS "v",
    "__sqlclose_n" AS "n"
  FROM (
    SELECT
      "a""b",
      "c`d'e",
      "__sqlclose_b0",
      "__sqlclose_b1",
      "__sqlclose_s0" AS "__sqlclose_v",
      COUNT(*) AS "__sqlclose_n"
    FROM "__sqlclose_classed" AS "__sqlclose_rel"
    GROUP BY
      "a""b",
      "c`d'e",
      "__sqlclose_b0",
      "__sqlclose_b1",
      "__sqlclose_s0"
  ) AS "__sqlclose_grouped"
), "__sqlclose_reference_s0" AS (
  SELECT
    "v",
    ROW_NUMBER() OVER (ORDER BY "sort_key" ASC NULLS LAST) AS "pos",
    CAST("n" AS DOUBLE) / SUM("n") OVER () AS "q",
    "n"
  FROM (
    SELECT
      "x; DROP TABLE t; --" AS "v",
      "x; DROP TABLE t; --" AS "sort_key",
      COUNT(*) AS "n"
    FROM "my-project"."ana;lytics"."peo""ple" AS "__sqlclose_src"
    GROUP BY
      "x; DROP TABLE t; --",
      "x; DROP TABLE t; --"
  ) AS "counted"
), "__sqlclose_sizes_s0" AS (
  SELECT
    "c"."cls" AS "cls",
    CAST(SUM("c"."n") AS DECIMAL(38, 0)) AS "s",
    "dm"."total" AS "total"
  FROM "__sqlclose_counts_s0" AS "c"
  CROSS JOIN (
    SELECT
      CAST(SUM("n") AS DECIMAL(38, 0)) AS "total"
    FROM "__sqlclose_reference_s0" AS "r"
  ) AS "dm"
  GROUP BY
    "c"."cls",
    "dm"."total"
)
SELECT
  "measured"."released_rows",
  "measured"."classes",
  "measured"."min_class_size",
  "measured"."min_distinct_s0",
  "measured"."source_rows",
  "models_s0"."reached_0" AS "max_distance_s0",
  "measured"."released_rows" = 11
  AND "measured"."classes" = 2
  AND "measured"."min_class_size" = 5
  AND "measured"."min_distinct_s0" = 3
  AND "measured"."source_rows" = 12
  AND "measured"."min_class_size" >= 3
  AND COALESCE("models_s0"."failing_0", 0) = 0 AS "ok"
FROM (
  SELECT
    SUM("n") AS "released_rows",
    COUNT(*) AS "classes",
    MIN("n") AS "min_class_size",
    MIN("d0") AS "min_distinct_s0",
    (
      SELECT
        COUNT(*)
      FROM "my-project"."ana;lytics"."peo""ple"
    ) AS "source_rows"
  FROM (
    SELECT
      COUNT(*) AS "n",
      COUNT(DISTINCT "x; DROP TABLE t; --") AS "d0"
    FROM "__sqlclose_released"
    GROUP BY
      "a""b",
      COLLATE(CAST("a""b" AS VARCHAR), 'utf8'),
      "c`d'e",
      COLLATE(CAST("c`d'e" AS VARCHAR), 'utf8')
  ) AS "classes"
) AS "measured"
CROSS JOIN (
  SELECT
    MAX(COALESCE("d"."d", 0)) AS "reached_0",
    SUM(IFF(COALESCE("d"."d", 0) > 0.5 + 1e-12, 1, 0)) AS "failing_0"
  FROM (
    SELECT
      "cls",
      COUNT(*) AS "distinct_values",
      -SUM("share" * LN("share")) AS "entropy",
      MAX("n") AS "r1",
      SUM(CASE WHEN "position" >= 1 THEN "n" ELSE 0 END) AS "tail"
    FROM (
      SELECT
        "cls",
        "n",
        CAST("n" AS DOUBLE) / SUM("n") OVER (PARTITION BY "cls") AS "share",
        ROW_NUMBER() OVER (PARTITION BY "cls" ORDER BY "n" DESC NULLS LAST) AS "position"
      FROM "__sqlclose_counts_s0" AS "c"
    ) AS "ranked"
    GROUP BY
      "cls"
  ) AS "m"
  LEFT JOIN (
    WITH "domain" AS (
      SELECT
        COUNT(*) AS "m",
        CAST(SUM("n") AS DECIMAL(38, 0)) AS "total"
      FROM "__sqlclose_reference_s0" AS "r"
    ), "cumulative" AS (
      SELECT
        "pos",
        "cq",
        SUM("cq") OVER (ORDER BY "pos" ASC NULLS LAST ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS "sq"
      FROM (
        SELECT
          "pos",
          CAST(SUM("n") OVER (ORDER BY "pos" ASC NULLS LAST ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS DECIMAL(38, 0)) AS "cq"
        FROM "__sqlclose_reference_s0" AS "r"
      ) AS "running"
    ), "prefix" AS (
      SELECT
        "pos",
        "cq",
        "sq"
      FROM "cumulative"
      UNION ALL
      SELECT
        0 AS "pos",
        CAST(0 AS DECIMAL(38, 0)) AS "cq",
        CAST(0 AS DECIMAL(38, 0)) AS "sq"
    ), "starts" AS (
      SELECT
        "c"."cls" AS "cls",
        "r"."pos" AS "lo",
        CAST(SUM("c"."n") OVER (
          PARTITION BY "c"."cls"
          ORDER BY "r"."pos" ASC NULLS LAST
          ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
        ) AS DECIMAL(38, 0)) AS "c"
      FROM "__sqlclose_counts_s0" AS "c"
      JOIN "__sqlclose_reference_s0" AS "r"
        ON "r"."v" = "c"."v"
      UNION ALL
      SELECT
        "cls",
        1 AS "lo",
        CAST(0 AS DECIMAL(38, 0)) AS "c"
      FROM "__sqlclose_sizes_s0" AS "sz"
    ), "segments" AS (
      SELECT
        "st"."cls" AS "cls",
        "st"."lo" AS "lo",
        COALESCE(
          LEAD("st"."lo") OVER (
            PARTITION BY "st"."cls"
            ORDER BY "st"."lo" ASC NULLS LAST, "st"."c" ASC NULLS LAST
          ) - 1,
          "d"."m" - 1
        ) AS "hi",
        "st"."c" AS "c",
        "sz"."s" AS "s",
        "d"."total" AS "total",
        "d"."m" AS "m"
      FROM "starts" AS "st"
      JOIN "__sqlclose_sizes_s0" AS "sz"
        ON "sz"."cls" = "st"."cls"
      CROSS JOIN "domain" AS "d"
    ), "sorted" AS (
      SELECT
        0 AS "kind",
        CAST("cu"."cq" * "d"."total" AS DECIMAL(38, 0)) AS "key",
        NULL AS "cls",
        NULL AS "lo",
        NULL AS "hi",
        NULL AS "c",
        NULL AS "s",
        NULL AS "total",
        NULL AS "m"
      FROM "cumulative" AS "cu"
      CROSS JOIN "domain" AS "d"
      UNION ALL
      SELECT
        1 AS "kind",
        CAST((
          CAST("sg"."c" * "sg"."total" * "sg"."total" AS DECIMAL(38, 0)) - CAST("sg"."c" * "sg"."total" * "sg"."total" AS DECIMAL(38, 0)) % CAST("sg"."s" AS DECIMAL(38, 0))
        ) / CAST("sg"."s" AS DECIMAL(38, 0)) AS DECIMAL(38, 0)) AS "key",
        "sg"."cls",
        "sg"."lo",
        "sg"."hi",
        "sg"."c",
        "sg"."s",
        "sg"."total",
        "sg"."m"
      FROM "segments" AS "sg"
    ), "crossed" AS (
      SELECT
        "cls",
        "lo",
        "hi",
        "c",
        "s",
        "total",
        "m",
        LEAST_IGNORE_NULLS(GREATEST_IGNORE_NULLS("below", "lo" - 1), "hi") AS "k"
      FROM (
        SELECT
          "kind",
          "cls",
          "lo",
          "hi",
          "c",
          "s",
          "total",
          "m",
          SUM(1 - "kind") OVER (
            ORDER BY "key" ASC NULLS LAST, "kind" ASC NULLS LAST
            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
          ) AS "below"
        FROM "sorted"
      ) AS "counted"
      WHERE
        "kind" = 1
    ), "terms" AS (
      SELECT
        "x"."cls" AS "cls",
        "x"."s" AS "s",
        "x"."total" AS "total",
        "x"."m" AS "m",
        (
          "x"."k" - "x"."lo" + 1
        ) * "x"."c" * "x"."total" - "x"."s" * (
          "pk"."sq" - "pl"."sq"
        ) + "x"."s" * (
          "ph"."sq" - "pk"."sq"
        ) - (
          "x"."hi" - "x"."k"
        ) * "x"."c" * "x"."total" AS "t"
      FROM "crossed" AS "x"
      JOIN "prefix" AS "pl"
        ON "pl"."pos" = "x"."lo" - 1
      JOIN "prefix" AS "pk"
        ON "pk"."pos" = "x"."k"
      JOIN "prefix" AS "ph"
        ON "ph"."pos" = "x"."hi"
    )
    SELECT
      "cls",
      CASE
        WHEN "m" > 1
        THEN CAST(SUM("t") AS DOUBLE) / (
          CAST("s" AS DOUBLE) * CAST("total" AS DOUBLE) * (
            "m" - 1
          )
        )
        ELSE 0.0
      END AS "d"
    FROM "terms"
    GROUP BY
      "cls",
      "s",
      "total",
      "m"
  ) AS "d"
    ON "d"."cls" = "m"."cls"
) AS "models_s0"
