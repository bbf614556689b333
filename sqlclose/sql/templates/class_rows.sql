-- The (class, sensitive value) rows of the classes numbered by large_classes.sql, of one range of
-- class numbers (queries.class_rows adds it): the cell of the classes × sensitive values matrix
-- (the class's number from the range's first, times the matrix's width, plus the packed sensitive
-- part of the key: its remainder by the span, a power of two at least that width), and the
-- count — so the judge tallies them with one bincount.
SELECT
  (big.cid - __first__) * __width__ + lv.key % __span__ AS cell,
  lv.n AS n
FROM __level__ AS lv
JOIN __classes__ AS big
  ON lv.node = big.node AND lv.key DIV __span__ = big.cls AND __match__
