"""The generalization lattice as numpy arrays: one axis per quasi-identifier, one cell per node.

Node sets (satisfying, candidate) are boolean arrays, so Incognito's bookkeeping — upward
closure (generalization property), projections onto QI subsets (subset property), minimal
elements — are whole-array operations instead of loops over nodes.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

Node = tuple[int, ...]


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


def by_height(mask: np.ndarray) -> tuple[tuple[Node, ...], ...]:
    """The nodes of ``mask`` at each height from 0 to the top (empty where none), each height's in
    lexicographic order — ``nodes_by_height_groups`` filtered by ``mask``, without listing every
    node of the lattice (Incognito's subsets have ~23,000 nodes on Adult, a few hundred candidates)."""
    cells = np.argwhere(mask)  # C order: lexicographic
    heights = cells.sum(axis=1)
    groups: list[list[Node]] = [[] for _ in range(sum(s - 1 for s in mask.shape) + 1)]
    for h, row in zip(heights.tolist(), cells.tolist()):
        groups[h].append(tuple(row))
    return tuple(tuple(g) for g in groups)


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
