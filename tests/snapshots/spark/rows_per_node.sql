SELECT `node`, COUNT(*) AS rows FROM `t_prev` WHERE `node` >= :p1 GROUP BY `node`
