-- Re-check, per equivalence class: its distinct sensitive values, its entropy
-- H = -sum(p ln p) (entropy l-diversity compares exp(H) with l), and for recursive (c,l)-diversity
-- r1 (the largest count) and the tail r_l + ... + r_m of the counts sorted descending
-- (ROW_NUMBER over the counts; ties have equal counts, so the tail does not depend on their order).
-- A share's denominator, the class's size, is a window over the partition the ROW_NUMBER sorts
-- anyway, not verify_class_sizes.sql's table: that one is kept only for an exact distance.
SELECT
  cls,
  COUNT(*) AS distinct_values,
  -SUM(share * LN(share)) AS entropy,
  MAX(n) AS r1,
  SUM(CASE WHEN position >= __l__ THEN n ELSE 0 END) AS tail
FROM (
  SELECT
    cls,
    n,
    CAST(n AS DOUBLE) / SUM(n) OVER (PARTITION BY cls) AS share,
    ROW_NUMBER() OVER (PARTITION BY cls ORDER BY n DESC NULLS LAST) AS position
  FROM __counts__ AS c
) AS ranked
GROUP BY
  cls
