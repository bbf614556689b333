-- Per node of a lattice level kept engine-side (rows at (class, sensitive value) grain, classes
-- being the key DIV the sensitive span): its rows, which size the next level's rollups, and the
-- records in its classes smaller than k, which fail k-anonymity whatever else holds.
SELECT
  c.node AS node,
  CAST(SUM(c.pairs) AS BIGINT) AS pairs,
  SUM(CASE WHEN c.size < __k__ THEN c.size ELSE 0 END) AS dropped
FROM (
  SELECT
    lv.node AS node,
    COUNT(*) AS pairs,
    SUM(lv.n) AS size
  FROM __level__ AS lv
  GROUP BY
    lv.node,
    lv.key DIV __span__,
    __higher__
) AS c
GROUP BY
  c.node
