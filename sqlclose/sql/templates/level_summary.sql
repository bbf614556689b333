-- Per node of a lattice level kept engine-side, from its classes (class_sizes.sql): its rows,
-- which size the next level's rollups; the records in its classes smaller than k, which fail
-- k-anonymity whatever else holds; and its classes of at least k and their rows, which size
-- what the privacy judge reads of it (the search brings a level to Python in parts).
SELECT
  c.node AS node,
  CAST(SUM(c.pairs) AS BIGINT) AS pairs,
  SUM(CASE WHEN c.size < __k__ THEN c.size ELSE 0 END) AS dropped,
  CAST(SUM(CASE WHEN c.size >= __k__ THEN 1 ELSE 0 END) AS BIGINT) AS big_classes,
  CAST(SUM(CASE WHEN c.size >= __k__ THEN c.pairs ELSE 0 END) AS BIGINT) AS big_pairs
FROM __sizes__ AS c
GROUP BY
  c.node
