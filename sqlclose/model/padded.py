"""Padded codes: a hierarchy's mixed-radix leaf codes with each level on bits of its own.

``Hierarchy`` codes a leaf so that its ancestor at level ``l`` is ``code // divisors[l]``: dense,
the form every reader of the base histogram uses. The SQL search packs codes into keys where a
generalization is one bitwise AND (``model.packing``): there each level's index among its
siblings sits in a run of bits as wide as that level's largest family needs, so clearing a
level's bits and all below them is generalizing to the level above.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PaddedCode:
    """One QI's leaf codes, mixed radix (``hierarchy.divisors``) ↔ padded (a bit run per level).

    Level ``l`` < top: the sibling index ``(code // divisors[l]) % radices[l]`` sits at bit
    ``shifts[l]``, ``shifts[l + 1] − shifts[l]`` bits wide; ``shifts[top]`` is the field's width."""

    divisors: tuple[int, ...]  # per level, as the hierarchy's
    radices: tuple[int, ...]  # per level below the top: divisors[l + 1] // divisors[l]
    shifts: tuple[int, ...]  # per level, the padded code's bits below it (the last: all of them)

    @classmethod
    def of(cls, divisors: Sequence[int]) -> PaddedCode:
        radices = tuple(b // a for a, b in zip(divisors, divisors[1:]))
        shifts = [0]
        for r in radices:
            shifts.append(shifts[-1] + (r - 1).bit_length())
        return cls(tuple(divisors), radices, tuple(shifts))

    @property
    def bits(self) -> int:
        return self.shifts[-1]

    @property
    def identity(self) -> bool:
        """Radices all powers of two: the padded code is the mixed code itself."""
        return all(r & (r - 1) == 0 for r in self.radices)

    def cleared(self, level: int) -> int:
        """The padded code's bits a node at ``level`` clears (all of them at the top)."""
        return self.shifts[level]

    def pad(self, codes: np.ndarray) -> np.ndarray:
        out = np.zeros(len(codes), dtype=np.int64)
        for d, r, s in zip(self.divisors, self.radices, self.shifts):
            if r > 1:
                out += ((codes // d) % r) << s
        return out

    def unpad(self, padded: np.ndarray) -> np.ndarray:
        """Padded codes (masked or not) → mixed codes (a masked code's cleared levels as 0)."""
        out = np.zeros(len(padded), dtype=np.int64)
        for d, r, s in zip(self.divisors, self.radices, self.shifts):
            if r > 1:
                out += ((padded >> s) & ((1 << (r - 1).bit_length()) - 1)) * d
        return out
