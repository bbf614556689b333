-- The base histogram: the raw histogram with every value replaced by its integer code (inner
-- joins to the lookup tables, added by queries.base_histogram; validation has already proved
-- every value has a code). Node queries group this, or a finer node, by generalized codes.
SELECT
  __codes__,
  CAST(SUM(n) AS BIGINT) AS n
FROM __raw__ AS raw
GROUP BY
  __codes__
