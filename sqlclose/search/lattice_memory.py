"""The memory the search's lattice-sized structures take, known from the lattice's shape alone,
and the refusal of a lattice whose structures cannot fit (before any work, in a dry run too).

Incognito keeps dense arrays with a cell per node — of the full lattice (``FullLattice``'s three
boolean arrays, ``full_lattice._heights``, the candidates, the masks of the walk from above) and
of every QI subset's lattice it walks (candidates, satisfying and decided nodes, the previous size's
satisfying nodes) — whatever the data. Their size is a product of levels: 20 QIs of 3 levels are
3.5 G nodes, and the arrays were allocated (26 GiB) before anything was said. Not counted here:
a level's classes (the runners bound them) and the candidate nodes listed per height, which depend
on what the subsets' walks ruled out in the data.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from sqlclose.engine.limits import INTERPRETER_BYTES, SEARCH_SHARE, megabytes, search_share
from sqlclose.errors import EnvironmentFailure

# Bytes per full-lattice node: decided, satisfying, perfect (bool), its height (int16), the
# candidates and the masks of a walk from above (``highest_undecided``: five bool-sized temporaries).
FULL_BYTES_PER_NODE = 3 + 2 + 1 + 5
# Nodes whose discernibility floor (exploring for the optimum) is computed at once, and the bytes of
# that block: four float64 arrays and a boolean one (``incognito._rule_out_by_least_discernibility``).
FLOOR_BLOCK = 2**18
FLOOR_BYTES_PER_NODE = 4 * 8 + 1
# Per subset-lattice node: candidates, satisfying, decided of the size walked (bool); the size before
# it is kept (bool) to make the next size's candidates.
SUBSET_BYTES_PER_NODE = 3
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


def lattice_bytes(shape: Sequence[int]) -> int:
    """An upper bound on the bytes of the search's lattice-sized structures at their peak: the full
    lattice's, held all along, and the largest of a subset size's arrays with the previous size's."""
    n = len(shape)
    sizes = subset_nodes(shape)
    subsets = max((sizes[s - 1] + SUBSET_BYTES_PER_NODE * sizes[s] for s in range(1, n)), default=0)
    nodes = math.prod(shape)
    floor = min(nodes, FLOOR_BLOCK) * FLOOR_BYTES_PER_NODE
    return nodes * FULL_BYTES_PER_NODE + floor + max(subsets, sizes[n - 1] if n > 1 else 0)


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
