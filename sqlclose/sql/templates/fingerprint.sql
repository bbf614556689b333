-- A keyed, order-independent fingerprint of the input: the sum over rows of a keyed hash of the
-- whole row (MD5 of the operator's secret followed by the row's text, low 64 bits). Without the
-- secret nobody can test a guessed row against it, so it may stand in a published report; the
-- secret never leaves the operator. The row is hashed through its table alias, which is
-- reserved so that no user column can shadow it.
SELECT
  CAST(COALESCE(SUM(MD5_NUMBER_LOWER(__secret__ || CAST(__sqlclose_row AS VARCHAR))), 0) AS VARCHAR) AS fingerprint
FROM __source__ AS __sqlclose_row
