-- Re-check: sensitive values in a written release that the input does not hold (a release only
-- passes sensitive values through, so any such value means the file was altered).
SELECT
  COUNT(DISTINCT c.cls) AS classes,
  COUNT(DISTINCT c.v) AS distinct_values,
  COUNT(*) - COUNT(c.v) AS nulls,
  MIN(c.v) AS example
FROM __counts__ AS c
LEFT JOIN __reference__ AS ref
  ON ref.v = c.v
WHERE
  ref.v IS NULL
