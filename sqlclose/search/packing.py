"""Packs a node's class codes and sensitive codes into BIGINT key columns (one or more words).

DuckDB's GROUP BY costs about twice as much with eight key columns as with one on the small
inputs of a lattice search, so node queries group by packed keys. Digits, most significant
first: one per quasi-identifier (its mixed-radix leaf code range), then one per sensitive
attribute. A QI outside the subset being searched, or generalized to the top, holds 0.

    key_w = Σ_{i in word w} code_i · qi_stride_i  (+ Σ_j sa_j · sa_stride_j in word 0)

When the digits do not fit in 62 bits (wide problems: 12–20 QIs, 5-digit ZIP codes, dates of
birth), the QIs are spread over several BIGINT words (``key``, ``key1``, ``key2``, …), each
under 62 bits, instead of one 128-bit integer: Spark has none, and two BIGINT columns group
about as fast as one HUGEINT in DuckDB. One word keeps the layout (and the SQL) of before.

(Pivoting the sensitive values into count columns instead — one row per class — returned 4×
fewer rows but made DuckDB's aggregation twice as slow on Adult; measured, not kept.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sqlclose.prepare.problem import Problem

KEY_LIMIT = 2**62  # keep keys (and intermediate products) inside signed 64-bit integers


def key_column(word: int) -> str:
    """The result column holding key word ``word``."""
    return "key" if word == 0 else f"key{word}"


@dataclass(frozen=True)
class Packing:
    qi_stride: tuple[int, ...]  # place value of QI i inside its word
    qi_card: tuple[int, ...]  # leaf codes of QI i lie in 0..card-1
    sa_stride: tuple[int, ...]
    sa_card: tuple[int, ...]
    qi_word: tuple[int, ...] = ()  # the word holding QI i (all 0 when one word suffices)
    sa_span: int = 1  # word 0 divided by this gives its class part; the remainder is the sensitive part

    @property
    def words(self) -> int:
        return max(self.qi_word, default=0) + 1

    @classmethod
    def for_problem(cls, problem: Problem) -> Packing | None:
        """The packing; None only when one QI's or the sensitive digits alone exceed 62 bits."""
        sa_card = [len(s.domain) for s in problem.sas]
        qi_card = [qi.hierarchy.code_range for qi in problem.qis]
        sa_stride, place = [], 1
        for m in reversed(sa_card):
            sa_stride.append(place)
            place *= m
        sa_stride.reverse()
        sa_span = place
        qi_stride, qi_word, word = [], [], 0
        for card in reversed(qi_card):  # the last QI is least significant, as with one word
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
        return cls(tuple(reversed(qi_stride)), tuple(qi_card), tuple(sa_stride), tuple(sa_card),
                   tuple(reversed(qi_word)), sa_span)

    def unpack_sa(self, keys: np.ndarray, j: int) -> np.ndarray:
        """Sensitive code j from word 0."""
        return (keys // self.sa_stride[j]) % self.sa_card[j]

    def unpack_qi(self, words: list[np.ndarray], i: int) -> np.ndarray:
        """Code of QI i from the key words (word 0 as stored, sensitive part included)."""
        return (words[self.qi_word[i]] // self.qi_stride[i]) % self.qi_card[i]
