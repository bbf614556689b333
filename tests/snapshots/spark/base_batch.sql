SELECT plan.node AS node, base.key & plan.m0 AS key, SUM(base.n) AS n FROM `t_keyed` AS base CROSS JOIN `t_base_plan` AS plan GROUP BY plan.node, base.key & plan.m0
