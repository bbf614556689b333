SELECT "vals"."r0" AS v, CAST(SUM(n) AS BIGINT) AS n FROM "t_values" AS vals WHERE NOT "vals"."r0" IS NULL AND NOT "vals"."r0" IN (SELECT value FROM "t_lk_q0") GROUP BY "vals"."r0" ORDER BY n DESC, v
