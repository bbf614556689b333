-- The base histogram, the one grouping of the source's rows before the release: rows counted per
-- combination of codes, every value replaced by its integer code (inner joins to the lookup
-- tables, added by queries.base_histogram; validation has already proved every value has a code,
-- on the distinct values of column_values.sql). Node queries group this, or a finer node, by
-- generalized codes. For a source of nearly distinct rows queries.base_histogram drops the
-- GROUP BY and each row counts 1 (prepare.problem._groups_base): every reader sums the counts.
SELECT
  __codes__,
  COUNT(*) AS n
FROM __source__ AS src
GROUP BY
  __codes__
