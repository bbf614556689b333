SELECT plan.node AS node, prev.key & plan.m0 AS key, SUM(CAST(prev.n AS DOUBLE)) AS n FROM "t_prev" AS prev JOIN "t_plan" AS plan ON prev.node = plan.parent GROUP BY plan.node, prev.key & plan.m0
