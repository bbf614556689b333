-- Re-check: equal-distance EMD (and the variational distance, the same number) of every class:
-- D = 1/2 * sum |p - q| over the domain.
SELECT
  cls,
  0.5 * SUM(ABS(p - q)) AS d
FROM __pq__ AS pq
GROUP BY
  cls
