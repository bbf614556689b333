-- The quasi-identifier values of each equivalence class, numbered exactly as verify_classes.sql
-- numbers them (DENSE_RANK over the same ORDER BY), for reporting the worst classes.
SELECT
  DENSE_RANK() OVER (ORDER BY __qi__ NULLS LAST) - 1 AS __sqlclose_cls,
  __qi__
FROM (
  SELECT DISTINCT
    __qi__
  FROM __release__ AS __sqlclose_rel
) AS __sqlclose_distinct
ORDER BY
  __sqlclose_cls NULLS LAST
