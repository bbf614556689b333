"""The dates rule: day → month → year → 5-year band → * (or the levels the spec names).

``dates = true`` gives ``["month", "year", "5y"]``; ``dates = ["month", "year", "10y"]`` names
them: ``month`` (2024-05), ``quarter`` (2024-Q2), ``year`` (2024) and ``Ny`` bands of N years
aligned on multiples of N (``5y``: 2020-2024), then ``*``. Each level must be coarser than the
one before and nest in the next (a 10-year band holds two 5-year bands; 5y then 10y is fine,
5y then 12y is not), so every value has one parent per level.

The values are the column's distinct values as the engine prints them (``CAST(col AS VARCHAR)``
by SQL: DATE ``2024-05-17``, TIMESTAMP ``2024-05-17 08:30:00``, or ISO text): a day
``YYYY-MM-DD``, alone or followed by a time of day; any other text is refused (``_day_of``), the
error counting such values, never showing one, and its fix written in the engine's SQL.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Sequence
from datetime import date
from functools import cache

import numpy as np
import pyarrow as pa
from sqlglot import exp

from sqlclose.model.domains import date_cover
from sqlclose.model.hierarchy import TOP_LABEL, Hierarchy, LevelRows, numbered_as_they_appear
from sqlclose.model.refused_values import Refusals, Refused, ValuesAt
from sqlclose.model.text import name_shown

DEFAULT_LEVELS = ("month", "year", "5y")
_YEARS = re.compile(r"([1-9][0-9]*)y")
_RANK = {"month": 1, "quarter": 3, "year": 12}  # width in months
# A day as the engines print one, then maybe a time of day: DuckDB's TIMESTAMP '2024-05-17 08:30:00.5',
# TIMESTAMPTZ '…+00' or, for an old instant in a zone, '…+05:53:28'; ISO text '…T08:30Z'; Snowflake's
# offset after a space '… +0000', Trino's zone by name '… UTC', '… America/New_York'. Nothing else:
# Python's fromisoformat also reads an ISO week '2024-W22' (as its Monday) and '20240601', and reading
# only the first ten characters took '2024-05-31 junk' for a day. A day before year 1 is marked, and
# its year would read as AD: DuckDB writes '0044-03-15 (BC)' with a time after the marker, Postgres
# '0044-03-15 10:00:00 BC', Spark and Trino the astronomical year '-0043-03-15'. A year after 9999 has
# five digits or more, which Python's date cannot hold. ISO 8601 and RFC 3339 also allow an hour alone
# ('T08'), a comma before the fraction ('08:30:00,5') and a lower-case t and z, as fromisoformat does.
# An offset is of an instant: hours 00 to 23 (RFC 3339), minutes and seconds 00 to 59, the colons all
# written or none ('+25:00' was read as its day). A zone's name is one of the IANA database's
# (``_zones``): any Area/Name was read ('… Not/AZone').
_OFFSET = r"[+-](?:[01][0-9]|2[0-3])(?::[0-5][0-9](?::[0-5][0-9])?|[0-5][0-9](?:[0-5][0-9])?)?"
_TIME_OF_DAY = (r"[Tt ](?:[01][0-9]|2[0-3])(?::[0-5][0-9](?::[0-5][0-9](?:[.,][0-9]+)?)?)?"
                rf"(?: ?(?:[Zz]|{_OFFSET}|(?P<zone>UTC|[A-Za-z_]+(?:/[A-Za-z0-9_+-]+)+)))?")
_DATE_TEXT = re.compile(rf"(?P<minus>-?)(?P<year>[0-9]{{4}}|\+?[1-9][0-9]{{4,}})"
                        rf"-(?P<month>[0-9]{{2}})-(?P<day>[0-9]{{2}})"
                        rf"(?P<bc> \(BC\))?(?:{_TIME_OF_DAY})?(?P<bc_last> BC)?")


def level_months(level: str) -> int | None:
    """A level's width in months, or None when the name is not a dates level."""
    if level in _RANK:
        return _RANK[level]
    m = _YEARS.fullmatch(level)
    return int(m.group(1)) * 12 if m else None


MAX_BAND_YEARS = 1000
LAST_YEAR = date.max.year  # 9999: no band label ends past it


def check_levels(levels: Sequence[str]) -> list[str]:
    """The levels, validated: known names, growing, each a multiple of the one before."""
    if not levels:
        raise ValueError(f"dates levels must not be empty: give some of {', '.join(DEFAULT_LEVELS)} (or true)")
    widths = []
    for level in levels:
        width = level_months(level)
        if width is None:
            raise ValueError(f"unknown dates level {name_shown(level)}: use month, quarter, year or a band of years "
                             "like 5y or 10y")
        if width > MAX_BAND_YEARS * 12:  # its label, 0000-999999, is no four-digit year range
            raise ValueError(f"dates level {name_shown(level)} is wider than {MAX_BAND_YEARS}y: the dates rule labels "
                             f"years 1 to 9999 in four digits; give a band of at most {MAX_BAND_YEARS} years (the top "
                             "level, '*', holds every date)")
        widths.append(width)
    for (a, wa), (b, wb) in zip(zip(levels, widths), zip(levels[1:], widths[1:])):
        if wb == wa:  # 'year' then '1y': one level written twice, not a parent too many
            raise ValueError(f"dates levels must grow and nest: {name_shown(b)} after {name_shown(a)} is the same "
                             "level again; give each level once")
        if wb < wa or wb % wa:
            raise ValueError(f"dates levels must grow and nest: {name_shown(b)} after {name_shown(a)} would give a "
                             f"{a} two parents; each level must be a multiple of the one before")
    return list(levels)


