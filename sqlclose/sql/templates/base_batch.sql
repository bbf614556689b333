-- Class histograms of a batch of lattice nodes computed from the keyed base histogram
-- (queries.keyed_base: a packed key and a DOUBLE count per row, or the key alone where each row
-- counts one): each plan row is a node with its mask (m0), which generalizes every base key to
-- the node's levels in one AND. __records__: the records of a group (queries._records).
SELECT
  plan.node AS node,
  base.key & plan.m0 AS key,
  __records__ AS n
FROM __base__ AS base
CROSS JOIN __plan__ AS plan
GROUP BY
  plan.node,
  base.key & plan.m0
