SELECT lv.node AS node, lv.key // 4 AS cls, "lv"."key1" AS key1, SUM(lv.n) AS size, COUNT(*) AS pairs FROM "t_prev" AS lv GROUP BY lv.node, lv.key // 4, "lv"."key1"
