-- A keyed, order-independent text digest of the input (``digests.text_digest``: the report's
-- fingerprint on Spark; DuckDB's is an HMAC of a typed digest): the sum over rows of a keyed hash of
-- the whole row, supplied by the engine (Spark: MD5 of the operator's secret followed by the row as
-- JSON, low 64 bits; DuckDB: the same over the row's text), so fingerprints are comparable only
-- within one engine. Without the secret nobody can test a guessed row against it, so it may
-- stand in a published report; the secret never leaves the operator. The row is hashed through
-- its table alias, which is reserved so that no user column can shadow it.
SELECT
  CAST(COALESCE(SUM(__row_hash__), 0) AS VARCHAR) AS fingerprint
FROM __source__ AS __sqlclose_row
