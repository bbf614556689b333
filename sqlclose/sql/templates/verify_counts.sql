-- Re-check: rows of a written release per (equivalence class, sensitive value as text). Classes
-- are numbered by DENSE_RANK over the quasi-identifier values as written. Internal names start
-- with __sqlclose_ so that no user column can shadow them.
SELECT
  DENSE_RANK() OVER (ORDER BY __qi__ NULLS LAST) AS cls,
  __sqlclose_v AS v,
  __sqlclose_n AS n
FROM (
  SELECT
    __qi__,
    __value__ AS __sqlclose_v,
    COUNT(*) AS __sqlclose_n
  FROM __release__ AS __sqlclose_rel
  GROUP BY
    __qi__,
    __value__
) AS __sqlclose_grouped
