-- What the privacy judge reads of a lattice level kept engine-side: the (class, sensitive value)
-- rows of the classes of at least k records, of the nodes still in the running (those whose
-- smaller classes alone do not exceed the suppression limit).
SELECT
  lv.node AS node,
  lv.key AS key,
  __higher_out__,
  lv.n AS n
FROM __level__ AS lv
JOIN (
  SELECT
    lv.node AS node,
    lv.key DIV __span__ AS cls,
    __higher_out__
  FROM __level__ AS lv
  JOIN __running__ AS running
    ON lv.node = running.node
  GROUP BY
    lv.node,
    lv.key DIV __span__,
    __higher__
  HAVING
    SUM(lv.n) >= __k__
) AS big
  ON lv.node = big.node AND lv.key DIV __span__ = big.cls AND __match__
