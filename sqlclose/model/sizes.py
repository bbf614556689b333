"""Sizes in bytes as the user writes them (``[engine] memory_limit``, ``--memory-limit``)."""

from __future__ import annotations

import re

# DuckDB's units: KB/MB/GB are powers of 1000, KiB/MiB/GiB of 1024.
BYTE_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
              "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


# A number and a unit ("256MB", "0.5 GiB"); the unit may be missing for 0, which is refused as such.
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*")


def parse_bytes(text: str) -> int:
    """``"256MB"`` → 256,000,000 (DuckDB's units: KB/MB/GB are powers of 1000, KiB/MiB/GiB of 1024)."""
    m = _SIZE.fullmatch(text)
    if not m or m.group(2).upper() not in BYTE_UNITS:
        raise ValueError(f"memory_limit {text!r}: a number and a unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)")
    return int(float(m.group(1)) * BYTE_UNITS[m.group(2).upper()])


# More than any machine holds, and DuckDB's own bound is near it (100000000TB failed inside DuckDB).
MAX_BYTES = 2**60


def checked_size(given: object) -> str:
    """A size as ``[engine] memory_limit`` takes it, or ValueError saying in one sentence what is
    wrong: a number and its unit, in any case ("2GB", "512 mib"); above zero (0 would be DuckDB's
    "no limit"); at most ``MAX_BYTES``."""
    text = given if isinstance(given, str) else None
    m = _SIZE.fullmatch(text) if text is not None else None
    if text is not None and is_zero_bytes(text):  # "0" too, unit or none
        raise ValueError("0 bytes, which would be no limit at all: give a limit above zero "
                         "with its unit (e.g. \"2GB\"), or leave memory_limit unset for no limit")
    if m is None or m.group(2).upper() not in BYTE_UNITS:
        raise ValueError("needs a size with its unit, e.g. 2GB or 512MiB (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB, "
                         "in any case)")
    if parse_bytes(text) > MAX_BYTES:
        raise ValueError("more memory than any machine holds (at most 1 EiB): give the machine's, e.g. 16GB")
    return text


def is_zero_bytes(text: str) -> bool:
    """Whether a size reads as 0 bytes: "0", "0GB", "0.0001KB" (a fraction of a byte)."""
    m = _SIZE.fullmatch(text)
    return bool(m) and (float(m.group(1)) == 0 or (m.group(2).upper() in BYTE_UNITS and parse_bytes(text) == 0))
