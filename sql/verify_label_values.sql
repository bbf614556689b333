-- Re-check: the distinct values (as text) of one quasi-identifier column of a written release,
-- tagged with the column's position; the columns' lists are stacked for verify_labels.sql.
SELECT DISTINCT
  __col__ AS col,
  __value__ AS v
FROM __release__ AS __sqlclose_rel
