-- Re-check, per sensitive column: each class's size s (its rows, summed over the column's counts)
-- beside the input's size N (its rows, summed over the reference Q), the two denominators of a
-- distance's p and q, as exact integers. Kept as a table beside the counts (verify_sql._kept) for
-- the exact distances (verify_equal, verify_hierarchical, verify_ordered), which read them at
-- several places: each had its own CTEs, which Spark computed again at every reference.
SELECT
  c.cls AS cls,
  CAST(SUM(c.n) AS DECIMAL(38, 0)) AS s,
  dm.total AS total
FROM __counts__ AS c
CROSS JOIN (
  SELECT
    CAST(SUM(n) AS DECIMAL(38, 0)) AS total
  FROM __reference__ AS r
) AS dm
GROUP BY
  c.cls,
  dm.total
