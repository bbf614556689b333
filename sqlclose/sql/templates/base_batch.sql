-- Class histograms of a batch of lattice nodes computed from the base histogram: each plan row
-- is a node with one divisor per quasi-identifier (leaf code DIV divisor = code at the node's
-- level); the key packs the generalized codes with the sensitive codes (built by
-- queries.packed_key, as the same expression in SELECT and GROUP BY).
SELECT
  plan.node AS node,
  __key__ AS key,
  SUM(CAST(base.n AS DOUBLE)) AS n
FROM __base__ AS base
CROSS JOIN __plan__ AS plan
GROUP BY
  plan.node,
  __key__
