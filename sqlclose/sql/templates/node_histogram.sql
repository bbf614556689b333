-- Class histograms of one lattice node: quasi-identifier codes generalized by integer division
-- (mixed-radix codes: ancestor = code DIV divisor), grouped with the sensitive codes. The input
-- is the base histogram or an already-computed finer node (Incognito's rollup).
SELECT
  __groups__,
  CAST(SUM(n) AS BIGINT) AS n
FROM __input__
GROUP BY
  __groups__
