-- The classes of a lattice level kept engine-side that the privacy judge reads: those of at least
-- k records, of the nodes still in the running (whose smaller classes alone do not exceed the
-- suppression limit), numbered 0, 1, … in (node, class) order, so their rows (class_rows.sql)
-- come back tagged with the number and need no sorting to be told apart.
SELECT
  lv.node AS node,
  lv.key DIV __span__ AS cls,
  __higher_out__,
  ROW_NUMBER() OVER (ORDER BY lv.node, lv.key DIV __span__, __higher__) - 1 AS cid
FROM __level__ AS lv
JOIN __running__ AS running
  ON lv.node = running.node
GROUP BY
  lv.node,
  lv.key DIV __span__,
  __higher__
HAVING
  SUM(lv.n) >= __k__
