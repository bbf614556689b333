SELECT lv.node AS node, lv.key DIV 4 AS cls, SUM(lv.n) AS size, COUNT(*) AS pairs FROM `t_prev` AS lv GROUP BY lv.node, lv.key DIV 4