def _label(day: date, level: str) -> str:
    if level == "month":
        return f"{day.year:04d}-{day.month:02d}"
    if level == "quarter":
        return f"{day.year:04d}-Q{(day.month - 1) // 3 + 1}"
    if level == "year":
        return f"{day.year:04d}"
    n = int(level[:-1])
    lo = day.year // n * n
    # The last band ends at 9999, the last year a date holds: 7y's 9996-10002 was a 5-digit label.
    return f"{lo:04d}-{min(lo + n - 1, LAST_YEAR):04d}"


_OUTSIDE_THE_YEARS = "; the dates rule labels years 1 to 9999: clean the values, or give a hierarchy file"


def _not_a_date(at: ValuesAt) -> tuple[str, str]:
    """Why a value that names no day is refused, its fix written in the SQL of the engine in use
    (DuckDB's ``strptime(…)::DATE`` is no query on Spark), over the column's own name and for its
    type: a number's digits read as text (``STRPTIME`` takes no INTEGER), a TIME told it holds no day."""
    if at.column_type is not None and pa.types.is_time(at.column_type):
        fix = (": the column is a TIME, a time of day with no day, and the dates rule labels days: a TIME column "
               "cannot be a dates quasi-identifier; give it a hierarchy file or tree, or read a DATE or TIMESTAMP "
               "column")
        return "that are not dates" + fix, "that is not a date" + fix
    convert = exp.StrToDate(this=_digits_of(exp.column(at.column or "v", quoted=True), at),
                            format=exp.Literal.string("%Y%m%d"))
    mended = at.mended(convert, *_converted_in_python(at), purpose=" for days written 20240517")
    fix = (": the dates rule reads DATE and TIMESTAMP values, or ISO text, a day YYYY-MM-DD alone or followed by a "
           f"time of day (2024-05-17 08:30:00); convert the column {mended}, fix the values, or give a hierarchy file")
    return "that are not dates" + fix, "that is not a date" + fix


def _converted_in_python(at: ValuesAt) -> tuple[str, str]:
    """The conversion of days written yyyymmdd in a DataFrame ``df`` and in an Arrow ``table``, from
    the column's digits as text (a float's through a whole number first: 20240517.0 is no yyyymmdd)."""
    name = at.column or "v"
    number = at.number
    fraction = number is not None and (number.float_sql is not None or number.scale > 0)
    digits = f"df[{name_shown(name)}]" + (".astype('Int64')" if fraction else "") + ".astype('string')"
    pandas = f"df[{name_shown(name)}] = pd.to_datetime({digits}, format='%Y%m%d')"
    text = f"table[{name_shown(name)}]" + (".cast('int64')" if fraction else "") + ".cast('string')"
    arrow = (f"table = table.set_column(table.schema.get_field_index({name_shown(name)}), {name_shown(name)}, "
             f"pyarrow.compute.strptime({text}, format='%Y%m%d', unit='s').cast('date32'))")
    return pandas, arrow


def _digits_of(column: exp.Expression, at: ValuesAt) -> exp.Expression:
    """A column of days written as yyyymmdd, as text for a conversion to read: a whole-number
    column's digits (``CAST(dob AS VARCHAR)``), a float's or a DECIMAL's with a fraction through a
    BIGINT first (``20240517.0`` is no yyyymmdd), text as it is."""
    number = at.number
    if number is not None and (number.float_sql is not None or number.scale > 0):
        column = exp.Cast(this=column, to=exp.DataType(this=exp.DataType.Type.BIGINT, nested=False))
    return at.text_of(column)


def _day_of(text: str, not_a_date: tuple[str, str]) -> date:
    """The day a value's text names, or ``Refused`` saying why not (``not_a_date``, said of many
    values and of one, for text that names no day)."""
    parts = _DATE_TEXT.fullmatch(text)
    if parts is None or (parts["zone"] is not None and parts["zone"] not in _zones()):
        raise Refused(not_a_date[0], one=not_a_date[1])
    year = parts["year"]
    if parts["minus"] or parts["bc"] or parts["bc_last"] or year == "0000":
        raise Refused("before year 1" + _OUTSIDE_THE_YEARS)
    if len(year) > 4:  # DuckDB's '10000-01-01', Spark's '+10000-01-01'
        raise Refused("after year 9999" + _OUTSIDE_THE_YEARS)
    try:
        return date(int(year), int(parts["month"]), int(parts["day"]))
    except ValueError:  # no such day: 2023-02-29
        raise Refused(not_a_date[0], one=not_a_date[1]) from None


