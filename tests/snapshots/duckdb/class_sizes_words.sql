SELECT lv.node AS node, lv.key // 10 AS cls, "lv"."key1" AS key1, SUM(lv.n) AS size, COUNT(*) AS pairs FROM "t_prev" AS lv GROUP BY lv.node, lv.key // 10, "lv"."key1"
