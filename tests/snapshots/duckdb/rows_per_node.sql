SELECT "node", COUNT(*) AS rows FROM "t_prev" WHERE "node" >= $1 GROUP BY "node"
