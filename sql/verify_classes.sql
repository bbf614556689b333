-- Verification, read back from the written file: equivalence classes are recomputed with a
-- plain GROUP BY over the released quasi-identifier columns, one row per (class, sensitive
-- value) with its count; classes are numbered densely for numpy.
SELECT
  DENSE_RANK() OVER (ORDER BY __qi__) - 1 AS cls,
  v,
  n
FROM (
  SELECT
    __qi__,
    __sensitive__ AS v,
    COUNT(*) AS n
  FROM __release__ AS rel
  GROUP BY
    __qi__,
    __sensitive__
) AS counted
