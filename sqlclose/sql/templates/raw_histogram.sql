-- Rows counted per combination of quasi-identifier values (as text, the form hierarchy leaves are
-- matched in) and sensitive values (typed, so an ordered domain sorts numbers as numbers): what
-- the warehouse path exports (sql/warehouse.py), and what `sqlclose explain` shows as the scan a
-- warehouse runs. A local run groups its rows once, into the base histogram, instead.
SELECT
  __columns__,
  COUNT(*) AS n
FROM __source__ AS src
GROUP BY
  __columns__
