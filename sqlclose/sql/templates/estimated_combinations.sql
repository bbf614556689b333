-- The distinct combinations of the quasi-identifier and sensitive columns among the source's
-- rows, estimated by HyperLogLog (a few % off) in one pass: preparation reads it to decide
-- whether grouping the rows into the base histogram would merge enough of them to pay
-- (prepare.problem._groups_base).
SELECT
  APPROX_COUNT_DISTINCT(__row__) AS combinations
FROM __source__ AS src
