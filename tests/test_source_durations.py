"""Durations finer than a microsecond in an Arrow or pandas source (review rv7, defect 9).

DuckDB reads an Arrow ``duration('ns')`` (pandas' ``timedelta64[ns]``) and a ``month_day_nano``
interval as its INTERVAL, which holds microseconds: 1 000 000 005 ns was released (``to_arrow``,
CSV) as 1 s, a value no row holds, and verified, since the re-check reads the source the same
way. Such a column is now refused by name (InputError, exit 2) with the conversions that keep it,
as pandas periods are, unless every value is a whole number of microseconds; the message names no
value. The oracle throughout is the input's own nanoseconds, as the test wrote them.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import sqlclose
from sqlclose.errors import InputError

TABLE3 = Path(__file__).resolve().parents[1] / "datasets" / "table3"
NANOS_A_DAY = 86_400_000_000_000


def _table(column: pa.Array) -> pa.Table:
    """Table 3 (9 rows) with a kept column ``wait``."""
    table = pacsv.read_csv(TABLE3 / "table3.csv", convert_options=pacsv.ConvertOptions(
        column_types={"zip": pa.string(), "age": pa.int64()}))
    return table.append_column("wait", column)


def _spec() -> dict:
    spec = sqlclose.load_spec(TABLE3 / "table3.toml").model_dump(exclude={"output", "source"}, exclude_none=True)
    return {**spec, "others": "keep"}


def _nanos(value: object) -> int:
    """A released duration (Arrow's MonthDayNano, or a timedelta) in nanoseconds."""
    if isinstance(value, pa.MonthDayNano):
        assert value.months == 0
        return value.days * NANOS_A_DAY + value.nanoseconds
    return round(value.total_seconds() * 1_000_000) * 1000


SUB_MICROS = [1_000_000_005 + 1000 * i for i in range(9)]  # 1 s and 5 ns, and on


@pytest.mark.parametrize("column", [
    pa.array(SUB_MICROS, pa.duration("ns")),
    pa.array([[n] for n in SUB_MICROS], pa.list_(pa.duration("ns"))),
    pa.array([pa.MonthDayNano([0, 0, n]) for n in SUB_MICROS], pa.month_day_nano_interval()),
], ids=["duration", "list_of_durations", "month_day_nano"])
def test_a_duration_finer_than_a_microsecond_is_refused_by_name(column):
    """Was: released as 1 s (``to_arrow`` gave MonthDayNano(nanoseconds=1000000000)). Now refused
    before anything is read, naming the column and no value (not the 5 ns, not a whole value)."""
    with pytest.raises(InputError) as refused:
        sqlclose.anonymize(_table(column), _spec())
    message = str(refused.value)
    assert "column 'wait'" in message and "finer than a microsecond" in message and "convert it first" in message
    assert not any(str(n) in message for n in SUB_MICROS)


def test_a_pandas_timedelta_finer_than_a_microsecond_is_refused_with_its_conversions():
    """pandas' timedelta64[ns] is the common way here: the message names pandas' conversions."""
    pytest.importorskip("pandas")
    frame = _table(pa.array(SUB_MICROS, pa.duration("ns"))).to_pandas()
    assert str(frame["wait"].dtype) == "timedelta64[ns]"
    with pytest.raises(InputError, match=r"column 'wait' \(duration\[ns\]\).*df\['wait'\]\.astype\('int64'\)"):
        sqlclose.anonymize(frame, _spec())
    converted = frame.assign(wait=frame["wait"].astype("int64"))  # the first conversion it names
    with sqlclose.anonymize(converted, _spec()) as release:
        assert sorted(release.to_arrow().column("wait").to_pylist()) == SUB_MICROS


def test_nanosecond_durations_of_whole_microseconds_are_released_as_they_are():
    """The refusal is of values the engine would change, not of the type: whole microseconds (a
    pandas timedelta of seconds is one) are read exactly and released as the input holds them."""
    whole = [1_000_000_000 + 7000 * i for i in range(9)]
    with sqlclose.anonymize(_table(pa.array(whole, pa.duration("ns"))), _spec()) as release:
        released = release.to_arrow().column("wait").to_pylist()
    assert sorted(_nanos(v) for v in released) == whole
