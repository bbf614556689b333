-- The classes of a lattice level kept engine-side that the privacy judge reads: those of at least
-- k records (class_sizes.sql), of the nodes still in the running (whose smaller classes alone do
-- not exceed the suppression limit), numbered 0, 1, … in (node, class) order, so their rows
-- (class_rows.sql) come back tagged with the number and need no sorting to be told apart, and
-- a range of numbers is a range of whole nodes. A node's classes are numbered from its first
-- number (its running predecessors' classes of at least k, summed from the level summary), so
-- each node's classes are sorted alone rather than the whole level's together.
SELECT
  c.node AS node,
  c.cls AS cls,
  __higher_out__,
  running.first + ROW_NUMBER() OVER (PARTITION BY c.node ORDER BY c.cls ASC NULLS FIRST, __higher__ ASC NULLS FIRST) - 1 AS cid
FROM __sizes__ AS c
JOIN __running__ AS running
  ON c.node = running.node
WHERE
  c.size >= __k__
