-- Independent re-check of a written release (sqlclose.verify_sql): the equivalence classes are a
-- plain GROUP BY over the quasi-identifier columns as written; how many, how many rows, the
-- smallest, and how many are below k (k is a bound parameter). __release__ is the file grouped
-- once by its measured columns (verify_sql._grouped_release); __rows__ sums the rows its groups
-- stand for.
SELECT
  COUNT(*) AS classes,
  CAST(COALESCE(SUM(size), 0) AS BIGINT) AS row_count,
  MIN(size) AS min_size,
  CAST(COALESCE(SUM(CASE WHEN size < __k__ THEN 1 ELSE 0 END), 0) AS BIGINT) AS below_k
FROM (
  SELECT
    __rows__ AS size
  FROM __release__ AS __sqlclose_rel
  GROUP BY
    __qi__
) AS sizes