@cache
def _zones() -> frozenset[str]:
    """The time zones a value's text may name: the IANA database's, as Python's zoneinfo lists them
    (the system's tz data, else the tzdata package pandas requires), and UTC in any case."""
    return frozenset(zoneinfo.available_timezones() | {"UTC"})


def _in_domain(day: date, domain: tuple[date, date] | None) -> date:
    if domain is not None and not domain[0] <= day <= domain[1]:
        raise Refused(f"outside the declared domain {domain[0]} to {domain[1]}; widen the domain to every day the "
                      "column can hold, or clean the values")
    return day


def dates_hierarchy(values: Sequence[str], levels: Sequence[str] | None = None, name: str = "dates",
                    domain: tuple[date, date] | None = None, at: ValuesAt | None = None,
                    read_as: Sequence[str] | None = None) -> Hierarchy:
    """One row per distinct value: the value, its label at each level, then ``*``. ``domain``: the
    first and last day the column can hold, declared in the spec (model/domains.py); ``at``: the
    column, the source, the rows holding each value and the engine's SQL dialect, for the error
    counting the values the rule cannot label (model/refused_values.py). ``read_as``: each value's
    text to read its day from, when not the value's own (Spark keys an instant by its UTC text; its
    day is the session's: ``Engine.instants_as_written``)."""
    levels = list(DEFAULT_LEVELS) if levels is None else levels
    if not values:
        return Hierarchy((), name)  # refused by validation, as a hierarchy of no leaves
    dated = values if read_as is None else read_as
    months = _plain_days_months(dated, domain)
    if months is None:  # times of day, or values to refuse: read one by one
        months = _months_one_by_one(dated, name, domain, at or ValuesAt())
    widths = [level_months(level) or 0 for level in levels]
    cover = None if domain is None else date_cover(months, widths, domain)
    labels, dense = _levels_by_month(months, levels)
    if len(set(values)) != len(values):  # validation names the repeated value and its rows
        return Hierarchy(LevelRows([list(values), *labels], dense).whole(), name)
    return Hierarchy._built([list(values), *labels], dense, name).built_by("dates", cover)


def _months_one_by_one(values: Sequence[str], name: str, domain: tuple[date, date] | None,
                       at: ValuesAt) -> np.ndarray:
    """Each value's month (year × 12 + month − 1), read value by value; or the error counting the
    values refused for the first reason found (and their rows), naming none."""
    months = np.empty(len(values), dtype=np.int64)
    refusals, not_a_date = Refusals(), _not_a_date(at)
    for i, text in enumerate(values):
        try:
            day = _in_domain(_day_of(text, not_a_date), domain)
        except Refused as why:
            refusals.add(why, i)
            continue
        months[i] = day.year * 12 + day.month - 1
    refusals.raise_first(name, at)
    return months


def _plain_days_months(values: Sequence[str], domain: tuple[date, date] | None) -> np.ndarray | None:
    """Each value's month (year × 12 + month − 1) read by NumPy when every value is a day as a
    DATE prints (``YYYY-MM-DD``, years 1 to 9999, a day the month has) within the domain: as
    ``_day_of`` reads it, without a regular expression and a ``date`` per value (26,645 dates of
    birth: ~0.1 s). None when one is not: the values are then read one by one, and those refused
    counted (``_months_one_by_one``)."""
    if set(map(len, values)) != {10}:
        return None
    points = np.array(values, dtype="<U10").view(np.uint32).reshape(len(values), 10)
    digits = points[:, [0, 1, 2, 3, 5, 6, 8, 9]]
    if not (((digits >= ord("0")) & (digits <= ord("9"))).all() and (points[:, [4, 7]] == ord("-")).all()):
        return None
    try:
        days = np.array(values, dtype="datetime64[D]")  # refuses a day the month lacks (2023-02-29)
    except ValueError:
        return None
    if (days < np.datetime64("0001-01-01")).any():  # year 0000
        return None
    if domain is not None and ((days < np.datetime64(domain[0])) | (days > np.datetime64(domain[1]))).any():
        return None
    return days.astype("datetime64[M]").astype(np.int64) + 1970 * 12


def _levels_by_month(months: np.ndarray, levels: Sequence[str]) -> tuple[list[list[str]], np.ndarray]:
    """Per level above the leaves, its labels in order of first appearance (then the top ``*``), and
    every value's dense codes (the leaves' its position): labelled once per distinct month, not per
    value (26,645 dates of birth: 0.144 → 0.047 s), and spread to the values by their month."""
    month_code, distinct = numbered_as_they_appear(months)
    labels, dense = [], np.zeros((len(months), len(levels) + 2), dtype=np.int64)
    dense[:, 0] = np.arange(len(months))
    firsts = [date(year, month + 1, 1) for year, month in (divmod(m, 12) for m in distinct.tolist())]
    for level, kind in enumerate(levels, start=1):
        numbered: dict[str, int] = {}
        codes = [numbered.setdefault(_label(day, kind), len(numbered)) for day in firsts]
        dense[:, level] = np.array(codes, dtype=np.int64)[month_code]
        labels.append(list(numbered))
    labels.append([TOP_LABEL])
    return labels, dense
