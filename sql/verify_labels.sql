-- Re-check: for one quasi-identifier column of a written release, per level of its hierarchy,
-- how many of the column's distinct values (as text) are not labels of that level. A release
-- generalizes a column to one level, so some level must hold every value.
SELECT
  levels.level AS level,
  COUNT(*) - COUNT(labels.label) AS misfits,
  MIN(CASE WHEN labels.label IS NULL THEN COALESCE(written.v, 'NULL') END) AS example
FROM (
  SELECT DISTINCT
    __value__ AS v
  FROM __release__ AS __sqlclose_rel
) AS written
CROSS JOIN (
  SELECT DISTINCT
    level
  FROM __labels__ AS l
) AS levels
LEFT JOIN __labels__ AS labels
  ON labels.level = levels.level AND labels.label = written.v
GROUP BY
  levels.level
ORDER BY
  misfits,
  level
