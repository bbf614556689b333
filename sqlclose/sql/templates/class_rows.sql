-- The (class, sensitive value) rows of the classes numbered by large_classes.sql: the class's
-- number, the packed sensitive part of the key, the count.
SELECT
  big.cid AS cid,
  lv.key % __span__ AS sa,
  lv.n AS n
FROM __level__ AS lv
JOIN __classes__ AS big
  ON lv.node = big.node AND lv.key DIV __span__ = big.cls AND __match__
