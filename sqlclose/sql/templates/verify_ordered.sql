-- Re-check: ordered-distance EMD of every class over the sorted domain v_1..v_m,
-- D = sum_{i<m} |F_p(i) - F_q(i)| / (m - 1), 0 when m = 1 — from each class's present values only
-- (a form over classes x all m values was 57 M terms for 95 k values; docs/performance.md).
-- In whole counts: F_p(i) = C_p(i) / s, F_q(i) = C_q(i) / N, so the sum is
-- sum_i |C_p(i) * N - C_q(i) * s| / (s * N): integers, exact, made a float only at the end.
-- Between two consecutive present values of a class, C_p is a constant c (a segment lo..hi); C_q
-- rises with i, so the segment's terms are c*N - C_q(i)*s up to the crossing k (the last i with
-- C_q(i)/N <= c/s) and C_q(i)*s - c*N after it: both from prefix sums S(i) of C_q. The crossing is
-- found by sorting the reference and the thresholds together, the reference on C_q(i)*N
-- (__reference_key__), a threshold on floor(c*N*N / s) (__segment_key__, in the engine's wide
-- integer type): an integer is at most c*N*N/s exactly when it is at most its floor, so the
-- order is exact at any size. Each class's s (and its row, for the segment from 1) is read from
-- __sizes__ (verify_class_sizes.sql, kept beside the counts); N and m from the reference here.
WITH domain AS (
  SELECT
    COUNT(*) AS m,
    CAST(SUM(n) AS DECIMAL(38, 0)) AS total
  FROM __reference__ AS r
), cumulative AS (
  SELECT
    pos,
    cq,
    SUM(cq) OVER (ORDER BY pos ASC NULLS LAST ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS sq
  FROM (
    SELECT
      pos,
      CAST(SUM(n) OVER (ORDER BY pos ASC NULLS LAST ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS DECIMAL(38, 0)) AS cq
    FROM __reference__ AS r
  ) AS running
), prefix AS (
  SELECT
    pos,
    cq,
    sq
  FROM cumulative
  UNION ALL
  SELECT
    0 AS pos,
    CAST(0 AS DECIMAL(38, 0)) AS cq,
    CAST(0 AS DECIMAL(38, 0)) AS sq
), starts AS (
  SELECT
    c.cls AS cls,
    r.pos AS lo,
    CAST(SUM(c.n) OVER (PARTITION BY c.cls ORDER BY r.pos ASC NULLS LAST ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS DECIMAL(38, 0)) AS c
  FROM __counts__ AS c
  JOIN __reference__ AS r
    ON r.v = c.v
  UNION ALL
  SELECT
    cls,
    1 AS lo,
    CAST(0 AS DECIMAL(38, 0)) AS c
  FROM __sizes__ AS sz
), segments AS (
  SELECT
    st.cls AS cls,
    st.lo AS lo,
    COALESCE(LEAD(st.lo) OVER (PARTITION BY st.cls ORDER BY st.lo ASC NULLS LAST, st.c ASC NULLS LAST) - 1, d.m - 1) AS hi,
    st.c AS c,
    sz.s AS s,
    d.total AS total,
    d.m AS m
  FROM starts AS st
  JOIN __sizes__ AS sz
    ON sz.cls = st.cls
  CROSS JOIN domain AS d
), sorted AS (
  SELECT
    0 AS kind,
    __reference_key__ AS key,
    NULL AS cls,
    NULL AS lo,
    NULL AS hi,
    NULL AS c,
    NULL AS s,
    NULL AS total,
    NULL AS m
  FROM cumulative AS cu
  CROSS JOIN domain AS d
  UNION ALL
  SELECT
    1 AS kind,
    __segment_key__ AS key,
    sg.cls,
    sg.lo,
    sg.hi,
    sg.c,
    sg.s,
    sg.total,
    sg.m
  FROM segments AS sg
), crossed AS (
  SELECT
    cls,
    lo,
    hi,
    c,
    s,
    total,
    m,
    LEAST(GREATEST(below, lo - 1), hi) AS k
  FROM (
    SELECT
      kind,
      cls,
      lo,
      hi,
      c,
      s,
      total,
      m,
      SUM(1 - kind) OVER (ORDER BY key ASC NULLS LAST, kind ASC NULLS LAST ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS below
    FROM sorted
  ) AS counted
  WHERE
    kind = 1
), terms AS (
  SELECT
    x.cls AS cls,
    x.s AS s,
    x.total AS total,
    x.m AS m,
    (x.k - x.lo + 1) * x.c * x.total - x.s * (pk.sq - pl.sq) + x.s * (ph.sq - pk.sq) - (x.hi - x.k) * x.c * x.total AS t
  FROM crossed AS x
  JOIN prefix AS pl
    ON pl.pos = x.lo - 1
  JOIN prefix AS pk
    ON pk.pos = x.k
  JOIN prefix AS ph
    ON ph.pos = x.hi
)
SELECT
  cls,
  CASE WHEN m > 1 THEN CAST(SUM(t) AS DOUBLE) / (CAST(s AS DOUBLE) * CAST(total AS DOUBLE) * (m - 1)) ELSE 0.0 END AS d
FROM terms
GROUP BY
  cls,
  s,
  total,
  m
