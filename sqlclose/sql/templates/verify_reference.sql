-- Re-check: the reference distribution Q of one sensitive column, recomputed from the input by a
-- plain GROUP BY (not taken from the search's counts). Each value (as text) gets its share q and
-- its position in the column's own sort order (what the ordered distance walks along), and its
-- count n (the ordered distance works in whole counts).
SELECT
  v,
  ROW_NUMBER() OVER (ORDER BY sort_key ASC NULLS LAST) AS pos,
  CAST(n AS DOUBLE) / SUM(n) OVER () AS q,
  n
FROM (
  SELECT
    __value__ AS v,
    __sort_key__ AS sort_key,
    COUNT(*) AS n
  FROM __input__ AS __sqlclose_src
  GROUP BY
    __value__,
    __sort_key__
) AS counted
