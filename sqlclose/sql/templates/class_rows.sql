-- The (class, sensitive value) rows of the classes numbered by large_classes.sql, of one range of
-- class numbers (queries.class_rows adds it): the cell of the classes × sensitive span matrix
-- (the class's number from the range's first, times the span, plus the packed sensitive part of
-- the key), and the count — so the judge tallies them with one bincount.
SELECT
  (big.cid - __first__) * __span__ + lv.key % __span__ AS cell,
  lv.n AS n
FROM __level__ AS lv
JOIN __classes__ AS big
  ON lv.node = big.node AND lv.key DIV __span__ = big.cls AND __match__
