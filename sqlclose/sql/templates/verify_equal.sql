-- Re-check: equal-distance EMD (and the variational distance, the same number) of every class,
-- D = 1/2 * sum |p - q| over the domain — from each class's present values only (a form over
-- classes x all m values was classes x m rows; docs/performance.md, fifty-third round). A value
-- the class lacks adds q, so those add 1 - sum q over its values: D = 1/2 (sum over its values
-- |p - q| + 1 - sum over its values q). In whole counts (c the class's count of a value, n the
-- input's, s the class's size, N the input's): D = (sum |c*N - n*s| + s*(N - sum n)) / (2*s*N),
-- integers, exact, made a float only at the end. A value of the class the input lacks (a foreign
-- value, verify_foreign) counts in s and nowhere else, as it did over the domain. s and N are
-- read from __sizes__ (verify_class_sizes.sql, one row per class, kept beside the counts), which
-- also lists every class, those with no value the input holds too.
WITH own AS (
  SELECT
    c.cls AS cls,
    SUM(ABS(CAST(c.n AS DECIMAL(38, 0)) * sz.total - CAST(r.n AS DECIMAL(38, 0)) * sz.s)) AS gaps,
    CAST(SUM(r.n) AS DECIMAL(38, 0)) AS covered
  FROM __counts__ AS c
  JOIN __reference__ AS r
    ON r.v = c.v
  JOIN __sizes__ AS sz
    ON sz.cls = c.cls
  GROUP BY
    c.cls
)
SELECT
  sz.cls AS cls,
  CAST(COALESCE(o.gaps, CAST(0 AS DECIMAL(38, 0))) + sz.s * (sz.total - COALESCE(o.covered, CAST(0 AS DECIMAL(38, 0)))) AS DOUBLE) / CAST(2 * sz.s * sz.total AS DOUBLE) AS d
FROM __sizes__ AS sz
LEFT JOIN own AS o
  ON o.cls = sz.cls
