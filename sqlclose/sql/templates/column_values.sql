-- One column's distinct values (NULL included) with the rows holding each; queries.column_values
-- stacks one of these per quasi-identifier and sensitive column (the others NULL in each), so that
-- NULL counts, rule-built hierarchies, sensitive domains and missing-leaf checks read a table of
-- distinct values instead of the source's rows.
SELECT
  __position__ AS col,
  __columns__,
  COUNT(*) AS n
FROM __source__ AS src
GROUP BY
  __value__
