-- Distribution of one column over a table: value and count (the reference Q for t-closeness).
SELECT
  __value__ AS v,
  COUNT(*) AS n
FROM __input__ AS src
GROUP BY
  __value__
