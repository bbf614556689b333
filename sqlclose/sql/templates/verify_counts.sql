-- Re-check: rows of a written release per (equivalence class, sensitive value as text), summed
-- by __rows__ over the file grouped once (as in verify_sizes.sql). Each class gets a number of
-- its own from its quasi-identifier values as written (__number__, the engine's
-- Engine.class_numbers: DENSE_RANK over them, or a rank within hash buckets where one sort of all
-- rows would run in one task). Internal names start with __sqlclose_ so that no user column can
-- shadow them.
SELECT
  __number__ AS cls,
  __sqlclose_v AS v,
  __sqlclose_n AS n
FROM (
  SELECT
    __qi__,
    __value__ AS __sqlclose_v,
    __rows__ AS __sqlclose_n
  FROM __release__ AS __sqlclose_rel
  GROUP BY
    __qi__,
    __value__
) AS __sqlclose_grouped
