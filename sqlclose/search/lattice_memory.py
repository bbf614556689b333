"""The memory the search's lattice-sized structures take, known from the lattice's shape alone,
and the refusal of a lattice whose structures cannot fit (before any work, in a dry run too).

Incognito keeps dense arrays with a cell per node — of the full lattice (``FullLattice``'s three
boolean arrays, the evaluated nodes' outcomes (``search/evaluated.py``), ``full_lattice._heights``,
the candidates, the masks of the walk from above) and
of every QI subset's lattice it walks (candidates, satisfying and decided nodes, the previous size's
satisfying nodes) — whatever the data. Their size is a product of levels: 20 QIs of 3 levels are
3.5 G nodes, and the arrays were allocated (26 GiB) before anything was said. Each walk also lists
its candidate nodes by height (``model.lattice.by_height``, a byte per level), and the height it
judges as Python tuples: how many depends on what the subsets' walks ruled out in the data, so they
are counted as if none was (a table every node of each size satisfies makes them all candidates),
with the walk from above's highest undecided nodes. Not counted here: a level's classes (the
runners bound them).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from sqlclose.engine.limits import INTERPRETER_BYTES, SEARCH_SHARE, megabytes, search_share
from sqlclose.errors import EnvironmentFailure
from sqlclose.model.lattice import BY_HEIGHT_BLOCK, level_type
from sqlclose.search.evaluated import BYTES_PER_NODE as EVALUATED_BYTES_PER_NODE

# Bytes per full-lattice node: decided, satisfying, perfect (bool), its height (int16), the
# candidates and the masks of a walk from above (``highest_undecided``: five bool-sized temporaries),
# and the evaluated nodes' outcomes: deciding the whole lattice may evaluate every node (as a dict
# of objects they took ~400 B a node, uncounted: docs/performance.md, fifty-third round).
FULL_BYTES_PER_NODE = 3 + 2 + 1 + 5 + EVALUATED_BYTES_PER_NODE
# Nodes whose discernibility floor (exploring for the optimum) is computed at once, and the bytes of
# that block: four float64 arrays and a boolean one (``incognito._rule_out_by_least_discernibility``).
FLOOR_BLOCK = 2**18
FLOOR_BYTES_PER_NODE = 4 * 8 + 1
# Per subset-lattice node: candidates, satisfying, decided of the size walked (bool); the size before
# it is kept (bool) to make the next size's candidates.
SUBSET_BYTES_PER_NODE = 3
# Each walk lists its candidates by height (``model.lattice.by_height``), held through its size's
# walk: w bytes per level (w = 1 below 128 levels), s levels a node. While listing, at the peak,
# per node: the flat indices (8) beside the levels, then the levels, their heights (2), one
# height's mask (1) and the levels sorted by height: max(8 + w·s, 2·w·s + 3); and a block's int64
# coordinates (``BY_HEIGHT_BLOCK`` × 8 per level). Measured with tracemalloc, every node a candidate,
# 13 QIs of 3 levels: 13 B a node held, 30 at the peak (as tuples, before: 152 held, 440 at the peak).
LISTING_BYTES_PER_NODE = 8
LISTING_SORTED_BYTES_PER_NODE = 3
# Per node of the height being judged, made node tuples (``node_tuples``) with its (subset, node)
# pair in the to-do lists: measured 272, 305 and 321 B a node for 10, 12 and 13 QIs: 112 + 16·s.
HEIGHT_BYTES_PER_NODE = 112
HEIGHT_BYTES_PER_QI = 16
# The walk from above's highest undecided nodes, a list of new tuples (48 + 8·n) and the
# coordinates they are made from (8·n).
ABOVE_BYTES_PER_NODE = 48
ABOVE_BYTES_PER_QI = 16
# Without a memory limit, a lattice whose structures pass this is refused all the same: the machine
# would swap or kill the job long before the search ended (docs/spec.md, "Quasi-identifiers").
UNLIMITED_BOUND = 4 * 10**9


def subset_nodes(shape: Sequence[int]) -> list[int]:
    """Per subset size s (0..n), the nodes of all s-QI subsets' lattices together: the
    coefficients of Π (1 + levels·x), exact integers."""
    sizes = [1]
    for levels in shape:
        sizes = [a + levels * b for a, b in zip([*sizes, 0], [0, *sizes])]
    return sizes


def subset_layers(shape: Sequence[int]) -> list[list[int]]:
    """Per subset size s (0..n), the nodes of all s-QI subsets' lattices at each height 0..the
    top's: the coefficients of Π (1 + y·(1 + x + … + x^(levels − 1))), y counting QIs, x heights."""
    top = sum(levels - 1 for levels in shape)
    layers = [[1] + [0] * top]
    for levels in shape:
        grown = [row[:] for row in layers] + [[0] * (top + 1)]
        for s, row in enumerate(layers):
            for h, count in enumerate(row):
                for step in range(levels if count else 0):
                    grown[s + 1][h + step] += count
        layers = grown
    return layers


