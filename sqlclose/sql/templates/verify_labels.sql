-- Re-check: per quasi-identifier column of a written release (col) and per level of its
-- hierarchy, how many of the column's distinct values are not labels of that level. A release
-- generalizes a column to one level, so some level must hold every value of the column.
SELECT
  written.col AS col,
  levels.level AS level,
  COUNT(*) - COUNT(labels.label) AS misfits,
  MIN(CASE WHEN labels.label IS NULL THEN COALESCE(written.v, 'NULL') END) AS example
FROM __written__ AS written
JOIN (
  SELECT DISTINCT
    col,
    level
  FROM __labels__ AS l
) AS levels
  ON levels.col = written.col
LEFT JOIN __labels__ AS labels
  ON labels.col = written.col AND labels.level = levels.level AND labels.label = written.v
GROUP BY
  written.col,
  levels.level
ORDER BY
  col ASC NULLS LAST,
  misfits ASC NULLS LAST,
  level ASC NULLS LAST
