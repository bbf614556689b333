"""Packs a node's class codes and sensitive codes into BIGINT key columns (one or more words).

DuckDB's GROUP BY costs about twice as much with eight key columns as with one on the small
inputs of a lattice search, so node queries group by packed keys. Fields, most significant
first: one per quasi-identifier, then the sensitive part.

Every field is bit-aligned, and so is every hierarchy level inside a QI's field: a QI's leaf code
is *padded* — each level's index among its siblings in a run of bits wide enough for that level's
largest family (a power-of-two radix) — so that generalizing a key to any node is one bitwise AND
with a constant, the node's *mask*: it clears, in each QI's field, the bits of the levels below
the node's level (all of them for a QI at its top or outside the subset searched). Masks compose:
a key already generalized to a finer node keeps its class under the coarser node's mask. On a
10 M-row base, 12 row estimates took 0.43 s as integer division and remainder per QI and 0.17 s as
one AND (docs/performance.md, twenty-seventh round). The base histogram keeps the hierarchies'
dense mixed-radix codes (every other reader uses them); the SQL search reads it as padded keys
(``search.keyed_base.KeyedBase``) and unpacks a class's digits back to those codes. A base of the
rows as they stand is stored as those keys from the start (``prepare.stored_keys``), and its
dense codes are then a view unpacking them.

    key_w = Σ_{i in word w} padded_i · 2^offset_i  (+ the sensitive part in word 0)

The sensitive part is the sensitive codes in mixed radix (``sa_stride``, below ``sa_width``)
in the key's lowest ``sa_span`` (a power of two at least ``sa_width``). When the fields do not fit
in 62 bits (wide problems: 12–20 QIs, 5-digit ZIP codes, dates of birth), the QIs are spread over
several BIGINT words (``key``, ``key1``, ``key2``, …), each under 62 bits, instead of one 128-bit
integer: Spark has none, and two BIGINT columns group about as fast as one HUGEINT in DuckDB.

(Pivoting the sensitive values into count columns instead — one row per class — returned 4×
fewer rows but made DuckDB's aggregation twice as slow on Adult; measured, not kept.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from sqlclose.model.padded import PaddedCode

KEY_LIMIT = 2**62  # keep keys (and intermediate products) inside signed 64-bit integers


def key_column(word: int) -> str:
    """The result column holding key word ``word``."""
    return "key" if word == 0 else f"key{word}"


@dataclass(frozen=True)
class Packing:
    qi_stride: tuple[int, ...]  # place value of QI i's field inside its word (a power of two)
    qi_card: tuple[int, ...]  # QI i's padded codes lie in 0..card-1 (a power of two)
    sa_stride: tuple[int, ...]  # sensitive codes in mixed radix inside the sensitive part
    sa_card: tuple[int, ...]
    qi_word: tuple[int, ...] = ()  # the word holding QI i (all 0 when one word suffices)
    sa_span: int = 1  # word 0 divided by this gives its class part; the remainder is the sensitive part
    padded: tuple[PaddedCode, ...] = ()  # per QI, how its mixed codes map to its field

    @property
    def words(self) -> int:
        return max(self.qi_word, default=0) + 1

    @property
    def sa_width(self) -> int:
        """Sensitive parts lie in 0..sa_width-1: the width of a classes × sensitive values matrix."""
        return int(np.prod(self.sa_card, dtype=np.int64)) if self.sa_card else 1

    @classmethod
    def of(cls, divisors: Sequence[Sequence[int]], sa_card: Sequence[int]) -> Packing | None:
        """The packing of QIs whose hierarchies have these ``divisors`` (one list per QI) and
        sensitive columns of these domain sizes; None only when one QI's or the sensitive digits
        alone exceed 62 bits."""
        padded = tuple(PaddedCode.of(d) for d in divisors)
        sa_stride, place = [], 1
        for m in reversed(sa_card):
            sa_stride.append(place)
            place *= m
        sa_stride.reverse()
        sa_span = 1 << (place - 1).bit_length()
        place = sa_span
        qi_stride, qi_word, word = [], [], 0
        for code in reversed(padded):  # the last QI is least significant, as with one word
            card = 1 << code.bits
            if place * card >= KEY_LIMIT:
                word, place = word + 1, 1  # a new word for this QI and the ones before it
                if card >= KEY_LIMIT:
                    return None
            qi_stride.append(place)
            qi_word.append(word)
            place *= card
        if sa_span >= KEY_LIMIT:
            return None
        # Word numbers as counted from the least significant end; word 0 holds the sensitive part.
        return cls(tuple(reversed(qi_stride)), tuple(1 << c.bits for c in padded), tuple(sa_stride), tuple(sa_card),
                   tuple(reversed(qi_word)), sa_span, padded)

    def masks(self, levels: Mapping[int, int]) -> tuple[int, ...]:
        """Per key word, the AND that generalizes a key to the node at ``levels`` (QI → level; a QI
        not in it is cleared whole, as one at its top): −1 for a word kept whole, 0 for one
        cleared whole (queries then need no AND, or no word)."""
        used, kept = [0] * self.words, [0] * self.words
        used[0] = kept[0] = self.sa_span - 1
        for i, code in enumerate(self.padded):
            field = ((1 << code.bits) - 1) * self.qi_stride[i]
            cleared = code.cleared(levels[i]) if i in levels else code.bits
            used[self.qi_word[i]] |= field
            kept[self.qi_word[i]] |= field & ~(((1 << cleared) - 1) * self.qi_stride[i])
        return tuple(-1 if k == u else k for k, u in zip(kept, used))

    def unpack_sa(self, parts: np.ndarray, j: int) -> np.ndarray:
        """Sensitive code j from sensitive parts (a key word 0 % ``sa_span``, or a matrix cell)."""
        return (parts // self.sa_stride[j]) % self.sa_card[j]

    def unpack_qi(self, words: list[np.ndarray], i: int, divisors: np.ndarray) -> np.ndarray:
        """QI i's code at each class's level (``divisors``: per class, that level's divisor) from
        its key words (word 0 as stored, sensitive part included)."""
        padded = (words[self.qi_word[i]] // self.qi_stride[i]) % self.qi_card[i]
        return self.padded[i].unpad(padded) // divisors
