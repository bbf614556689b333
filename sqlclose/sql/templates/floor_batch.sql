-- Class histograms of a batch of lattice nodes, each generalized from its QI subset's floor: a
-- node kept engine-side at levels no higher than any node of the subset still to be checked
-- (search.node_histograms). The plan gives per child its floor (parent) and, per QI, the divisor
-- from the floor's level to the child's (r0, r1, …); the key is rebuilt digit by digit
-- (queries.floor_batch), the sensitive part carried.
SELECT
  plan.node AS node,
  __key__ AS key,
  SUM(src.n) AS n
FROM __source__ AS src
JOIN __plan__ AS plan
  ON src.node = plan.parent
GROUP BY
  plan.node,
  __key__
