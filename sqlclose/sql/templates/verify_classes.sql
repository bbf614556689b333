-- Equivalence classes of a table read as it is (a written release, or any table being
-- checked): a plain GROUP BY over the quasi-identifier columns as written, one row per (class,
-- sensitive value as text) with its count; classes are numbered densely for numpy. Internal
-- names start with __sqlclose_ so that no user column (say, one named "n") can shadow them.
SELECT
  DENSE_RANK() OVER (ORDER BY __qi__ NULLS LAST) - 1 AS __sqlclose_cls,
  __sqlclose_v,
  __sqlclose_n
FROM (
  SELECT
    __qi__,
    __sensitive__ AS __sqlclose_v,
    COUNT(*) AS __sqlclose_n
  FROM __release__ AS __sqlclose_rel
  GROUP BY
    __qi__,
    __sensitive__
) AS __sqlclose_counted
