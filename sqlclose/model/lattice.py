"""The generalization lattice as numpy arrays: one axis per quasi-identifier, one cell per node.

Node sets (satisfying, candidate) are boolean arrays, so Incognito's bookkeeping — upward
closure (generalization property), projections onto QI subsets (subset property), minimal
elements — are whole-array operations instead of loops over nodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from numbers import Integral

import numpy as np

from sqlclose.errors import InputError
from sqlclose.model.text import clipped, name_cut, name_shown

Node = tuple[int, ...]

# GAA recodes classes, not a whole level per column: any node given to it (--node, Release.at) is refused so.
GAA_HAS_NO_NODES = "a GAA release has no lattice nodes: --node and Release.at apply to algorithm = \"incognito\""


def refuse_node_to_gaa(node: object, algorithm: str) -> None:
    """Any node given (``node`` not None) to GAA, which has none, refused: told before the data is
    read (it was told after the data's scan, slow on a big table, and a source's own error came first)."""
    if node is not None and algorithm == "gaa":
        raise InputError(GAA_HAS_NO_NODES)


def refuse_node_before_reading(node: object, algorithm: str, names: Sequence[str]) -> None:
    """A node given (``--node``) told its mistakes before the data is read (a big table's scan, or a
    source's own error, came first): any node to GAA, which has none (a partial one was told the
    columns it lacks, as if naming them would do), else its form and names against the spec's
    quasi-identifiers ``names`` (its levels: once the hierarchies are built, before the search)."""
    refuse_node_to_gaa(node, algorithm)
    checked_node(node, names)


def checked_node(node: object, names: Sequence[str], levels: Sequence[int] | None = None) -> Node:
    """A node as given (``Release.at``, ``--node``): a mapping of every quasi-identifier's name
    (``names``, in the spec's order) to a whole level, or a tuple or list of one level per
    quasi-identifier in that order. With ``levels`` (each QI's number of levels) each level must
    lie in its range; without them (the spec alone, before the data is read) only the shape, the
    names and the levels' being whole and not negative are checked. Anything else, a fraction or
    a level too many among them, is an InputError saying the form expected: none is truncated."""
    listed = ", ".join(map(name_cut, names))
    form = ("a node is a dict of quasi-identifier name to level (e.g. "
            f"{{{', '.join(f'{name_shown(n)}: 0' for n in names)}}}) "
            f"or a tuple of one level per quasi-identifier, in the spec's order ({listed})")
    if isinstance(node, Mapping):
        given = dict(node)
    elif isinstance(node, (tuple, list)):
        if len(node) != len(names):
            raise InputError(f"node {clipped(repr(tuple(node)))} gives {len(node)} level{'s' * (len(node) != 1)} for "
                             f"{len(names)} quasi-identifier{'s' * (len(names) != 1)} ({listed}): {form}")
        given = dict(zip(names, node))
    else:
        raise InputError(f"node {clipped(repr(node))} is a {type(node).__name__}: {form}")
    unknown = sorted(str(k) for k in set(given) - set(names))
    if unknown:
        raise InputError(f"node names {name_shown(unknown[0])}, which is not a quasi-identifier (those are: {listed})"
                         + _near_name(unknown[0], names))
    missing = [name for name in names if name not in given]
    if missing:
        raise InputError(f"node gives no level for {', '.join(name_shown(m) for m in missing)}: name a level for "
                         "every quasi-identifier")
    for i, name in enumerate(names):
        level = given[name]
        top = f"0 to {levels[i] - 1}" if levels is not None else "0 or more"
        if not isinstance(level, Integral) or isinstance(level, bool):
            raise InputError(f"node {name_cut(name)}={clipped(repr(level))}: a level is a whole number ({top}), not a "
                             f"{type(level).__name__}")
        if level < 0 or (levels is not None and level >= levels[i]):
            raise InputError(f"node {name_cut(name)}={level}: {name_shown(name)} has no level {level} (its "
                             f"levels are {top})")
    return tuple(int(given[name]) for name in names)


def _near_name(unknown: str, names: Sequence[str]) -> str:
    """A hint for a name that is a quasi-identifier's but for commas or spaces around it: in
    ``--node 'age=2,,zip=1'`` a comma belongs to the next name (a name may hold one)."""
    near = unknown.strip(", \t")
    if near == unknown or near not in names:
        return ""
    return (f"; did you mean {name_shown(near)}? Pairs are separated by one comma: a comma more is read as part "
            "of a name")


@lru_cache(maxsize=256)
def nodes_by_height(shape: tuple[int, ...]) -> tuple[Node, ...]:
    """Every node, bottom-up: by height (sum of levels), then lexicographically."""
    grid = np.indices(shape).reshape(len(shape), -1).T
    order = np.lexsort((*grid.T[::-1], grid.sum(axis=1)))
    return tuple(tuple(int(v) for v in row) for row in grid[order])


@lru_cache(maxsize=256)
def nodes_by_height_groups(shape: tuple[int, ...]) -> tuple[tuple[Node, ...], ...]:
    """The nodes of each height, from the bottom (height 0) to the top."""
    groups: list[list[Node]] = [[] for _ in range(sum(s - 1 for s in shape) + 1)]
    for node in nodes_by_height(shape):
        groups[sum(node)].append(node)
    return tuple(tuple(g) for g in groups)


BY_HEIGHT_BLOCK = 2**16  # cells whose coordinates ``by_height`` computes at once


def by_height(mask: np.ndarray) -> tuple[np.ndarray, ...]:
    """The nodes of ``mask`` at each height from 0 to the top (empty where none), each height's in
    lexicographic order, as rows of levels (the smallest integer type that holds them) —
    ``nodes_by_height_groups`` filtered by ``mask``, without listing every node of the lattice
    (Incognito's subsets have ~23,000 nodes on Adult, a few hundred candidates). Arrays, not node
    tuples: a walk holds its candidates for its whole size, and as tuples they took 48 + 8 bytes per
    QI a node, ~10× the lattice's own arrays (search/lattice_memory.py); the walk makes tuples of
    one height at a time (``node_tuples``)."""
    flat = np.flatnonzero(mask)  # C order: lexicographic
    cells = np.empty((flat.size, mask.ndim), dtype=level_type(mask.shape))
    for start in range(0, flat.size, BY_HEIGHT_BLOCK):  # coordinates a block at a time: int64 otherwise
        stop = start + BY_HEIGHT_BLOCK
        for axis, levels in enumerate(np.unravel_index(flat[start:stop], mask.shape)):
            cells[start:stop, axis] = levels
    del flat
    heights = cells.sum(axis=1, dtype=np.int16)
    return tuple(cells[heights == h] for h in range(sum(s - 1 for s in mask.shape) + 1))


def level_type(shape: tuple[int, ...]) -> np.dtype:
    """The smallest integer type holding every level of ``shape`` (int8 below 128 levels)."""
    return np.min_scalar_type(-max(shape, default=1))


def node_tuples(rows: np.ndarray) -> list[Node]:
    """``by_height``'s rows as node tuples of Python ints."""
    return [tuple(row) for row in rows.tolist()]


def height(node: Node) -> int:
    return sum(node)


def predecessors(node: Node) -> list[Node]:
    """Direct specializations: one QI one level lower."""
    return [node[:i] + (node[i] - 1,) + node[i + 1:] for i in range(len(node)) if node[i] > 0]


def upward_closure(mask: np.ndarray) -> np.ndarray:
    """Every node at or above some node of ``mask``."""
    out = mask.copy()
    for axis in range(out.ndim):
        np.logical_or.accumulate(out, axis=axis, out=out)
    return out


def strictly_above(mask: np.ndarray) -> np.ndarray:
    """Every node strictly above some node of ``mask`` (a node one step below it, on some axis,
    is at or above one)."""
    above = upward_closure(mask)
    out = np.zeros_like(mask)
    for axis in range(mask.ndim):
        shifted = np.zeros_like(mask)
        src = [slice(None)] * mask.ndim
        dst = [slice(None)] * mask.ndim
        src[axis], dst[axis] = slice(0, -1), slice(1, None)
        shifted[tuple(dst)] = above[tuple(src)]
        out |= shifted
    return out


def minimal(mask: np.ndarray) -> np.ndarray:
    """Nodes of ``mask`` with no strict specialization in ``mask``."""
    return mask & ~strictly_above(mask)


def lift(mask: np.ndarray, axis: int, size: int) -> np.ndarray:
    """A subset's node set seen from a lattice with one more QI (at ``axis``, any level)."""
    return np.broadcast_to(np.expand_dims(mask, axis), mask.shape[:axis] + (size,) + mask.shape[axis:])


def node_list(mask: np.ndarray) -> list[Node]:
    return [tuple(int(v) for v in idx) for idx in np.argwhere(mask)]
