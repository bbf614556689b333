SELECT "node", COUNT(*) AS rows FROM "t_prev" GROUP BY "node"
