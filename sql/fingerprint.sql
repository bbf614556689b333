-- Row count and an order-independent fingerprint of the input: the sum of every row's hash.
-- Recorded in the report so a release can be tied to the exact data it came from. The row is
-- hashed through its table alias by the engine's own row hash (DuckDB: HASH of the row struct;
-- Spark: XXHASH64 of its columns), so fingerprints are comparable only within one engine. The
-- alias is reserved so that no user column can shadow it.
SELECT
  COUNT(*) AS row_count,
  CAST(COALESCE(SUM(__row_hash__), 0) AS VARCHAR) AS fingerprint
FROM __source__ AS __sqlclose_row
