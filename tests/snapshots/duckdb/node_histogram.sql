SELECT "q0" // 2 AS "q0", "q1", "s0", CAST(SUM(n) AS BIGINT) AS n FROM "t_base" GROUP BY "q0" // 2, "q1", "s0"
