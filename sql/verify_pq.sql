-- Re-check: every class against every value of the reference domain, with the class's share p
-- (0 where the class lacks the value) and the whole table's share q. The distances read this.
SELECT
  classes.cls AS cls,
  ref.v AS v,
  ref.pos AS pos,
  COALESCE(CAST(counts.n AS DOUBLE), 0.0) / classes.size AS p,
  ref.q AS q
FROM (
  SELECT
    cls,
    SUM(n) AS size
  FROM __counts__ AS c
  GROUP BY
    cls
) AS classes
CROSS JOIN __reference__ AS ref
LEFT JOIN __counts__ AS counts
  ON counts.cls = classes.cls AND counts.v = ref.v
