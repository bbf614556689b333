SELECT "raw"."r0" AS v, CAST(SUM(n) AS BIGINT) AS n FROM "t_raw" AS raw WHERE NOT "raw"."r0" IS NULL AND NOT "raw"."r0" IN (SELECT value FROM "t_lk_q0") GROUP BY "raw"."r0" ORDER BY n DESC, v
