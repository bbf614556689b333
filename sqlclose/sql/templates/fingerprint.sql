-- A keyed, order-independent fingerprint of the input: the sum over rows of a keyed hash of the
-- whole row, supplied by the engine (DuckDB: MD5 of the operator's secret followed by the row's
-- text, low 64 bits; Spark: the same over the row as JSON), so fingerprints are comparable only
-- within one engine. Without the secret nobody can test a guessed row against it, so it may
-- stand in a published report; the secret never leaves the operator. The row is hashed through
-- its table alias, which is reserved so that no user column can shadow it.
SELECT
  CAST(COALESCE(SUM(__row_hash__), 0) AS VARCHAR) AS fingerprint
FROM __source__ AS __sqlclose_row
