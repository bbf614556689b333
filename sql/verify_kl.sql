-- Re-check: Kullback-Leibler divergence of every class, sum of p ln(p / q) over the values the
-- class holds (q > 0 on the whole domain: the domain is the input's values).
SELECT
  cls,
  SUM(CASE WHEN p > 0 THEN p * LN(p / q) ELSE 0.0 END) AS d
FROM __pq__ AS pq
GROUP BY
  cls
