-- Re-check: verify_counts.sql over a grouped file whose rows are already one per (class,
-- sensitive value as text): grouped by exactly the quasi-identifiers and this one text column,
-- read without a NULL stand-in, so grouping them again would change nothing (0.118 -> 0.086 s
-- at 10 M rows; docs/performance.md, seventy-eighth round). Each class is numbered as there.
SELECT
  __number__ AS cls,
  __value__ AS v,
  __rows__ AS n
FROM __release__ AS __sqlclose_rel
