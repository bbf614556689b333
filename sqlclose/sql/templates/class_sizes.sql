-- The classes of a lattice level kept engine-side (rows at (class, sensitive value) grain, classes
-- being the key DIV the sensitive span): per class its records and its rows. Kept engine-side
-- itself: the per-node summary (level_summary.sql) and the numbering of the classes the privacy
-- judge reads (large_classes.sql) both read it, so the level is grouped by class only once.
SELECT
  lv.node AS node,
  lv.key DIV __span__ AS cls,
  __higher_out__,
  SUM(lv.n) AS size,
  COUNT(*) AS pairs
FROM __level__ AS lv
GROUP BY
  lv.node,
  lv.key DIV __span__,
  __higher__
