-- Re-check: rows of a written release that are not rows of the input generalized at the levels
-- its labels show, counted as multisets (each distinct row: how many more times the file has it
-- than the generalized input). A release only generalizes quasi-identifiers, drops identifiers
-- and removes whole classes, so the count must be 0; a relabelled class, an edited value or an
-- invented row is not. Rows are compared by a key of two 64-bit hashes of the whole row
-- (Engine.keys_of_hashes): grouping and joining on 16 text columns was 3-4x slower at 10 M rows, and
-- EXCEPT ALL slower still. It runs only when verify_row_sums finds that the sums of the keys differ
-- (over all generalized rows, or, classes suppressed, those of the classes the file holds). As
-- there, both sides are their values' hashes (the generalized side's labels' carried from its lookups), __key_0__ and
-- __key_1__ the same expressions of them; a written row counts __written_rows__ times: once, or its
-- count over the file grouped once.
SELECT
  CAST(COALESCE(SUM(written.__sqlclose_n - COALESCE(generalized.__sqlclose_n, 0)), 0) AS BIGINT) AS untrue_rows
FROM (
  SELECT
    __key_0__ AS __sqlclose_k0,
    __key_1__ AS __sqlclose_k1,
    SUM(__written_rows__) AS __sqlclose_n
  FROM __release__ AS __sqlclose_rel
  GROUP BY
    __key_0__,
    __key_1__
) AS written
LEFT JOIN (
  SELECT
    __key_0__ AS __sqlclose_k0,
    __key_1__ AS __sqlclose_k1,
    COUNT(*) AS __sqlclose_n
  FROM __generalized__ AS __sqlclose_gen
  GROUP BY
    __key_0__,
    __key_1__
) AS generalized
  ON written.__sqlclose_k0 = generalized.__sqlclose_k0 AND written.__sqlclose_k1 = generalized.__sqlclose_k1
WHERE
  written.__sqlclose_n > COALESCE(generalized.__sqlclose_n, 0)