def _listed(s: int, nodes: int, widest: int, level_bytes: int) -> int:
    """A size's candidates listed by height (all of its ``nodes``, as if every one were a
    candidate): the peak while listing them, or the lists held with the ``widest`` height's tuples."""
    levels = level_bytes * s
    listing = (nodes * max(LISTING_BYTES_PER_NODE + levels, 2 * levels + LISTING_SORTED_BYTES_PER_NODE)
               + min(nodes, BY_HEIGHT_BLOCK) * 8 * (s + 1))
    return max(listing, nodes * levels + widest * (HEIGHT_BYTES_PER_NODE + HEIGHT_BYTES_PER_QI * s))


def lattice_bytes(shape: Sequence[int]) -> int:
    """An upper bound on the bytes of the search's lattice-sized structures at their peak: the full
    lattice's arrays, held all along, with the walk from above's widest height listed, and the
    largest of a subset size's walk (its arrays and listed candidates, with the previous size's
    arrays) and the full lattice's walk (its listed candidates)."""
    n = len(shape)
    sizes = subset_nodes(shape)
    widest = [max(row) for row in subset_layers(shape)]
    level_bytes = level_type(tuple(shape)).itemsize
    subsets = max((sizes[s - 1] + SUBSET_BYTES_PER_NODE * sizes[s] + _listed(s, sizes[s], widest[s], level_bytes)
                   for s in range(1, n)), default=0)
    nodes = math.prod(shape)
    floor = min(nodes, FLOOR_BLOCK) * FLOOR_BYTES_PER_NODE
    above = widest[n] * (ABOVE_BYTES_PER_NODE + ABOVE_BYTES_PER_QI * n)
    full_walk = max(sizes[n - 1] if n > 1 else 0, _listed(n, nodes, widest[n], level_bytes))
    return nodes * FULL_BYTES_PER_NODE + floor + above + max(subsets, full_walk)


def refuse_too_large_lattice(shape: Sequence[int], memory_budget: int | None) -> None:
    """Raise EnvironmentFailure (exit 5) when the lattice's structures cannot fit the search's share of
    the job's memory limit (``limits.search_share``), or ``UNLIMITED_BOUND`` without a limit."""
    needed = lattice_bytes(shape)
    room = UNLIMITED_BOUND if memory_budget is None else search_share(memory_budget)
    if needed <= room:
        return
    where = (f"the search's share of --memory-limit {megabytes(memory_budget)} ({megabytes(room)})"
             if memory_budget is not None else
             f"the {_size(room)} sqlclose allows it without a memory limit")
    counts = Counter(shape)
    levels = ", ".join(f"{counts[n]} of {n} levels" for n in sorted(counts, reverse=True))
    limit = math.ceil(needed / SEARCH_SHARE) + INTERPRETER_BYTES  # the least limit whose share holds it
    raise EnvironmentFailure(
        f"the search's lattice has {math.prod(shape):,} nodes ({len(shape)} quasi-identifiers: {levels}), "
        f"whose bookkeeping needs ~{_size(needed)}, more than {where}: give fewer quasi-identifiers or "
        f"hierarchies with fewer levels, {'raise' if memory_budget else 'give'} [engine] memory_limit "
        f"(--memory-limit) {'to' if memory_budget else 'of'} at least {_size_up(limit)}, or use [search] "
        f"algorithm = \"gaa\" (--algorithm gaa), which does not enumerate the lattice; nothing was placed at the "
        f"output path")


def _size(n: int) -> str:
    """Bytes as the message says them: "70 MB", "4.2 GB", "30,519 GB"."""
    if n < 10**9:
        return megabytes(n)
    return f"{n / 1e9:.1f} GB" if n < 10**10 else f"{n / 1e9:,.0f} GB"


def _size_up(n: int) -> str:
    """Bytes as ``_size`` says them, rounded up: the least limit advised must hold ``n`` as given
    (1,124,663,680 bytes said "1.1 GB", and --memory-limit 1.1GB was refused again, review rv26)."""
    if n < 10**9:
        return f"{-(-n // 10**6):,} MB"
    return f"{-(-n // 10**8) / 10:.1f} GB" if n < 10**10 else f"{-(-n // 10**9):,} GB"
