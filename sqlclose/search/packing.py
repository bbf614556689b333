"""Packs a node's class codes and sensitive codes into one BIGINT key.

DuckDB's GROUP BY costs about twice as much with eight key columns as with one on the small
inputs of a lattice search, so node queries group by one packed key. Digits, most significant
first: one per quasi-identifier (its mixed-radix leaf code range), then one per sensitive
attribute. A QI outside the subset being searched, or generalized to the top, holds 0.

    key = Σ_i code_i · qi_stride_i  +  Σ_j sa_j · sa_stride_j,   Σ_j sa_j · sa_stride_j < sa_span

(Pivoting the sensitive values into count columns instead — one row per class — returned 4×
fewer rows but made DuckDB's aggregation twice as slow on Adult; measured, not kept.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sqlclose.prepare.problem import Problem

KEY_LIMIT = 2**62  # keep keys (and intermediate products) inside signed 64-bit integers


@dataclass(frozen=True)
class Packing:
    qi_stride: tuple[int, ...]
    qi_card: tuple[int, ...]  # leaf codes of QI i lie in 0..card-1
    sa_stride: tuple[int, ...]
    sa_card: tuple[int, ...]

    @property
    def sa_span(self) -> int:
        """Keys divided by this give the class part; the remainder is the sensitive part."""
        return self.qi_stride[-1]

    @classmethod
    def for_problem(cls, problem: Problem) -> Packing | None:
        """The packing, or None when the key space would not fit in 62 bits."""
        sa_card = [len(s.domain) for s in problem.sas]
        qi_card = [int(qi.hierarchy.leaf_codes.max()) + 1 for qi in problem.qis]
        sa_stride, place = [], 1
        for m in reversed(sa_card):
            sa_stride.append(place)
            place *= m
        sa_stride.reverse()
        qi_stride = []
        for card in reversed(qi_card):
            qi_stride.append(place)
            place *= card
        qi_stride.reverse()
        if place >= KEY_LIMIT:
            return None
        return cls(tuple(qi_stride), tuple(qi_card), tuple(sa_stride), tuple(sa_card))

    def unpack_sa(self, keys: np.ndarray, j: int) -> np.ndarray:
        return (keys // self.sa_stride[j]) % self.sa_card[j]

    def unpack_qi(self, classes: np.ndarray, i: int) -> np.ndarray:
        """Code of QI i from class parts (key // sa_span)."""
        return (classes // (self.qi_stride[i] // self.sa_span)) % self.qi_card[i]
