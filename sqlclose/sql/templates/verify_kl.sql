-- Re-check: Kullback-Leibler divergence of every class, sum of p ln(p / q) over the values the
-- class holds (q > 0 on the whole domain: the domain is the input's values) — read from each
-- class's present values only, as the sum needs no other (docs/performance.md, fifty-third
-- round). Each ratio p / q = c*N / (n*s) is made from whole counts (c the class's count of a
-- value, n the input's, s the class's size, N the input's) and rounded once. A class holding only
-- values the input lacks (verify_foreign) has no row, its distance 0 as over the domain.
-- s and N are its own CTEs, each read once, not verify_class_sizes.sql's kept table: the sum is
-- of floats, rounded in the order rows reach it, which a join to that table changed (the last
-- bit of 525 of Adult's 11,089 leaf classes; docs/performance.md, fifty-fourth round).
WITH domain AS (
  SELECT
    CAST(SUM(n) AS DECIMAL(38, 0)) AS total
  FROM __reference__ AS r
), sizes AS (
  SELECT
    cls,
    CAST(SUM(n) AS DECIMAL(38, 0)) AS s
  FROM __counts__ AS c
  GROUP BY
    cls
)
SELECT
  c.cls AS cls,
  SUM(CAST(c.n AS DOUBLE) / CAST(sz.s AS DOUBLE) * LN(CAST(CAST(c.n AS DECIMAL(38, 0)) * dm.total AS DOUBLE) / CAST(CAST(r.n AS DECIMAL(38, 0)) * sz.s AS DOUBLE))) AS d
FROM __counts__ AS c
JOIN __reference__ AS r
  ON r.v = c.v
JOIN sizes AS sz
  ON sz.cls = c.cls
CROSS JOIN domain AS dm
GROUP BY
  c.cls
