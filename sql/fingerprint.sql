-- Row count and an order-independent fingerprint of the input: the sum of every row's hash.
-- Recorded in the report so a release can be tied to the exact data it came from.
SELECT
  COUNT(*) AS row_count,
  CAST(COALESCE(SUM(HASH(src)), 0) AS VARCHAR) AS fingerprint
FROM __source__ AS src
