-- Re-check: rows of a written release that are not rows of the input generalized at the levels
-- its labels show (as multisets: EXCEPT ALL). A release only generalizes quasi-identifiers,
-- drops identifiers and removes whole classes, so every written row must be found here; a
-- relabelled class, an edited value or an invented row is not.
SELECT
  COUNT(*) AS untrue_rows
FROM (
  SELECT
    *
  FROM __release__ AS __sqlclose_rel
  EXCEPT ALL
  SELECT
    *
  FROM __generalized__ AS __sqlclose_gen
) AS __sqlclose_untrue
