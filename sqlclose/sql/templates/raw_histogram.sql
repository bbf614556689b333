-- The one scan of the source: rows counted per combination of quasi-identifier values (as text,
-- the form hierarchy leaves are matched in) and sensitive values (typed, so an ordered domain
-- sorts numbers as numbers). Everything before the release — distinct values for rule-built
-- hierarchies, NULL counts, missing-leaf checks, the base histogram — reads this, not the source.
SELECT
  __columns__,
  COUNT(*) AS n
FROM __source__ AS src
GROUP BY
  __columns__
