-- Re-check: hierarchical-distance EMD of every class, Li et al.'s formula as written:
-- extra(N) = sum of (p - q) over the leaves under N; for every internal node N,
-- cost(N) = height(N) / H * min(pos_extra(N), neg_extra(N)), pos/neg summing the positive and
-- the negated negative extras of N's children; D = sum of the costs. The tree table holds one
-- row per (leaf, level < H): the leaf's ancestor at that level (node) and the one above (parent,
-- at parent_height). H is a bound parameter.
SELECT
  cls,
  SUM(cost) AS d
FROM (
  SELECT
    cls,
    parent_height * LEAST(SUM(GREATEST(extra, 0.0)), SUM(GREATEST(-extra, 0.0))) / __height__ AS cost
  FROM (
    SELECT
      pq.cls AS cls,
      tree.level AS level,
      tree.node AS node,
      tree.parent AS parent,
      tree.parent_height AS parent_height,
      SUM(pq.p - pq.q) AS extra
    FROM __pq__ AS pq
    JOIN __tree__ AS tree
      ON tree.leaf = pq.v
    GROUP BY
      pq.cls,
      tree.level,
      tree.node,
      tree.parent,
      tree.parent_height
  ) AS children
  GROUP BY
    cls,
    parent_height,
    parent
) AS costs
GROUP BY
  cls
