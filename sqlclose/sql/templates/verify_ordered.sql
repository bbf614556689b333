-- Re-check: ordered-distance EMD of every class over the sorted domain v_1..v_m:
-- D = sum_{i<m} |sum_{j<=i} (p_j - q_j)| / (m - 1), the running sums by a window; 0 when m = 1.
SELECT
  cls,
  CASE WHEN m > 1 THEN SUM(CASE WHEN pos < m THEN ABS(running) ELSE 0.0 END) / (m - 1) ELSE 0.0 END AS d
FROM (
  SELECT
    cls,
    pos,
    SUM(p - q) OVER (PARTITION BY cls ORDER BY pos ASC NULLS LAST ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running,
    COUNT(*) OVER (PARTITION BY cls) AS m
  FROM __pq__ AS pq
) AS cumulative
GROUP BY
  cls,
  m
