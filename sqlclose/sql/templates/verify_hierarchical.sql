-- Re-check: hierarchical-distance EMD of every class, Li et al.'s formula:
-- extra(N) = sum of (p - q) over the leaves under N; for every internal node N,
-- cost(N) = height(N) / H * min(pos_extra(N), neg_extra(N)), pos/neg summing the positive and
-- the negated negative extras of N's children; D = sum of the costs. The tree table holds one
-- row per (leaf, level < H): the leaf's ancestor at that level (node) and the one above (parent,
-- at parent_height). H is a bound parameter.
-- Read from each class's present values and their ancestors only (a form over classes x all
-- leaves was classes x m x H rows; docs/performance.md, fifty-third round): a child no value of
-- the class is under has extra -q(N) <= 0, so it adds nothing to pos; and pos - neg is the
-- parent's own extra, so min(pos, neg) = pos - max(extra(parent), 0); a parent none of the
-- class's values is under costs 0. In whole counts (c the class's rows under a node, n the
-- input's, s the class's size, N the input's), extra * s * N = c*N - n*s: the sum of the costs
-- times H*s*N is an integer, exact, made a float only at the end. s and N are read from
-- __sizes__ (verify_class_sizes.sql, one row per class, kept beside the counts).
WITH nodes AS (
  SELECT
    t.level AS level,
    t.node AS node,
    t.parent AS parent,
    t.parent_height AS parent_height,
    CAST(SUM(r.n) AS DECIMAL(38, 0)) AS n
  FROM __tree__ AS t
  JOIN __reference__ AS r
    ON r.v = t.leaf
  GROUP BY
    t.level,
    t.node,
    t.parent,
    t.parent_height
), parents AS (
  SELECT
    parent_height,
    parent,
    SUM(n) AS n
  FROM nodes
  GROUP BY
    parent_height,
    parent
), own AS (
  SELECT
    c.cls AS cls,
    t.level AS level,
    t.node AS node,
    t.parent AS parent,
    t.parent_height AS parent_height,
    CAST(SUM(c.n) AS DECIMAL(38, 0)) AS c
  FROM __counts__ AS c
  JOIN __reference__ AS r
    ON r.v = c.v
  JOIN __tree__ AS t
    ON t.leaf = c.v
  GROUP BY
    c.cls,
    t.level,
    t.node,
    t.parent,
    t.parent_height
), children AS (
  SELECT
    o.cls AS cls,
    o.parent_height AS parent_height,
    o.parent AS parent,
    SUM(GREATEST(o.c * sz.total - nd.n * sz.s, CAST(0 AS DECIMAL(38, 0)))) AS pos,
    SUM(o.c) AS c
  FROM own AS o
  JOIN nodes AS nd
    ON nd.level = o.level AND nd.node = o.node AND nd.parent = o.parent AND nd.parent_height = o.parent_height
  JOIN __sizes__ AS sz
    ON sz.cls = o.cls
  GROUP BY
    o.cls,
    o.parent_height,
    o.parent
), costs AS (
  SELECT
    ch.cls AS cls,
    SUM(ch.parent_height * (ch.pos - GREATEST(ch.c * sz.total - pa.n * sz.s, CAST(0 AS DECIMAL(38, 0))))) AS cost
  FROM children AS ch
  JOIN parents AS pa
    ON pa.parent_height = ch.parent_height AND pa.parent = ch.parent
  JOIN __sizes__ AS sz
    ON sz.cls = ch.cls
  GROUP BY
    ch.cls
)
SELECT
  sz.cls AS cls,
  CAST(COALESCE(co.cost, CAST(0 AS DECIMAL(38, 0))) AS DOUBLE) / (CAST(sz.s * sz.total AS DOUBLE) * __height__) AS d
FROM __sizes__ AS sz
LEFT JOIN costs AS co
  ON co.cls = sz.cls
