-- Class histograms of a batch of lattice nodes, each rolled up from one already-computed finer
-- node (its parent, one quasi-identifier one level lower) — Incognito's rollup, for a whole
-- lattice level in one query. Each row's key packs the class codes and the sensitive codes
-- (sqlclose.model.packing), each hierarchy level on bits of its own: the child's key is the
-- parent's under the child's mask (m0), which clears the levels below the child's.
-- Counts are summed as DOUBLE: exact below 2**53, and DuckDB sums doubles ~3x faster than it
-- sums BIGINT into HUGEINT and casts back.
SELECT
  plan.node AS node,
  prev.key & plan.m0 AS key,
  SUM(CAST(prev.n AS DOUBLE)) AS n
FROM __prev__ AS prev
JOIN __plan__ AS plan
  ON prev.node = plan.parent
GROUP BY
  plan.node,
  prev.key & plan.m0
