-- Class histograms of a batch of lattice nodes computed from the keyed base histogram
-- (queries.keyed_base: a packed key and a DOUBLE count per row): each plan row is a node with
-- its mask (m0), which generalizes every base key to the node's levels in one AND.
SELECT
  plan.node AS node,
  base.key & plan.m0 AS key,
  SUM(base.n) AS n
FROM __base__ AS base
CROSS JOIN __plan__ AS plan
GROUP BY
  plan.node,
  base.key & plan.m0
