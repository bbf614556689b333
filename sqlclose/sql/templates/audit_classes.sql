-- Equivalence classes of a table read as it is (any table being checked): a plain GROUP BY over
-- the quasi-identifier columns as written, one row per (class, sensitive value as text) with its
-- count and the class's QI values (as __sqlclose_q0, __sqlclose_q1, …). Classes are numbered
-- densely in the order of their QI values, NULLs last, and the rows are kept in class order, so
-- that a run of classes is read by its range alone. Internal names start with __sqlclose_ so that
-- no user column (say, one named "n") can shadow them.
SELECT
  DENSE_RANK() OVER (ORDER BY __keys__ ASC NULLS LAST) - 1 AS __sqlclose_cls,
  __keys__,
  __sqlclose_v,
  __sqlclose_n
FROM (
  SELECT
    __named__,
    __sensitive__ AS __sqlclose_v,
    COUNT(*) AS __sqlclose_n
  FROM __release__ AS __sqlclose_rel
  GROUP BY
    __qi__,
    __sensitive__
) AS __sqlclose_counted
ORDER BY
  __sqlclose_cls ASC NULLS LAST
