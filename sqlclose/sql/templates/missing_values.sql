-- Error path only: the values of a sensitive column that are not leaves of its hierarchy or
-- domain, most frequent first, with how many rows carry each (read from column_values.sql). The
-- quasi-identifiers' are read with their leaf counts (queries.values_on_leaves).
SELECT
  __value__ AS v,
  CAST(SUM(n) AS BIGINT) AS n
FROM __values__ AS vals
WHERE
  NOT __value__ IS NULL AND NOT __value__ IN (SELECT value FROM __lookup__)
GROUP BY
  __value__
ORDER BY
  n DESC NULLS LAST,
  v ASC NULLS LAST
