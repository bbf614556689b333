"""The instants and days DuckDB holds as they are (2.0.1): an Arrow column or a Parquet file's
statistics past them is refused before the engine reads it (``prepare.arrow_instants``,
``prepare.parquet_types``). No import beyond the standard library: a Parquet source's start
pays for nothing it does not use."""

from __future__ import annotations

# DuckDB's TIMESTAMP: microseconds from 290309-12-22 (BC) to 294247-01-10, its ends (±(2**63 - 1))
# being ±infinity; its DATE: days within ±(2**31 - 2), ±(2**31 - 1) being ±infinity.
_MICROS = (-9_223_372_022_400_000_000, 9_223_372_036_854_775_806)
_DAYS = (-(2**31 - 2), 2**31 - 2)
_PER_MICRO = {"s": 1_000_000, "ms": 1_000, "us": 1}


def instants_within(low: int, high: int, unit: str) -> bool:
    """Whether instants from ``low`` to ``high`` (whole ``unit``s since 1970: s, ms, us, ns) are
    ones DuckDB holds as they are."""
    if unit == "ns":
        return low > -(2**63 - 1) and high < 2**63 - 1
    per = _PER_MICRO[unit]
    return low * per >= _MICROS[0] and high * per <= _MICROS[1]


def days_within(low: int, high: int, per_day: int = 1) -> bool:
    """Whether days from ``low`` to ``high`` (in ``per_day`` units since 1970) are ones DuckDB holds."""
    return low >= _DAYS[0] * per_day and high <= _DAYS[1] * per_day
