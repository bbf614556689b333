"""The release spec: what to generalize, what to protect, where to read and write.

Specs come from TOML (``load_spec``) or are built in Python (``Spec(...)``). Validation is
pydantic's (one declarative place for types, ranges and defaults); its errors are re-worded
into one ``SpecError`` that names the file and the key path of every problem.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import errno
import hashlib
import json
import math
import numbers
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from sqlclose.errors import HierarchyError, InputError, SpecError
from sqlclose.model.dates import DEFAULT_LEVELS, check_levels
from sqlclose.model.env_refs import ENV_VAR, SPARK_REFERENCE, expand_env
from sqlclose.model.hierarchy import TAB_HINT, Hierarchy, masked_per_level, unnested_widths
from sqlclose.model.plain_values import plain_list, plain_scalar, plain_tree
from sqlclose.model.sizes import checked_size
from sqlclose.model.stand_in import refuse_stand_in_rule_label
from sqlclose.model.text import (
    NAMED_IN_UTF8,
    RENAME_IN_UTF8,
    SHOWN_CHARACTERS,
    clipped,
    escaped_breaks,
    file_sha256,
    name_shown,
    not_finite,
    read_utf8,
    refuse_undecodable_path,
    refuse_undecodable_spark_settings,
    refuse_undecodable_temp_directory,
    shown,
)
from sqlclose.model.toml_leaves import plain_floats, refuse_rewritten_leaves, toml_float, typed

# The distances, named once: Earth Mover's Distances (Li et al.) and, for comparison, two that are not.
EmdDistance = Literal["ordered", "equal", "hierarchical"]
Distance = Literal[EmdDistance, "variational", "kl"]
EMD_DISTANCES: tuple[str, ...] = get_args(EmdDistance)
ALL_DISTANCES: tuple[str, ...] = (*EMD_DISTANCES, "variational", "kl")
# The largest value a distance takes between two distributions: EMD with a ground distance in [0, 1]
# (docs/emd.md) and ½ Σ |p − q| are at most 1. KL has no bound of its own (−log of the table's least
# share), so a KL t is never judged vacuous here.
DISTANCE_BOUNDS: dict[str, float] = {name: 1.0 for name in (*EMD_DISTANCES, "variational")}
NullPolicy = Literal["error", "drop", "value"]



class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, frozen=True)


class QuotesItsValue(ValueError):
    """A problem whose message quotes the value as written: its line adds no "(got …)"."""


class _SpecErrorWhenCalled(type(BaseModel)):  # pydantic's own metaclass, which builds the models
    """A public model built directly (``sqlclose.Spec(k=2, …)``, ``sqlclose.QuasiIdentifier(…)``)
    refuses bad content with ``SpecError`` and the message a dict spec gets (``spec: invalid spec:
    quasi_identifiers.age.bandz: unknown key; did you mean 'bands'?``), as every other entry point
    does; it raised pydantic's ValidationError, in pydantic's words (ninety-sixth round). Only the
    direct call passes here: ``model_validate``, a nested model's validation and ``model_copy``
    never do, so a dict spec's errors are gathered and worded as before, at no cost. The metaclass
    of the models sqlclose exports (``Spec``, ``QuasiIdentifier``, ``Sensitive``, ``HierarchySpec``,
    ``Privacy``); the internal ones (``Source``, ``Output``) are built by code that words their
    ValidationError itself."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except ValidationError as e:
            raise spec_error(e, "spec" if cls is Spec else f"sqlclose.{cls.__name__}", cls) from None


def plain_number(value: Any) -> Any:
    """A number as written: pydantic would read true as 1 and "0.1" as 0.1, and NaN or inf is no
    threshold. Before validation of a numeric field (the field's own type and range follow). A
    number past what a float holds is told as written (``1e400 is not a finite number``), not as the
    inf it was read as."""
    if isinstance(value, bool):
        raise ValueError("give a number, not true or false")
    if isinstance(value, str):
        raise ValueError("give a number, not text: write it without quotes")
    if isinstance(value, float) and not math.isfinite(value):
        raise QuotesItsValue(f"{not_finite(typed(value))}: give a finite number")
    return value


def _whole(number: float) -> bool:
    return isinstance(number, int) or float(number).is_integer()


def _finite(value: Any) -> bool:
    """A finite number as written (not a boolean, not text)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and \
        (isinstance(value, numbers.Integral) or math.isfinite(value))


def one_character(delimiter: str | None) -> str | None:
    """A CSV delimiter is one character (the csv module and DuckDB take no other)."""
    if delimiter is not None and len(delimiter) != 1:
        raise ValueError(f"the delimiter must be one character, such as \";\" or \",\"; {TAB_HINT}")
    return delimiter


HIERARCHY_SOURCES = ("file", "bands", "mask", "dates", "tree", "hierarchy")  # a hierarchy gives exactly one
RULES = ("bands", "mask", "dates")  # built from the column's distinct values
MAX_MASK_LENGTH = 1_000  # characters a mask rule may hide, a level each (a ZIP has 5)
LEAVES = "leaves"  # domain = "leaves": a file's or tree's leaves are the column's domain, not the data's values


def _refuse_unnested_bands(widths: list) -> None:
    """Band widths must nest, each a whole multiple (≥ 2×) of the previous, exactly (as decimals):
    said with the spec, before the source is read, where the rule said it after reading it."""
    pair = unnested_widths([Decimal(str(w)) for w in widths])
    if pair is not None:
        raise ValueError(f"band widths must nest, each a multiple (at least 2×) of the previous: {pair[0]} then "
                         f"{pair[1]} would give a band two parents (e.g. bands = [5, 10, 20])")


class HierarchySpec(_Model, metaclass=_SpecErrorWhenCalled):
    """Where a hierarchy comes from: exactly one of ``file``, ``bands``, ``mask``, ``dates``,
    ``tree`` (or, from Python, a ready ``hierarchy``)."""

    file: Path | None = None
    delimiter: str = ";"
    bands: list[int | float] | None = None  # whole numbers kept whole: exact past 2**53
    origin: int | float = 0.0
    mask: StrictBool | list[int] | None = None
    mask_char: str = "*"
    dates: StrictBool | list[str] | None = None  # day → month → year → 5y → * (model/dates.py)
    tree: dict[str, Any] | None = None
    hierarchy: Hierarchy | None = None
    # What a rule's labels cover, for information loss a report may publish (model/domains.py).
    # bands: [lowest, highest] value; dates: [first, last] day; a file or tree: "leaves" (its leaves are
    # the column's domain, not read from the data)
    domain: list[Any] | str | None = None
    alphabet: str | None = None  # mask: the characters codes are made of
    length: int | None = None  # mask: the codes' length, so its levels follow from the spec alone

    @model_validator(mode="before")
    @classmethod
    def _plain_values(cls, value: Any) -> Any:
        """numpy values and arrays, ranges (from Python: ``df.age.unique()``) as the plain values a
        TOML spec holds, before any check: pydantic kept a tree's and a domain's as given, and the
        spec's hash stopped with a bare TypeError after the data was read (model/plain_values.py)."""
        if not isinstance(value, dict):
            return value
        return {key: _plain_field(key, item) for key, item in value.items()}

    @field_validator("tree", mode="before")
    @classmethod
    def _plain_tree(cls, tree: Any) -> Any:
        return plain_tree(tree) if isinstance(tree, Mapping) else tree

    @field_validator("bands", mode="before")
    @classmethod
    def _band_widths(cls, widths: Any) -> Any:
        if isinstance(widths, list) and (not widths or not all(_finite(w) and w > 0 for w in widths)):
            raise ValueError("band widths must be finite positive numbers, each a multiple of the previous "
                             "(e.g. bands = [5, 10, 20])")
        if isinstance(widths, list):
            _refuse_unnested_bands(widths)
        return widths

    @field_validator("origin", mode="before")
    @classmethod
    def _finite_origin(cls, origin: Any) -> Any:
        if not _finite(origin):
            raise ValueError("origin must be a finite number: where the first band starts (e.g. origin = 0)")
        return origin

    @field_validator("length", mode="before")
    @classmethod
    def _whole_length(cls, length: Any) -> Any:
        if length is not None and (not isinstance(length, int) or isinstance(length, bool) or length < 1):
            raise ValueError(f"length must be a whole number of characters, at least 1 (e.g. length = 5 for "
                             f"ZIP codes); got {shown(length)}")
        if length is not None and length > MAX_MASK_LENGTH:  # its levels were listed whole: out of memory
            raise ValueError(f"length must be at most {MAX_MASK_LENGTH} characters (a mask has a level per "
                             f"character); got {length}")
        return length

    @field_validator("delimiter")
    @classmethod
    def _one_character(cls, delimiter: str) -> str:
        return one_character(delimiter)

    @field_validator("mask", "dates", mode="before")
    @classmethod
    def _true_or_a_list(cls, value: Any, info: ValidationInfo) -> Any:
        """true or a list (a tuple from Python), nothing else: pydantic read mask = 1 and mask = "yes"
        as true."""
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            return value
        if info.field_name == "mask":
            raise ValueError("give true (a character more masked at each level) or the characters masked at each "
                             "level, e.g. mask = [1, 3, 5]")
        raise ValueError('give true (day, month, year, 5 years) or the levels, e.g. dates = ["month", "year"]')

    @field_validator("dates")
    @classmethod
    def _date_levels(cls, value: bool | list[str] | None) -> bool | list[str] | None:
        return check_levels(value) if isinstance(value, list) else value

    @model_validator(mode="after")
    def _exactly_one_source(self) -> HierarchySpec:
        given = [k for k in HIERARCHY_SOURCES if getattr(self, k) not in (None, False)]
        if len(given) != 1:
            raise ValueError(
                "give exactly one hierarchy source: file = \"x.csv\", bands = [5, 10], mask = true, dates = true, "
                f"or tree = {{…}} (got {', '.join(given) or 'none'})"
            )
        return self

    @model_validator(mode="after")
    def _keys_fit_the_kind(self) -> HierarchySpec:
        """A key of another kind of hierarchy was accepted and ignored (``origin`` beside ``dates``,
        ``delimiter`` beside ``bands``): the user asked for something the hierarchy does not do."""
        for key, kind in (("origin", "bands"), ("mask_char", "mask"), ("delimiter", "file")):
            # its default is what a dumped spec holds for every kind (model_dump): only another value asks
            if key in self.model_fields_set and getattr(self, key) != type(self).model_fields[key].default \
                    and self.kind != kind:
                hint = ("; the dates rule's bands of N years start at multiples of N (1980-1984)"
                        if key == "origin" and self.kind == "dates" else "")
                raise ValueError(f"{key} is declared for a {kind} {'rule' if kind != 'file' else 'hierarchy'}, "
                                 f"not {self.kind}{hint}")
        if isinstance(self.mask, list) and self.length is None and (any(step < 1 for step in self.mask)
                                             or any(b <= a for a, b in zip(self.mask, self.mask[1:]))):
            raise ValueError(f"mask steps (the characters masked at each level) must be at least 1 and increase "
                             f"strictly; got mask = {shown(self.mask)} (e.g. mask = [1, 3, 5])")
        return self

    @model_validator(mode="after")
    def _domain_fits_the_rule(self) -> HierarchySpec:
        if isinstance(self.domain, str):
            _refuse_leaves_misdeclared(self.domain, self.kind)
        elif self.domain is not None:
            if self.kind not in ("bands", "dates"):
                raise ValueError(f"domain is declared for bands and dates rules, not {self.kind}"
                                 + (": a mask declares its alphabet (e.g. alphabet = \"0123456789\")"
                                    if self.kind == "mask" else f"; a {self.kind} whose leaves are the column's "
                                    "domain declares domain = \"leaves\""))
            self.declared_domain  # noqa: B018 - parsed here to refuse a bad one with the spec
        if self.alphabet is not None:
            if self.kind != "mask":
                raise ValueError(f"alphabet is declared for a mask rule, not {self.kind}"
                                 + (": declare domain = [lowest, highest] instead" if self.kind in RULES else ""))
            if not self.alphabet or len(set(self.alphabet)) != len(self.alphabet) or self.mask_char in self.alphabet:
                raise ValueError(f"alphabet must list distinct characters, without the mask character "
                                 f"{self.mask_char!r}; got {shown(self.alphabet)} (e.g. alphabet = \"0123456789\")")
        if self.length is not None:
            if self.kind != "mask":
                raise ValueError(f"length is declared for a mask rule, not {self.kind}")
            if masked_per_level(self.mask_steps, self.length) is None:
                raise ValueError(f"mask steps must increase strictly within 1..{self.length} (length, the "
                                 f"characters masked at each level); got mask = {shown(self.mask)}")
        return self

    @property
    def kind(self) -> str:
        return next(k for k in HIERARCHY_SOURCES if getattr(self, k) not in (None, False))

    @property
    def date_levels(self) -> list[str]:
        """The dates rule's levels below the top: the spec's, or the default (``dates = true``)."""
        return list(DEFAULT_LEVELS) if self.dates is True else list(self.dates or [])

    @property
    def whole_bands(self) -> bool:
        """Whether the band widths and origin are all whole numbers (bands may then be labelled as
        integers, ``35-39``); a whole number past a float's range is whole too."""
        return all(_whole(w) for w in self.bands or []) and _whole(self.origin)

    @property
    def mask_steps(self) -> list[int] | None:
        """The characters a mask hides at each level: the spec's, one more per level up to the
        declared length (``mask = true``), or None when only the codes can tell."""
        if isinstance(self.mask, list):
            return [int(m) for m in self.mask]
        return None if self.length is None else list(range(1, self.length + 1))

    @property
    def leaves_declared(self) -> bool:
        """Whether the spec declares the hierarchy's leaves the column's domain (``domain = "leaves"``)."""
        return self.domain == LEAVES

    @property
    def declared_domain(self) -> tuple[float, float] | tuple[_dt.date, _dt.date] | None:
        """``domain`` read for the rule: two finite numbers for bands, two days for dates."""
        if self.domain is None or isinstance(self.domain, str):
            return None
        example = "[0, 120]" if self.kind == "bands" else "[\"1900-01-01\", \"2025-12-31\"]"
        if len(self.domain) != 2:
            raise ValueError(f"domain must be [lowest, highest], e.g. domain = {example}; got {shown(self.domain)}")
        ends = [_domain_end(v, self.kind, example) for v in self.domain]
        if not ends[0] < ends[1]:
            raise ValueError(f"domain must be [lowest, highest] with lowest < highest, e.g. domain = {example}; "
                             f"got {shown(self.domain)}")
        return ends[0], ends[1]


_LIST_KEYS = ("bands", "mask", "dates", "domain")


def _plain_field(key: str, value: Any) -> Any:
    """One key of a hierarchy's table with its numpy values and ranges made plain (``_plain_values``);
    a ready hierarchy as given."""
    if key in ("tree", "hierarchy"):  # a tree: _plain_tree, its leaves' errors named under tree
        return value
    # only a key that takes a list makes an array one: a file = df.age.unique() is named as an array, not quoted
    return plain_list(plain_scalar(value)) if key in _LIST_KEYS else plain_scalar(value)


def _refuse_leaves_misdeclared(domain: str, kind: str) -> None:
    """``domain`` as text is ``"leaves"``, and only for a file, a tree or a ready hierarchy: a rule's
    leaves are the column's values, read from the data, so declaring them its domain would publish
    counts of those values."""
    if domain != LEAVES:
        raise ValueError(f"domain must be \"leaves\" (a hierarchy file or tree whose leaves are the column's "
                         f"domain) or [lowest, highest] (bands, dates); got {shown(domain)}")
    if kind in RULES:
        instead = ("declare its alphabet (e.g. alphabet = \"0123456789\")" if kind == "mask"
                   else "declare domain = [lowest, highest] instead")
        raise ValueError(f"domain = \"leaves\" declares a hierarchy file's or tree's leaves the column's domain; "
                         f"a {kind} rule's leaves are the column's values, read from the data: {instead}")


_DAY_TEXT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _domain_end(value: Any, kind: str, example: str) -> float | int | _dt.date:
    """One end of a declared domain: a finite number (bands) or a day (dates: a TOML date or ISO text)."""
    if kind == "bands":  # an int or a float (a numpy number made one): a Fraction or a timedelta64 the hash refused
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(value):
            raise ValueError(f"a bands domain holds two finite numbers, e.g. domain = {example}; got {shown(value)}")
        return value  # an integer stays exact: a bound past 2**53 is the one the spec writes
    if isinstance(value, _dt.datetime):  # before date, its base class: its time and offset were dropped unsaid
        raise ValueError(f"a dates domain holds two days (YYYY-MM-DD), e.g. domain = [1900-01-01, 2025-12-31] "
                         f"(TOML dates) or {example}; got {value.isoformat()}, a date and time: a day has no time "
                         "of day or offset (from Python, give a datetime.date)")
    if isinstance(value, _dt.date):
        return value
    try:  # fromisoformat alone also reads '2025-W52' (a Monday) and '20251231'
        if not _DAY_TEXT.fullmatch(str(value)):
            raise ValueError(value)
        return _dt.date.fromisoformat(str(value))
    except ValueError:
        raise ValueError(f"a dates domain holds two days (YYYY-MM-DD), e.g. domain = {example}; "
                         f"got {shown(value)}") from None


def _coerce_hierarchy(value: Any) -> Any:
    """Shorthands: a path string is a file; a Hierarchy is itself."""
    if isinstance(value, (str, Path)):
        return {"file": value}
    if isinstance(value, Hierarchy):
        return {"hierarchy": value}
    return value


class QuasiIdentifier(HierarchySpec):
    """A quasi-identifier column and its hierarchy (fields of HierarchySpec, flattened)."""

    nulls: NullPolicy = "error"
    null_value: str = "NULL"

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return _coerce_hierarchy(value)

    @model_validator(mode="after")
    def _stand_in_no_rule_label(self) -> QuasiIdentifier:
        if self.nulls == "value" and self.kind in RULES:
            refuse_stand_in_rule_label(self, self.null_value)
        return self


class Recursive(_Model):
    """Recursive (c, l)-diversity: in every class r1 < c · (r_l + … + r_m)."""

    c: float = Field(gt=0)
    l: int = Field(ge=1)  # noqa: E741 - the papers' name

    _numbers = field_validator("c", "l", mode="before")(plain_number)

    @property
    def vacuous(self) -> bool:
        """(c, 1): r1 < c · (r1 + … + r_m), the class size: any class passes when c > 1 (r1 ≤ size),
        and a one-valued class fails when c ≤ 1. With l ≥ 2 a one-valued class fails."""
        return self.l == 1 and self.c > 1


class Sensitive(_Model, metaclass=_SpecErrorWhenCalled):
    """A sensitive column and the privacy models it must satisfy (all of those given).

    t-closeness: ``t`` with a ``distance`` (EMD: ordered, equal, hierarchical; for comparison,
    non-EMD: variational, kl). l-diversity: ``distinct_l``, ``entropy_l``, ``recursive = {c, l}``.
    p-sensitivity: ``p`` distinct values per class. A ``hierarchy`` is needed for hierarchical
    EMD and used by the similarity audit of ``sqlclose check``.
    """

    distance: Distance = "equal"
    t: float | None = Field(default=None, ge=0.0)
    hierarchy: HierarchySpec | None = None
    distinct_l: int | None = Field(default=None, ge=1)
    entropy_l: float | None = Field(default=None, ge=1.0)
    recursive: Recursive | None = None
    p: int | None = Field(default=None, ge=1)
    nulls: NullPolicy = "error"
    null_value: str = "NULL"

    @field_validator("hierarchy", mode="before")
    @classmethod
    def _hierarchy_shorthand(cls, value: Any) -> Any:
        return _coerce_hierarchy(value)

    _numbers = field_validator("t", "distinct_l", "entropy_l", "p", mode="before")(plain_number)

    @field_validator("t")
    @classmethod
    def _t_in_range(cls, t: float | None, info: ValidationInfo) -> float | None:
        distance = info.data.get("distance", "equal")
        if t is not None and t > DISTANCE_BOUNDS.get(distance, math.inf):
            raise ValueError(f"t must be in [0, 1] for the {distance} distance (KL alone is unbounded)")
        return t

    @model_validator(mode="after")
    def _consistent(self) -> Sensitive:
        if self.distance == "hierarchical" and self.hierarchy is None:
            raise ValueError("distance = \"hierarchical\" needs a hierarchy (e.g. hierarchy = \"disease.csv\")")
        if self.distance == "ordered" and self.nulls == "value":
            raise ValueError("nulls = \"value\" cannot place a NULL in an ordered domain; use \"drop\" or \"error\"")
        if self.hierarchy is not None and self.hierarchy.kind in RULES:
            raise ValueError("a sensitive hierarchy must list its values (file, tree or hierarchy), not bands, mask "
                             "or dates")
        if self.hierarchy is not None and self.hierarchy.domain is not None:
            raise ValueError("domain is declared on a quasi-identifier's hierarchy (for the information loss a "
                             "report publishes); a sensitive column's hierarchy has none: remove it")
        return self

    @property
    def models(self) -> list[str]:
        """The privacy models asked for, by name."""
        return [MODEL_NAMES[key] for key in self.model_keys]

    @property
    def model_keys(self) -> list[str]:
        """The keys of the models asked for (t, distinct_l, entropy_l, recursive, p)."""
        return [key for key in MODEL_NAMES if getattr(self, key) is not None]

    def vacuous(self, key: str) -> bool:
        """Whether the model ``key`` holds for every class of any table, by its parameters alone:
        every class has a value (distinct_l, p ≤ 1) and entropy ≥ 0 = log 1 (entropy_l ≤ 1); a
        distance is never above its bound (t ≥ 1, KL aside); recursive (c, 1) with c > 1."""
        value = getattr(self, key)
        if value is None:
            return False
        if key == "t":
            return value >= DISTANCE_BOUNDS.get(self.distance, math.inf)
        if key == "recursive":
            return value.vacuous
        return value <= 1

    @property
    def protects_nothing(self) -> bool:
        """Every model asked for holds for any table (see ``vacuous``)."""
        return all(self.vacuous(key) for key in self.model_keys)


MODEL_NAMES = {"t": "t-closeness", "distinct_l": "distinct l-diversity", "entropy_l": "entropy l-diversity",
               "recursive": "recursive (c,l)-diversity", "p": "p-sensitivity"}
# What makes each model able to fail (for the message that refuses a vacuous one).
_TIGHTER = {"t": "lower t below 1", "distinct_l": "raise distinct_l to 2 or more",
            "entropy_l": "raise entropy_l above 1", "recursive": "raise recursive's l to 2 or more (or lower c to 1 "
            "or less)", "p": "raise p to 2 or more"}


class Privacy(_Model, metaclass=_SpecErrorWhenCalled):
    """The requirement. ``k`` has no default: a spec that states no requirement releases nothing."""

    k: int = Field(ge=1)
    suppression: float = Field(default=0.0, ge=0.0, lt=1.0)

    _numbers = field_validator("k", "suppression", mode="before")(plain_number)


CSV_TYPES = ("VARCHAR", "BIGINT", "DOUBLE", "DECIMAL", "DATE", "TIMESTAMP", "TIME")
# DECIMAL(precision, scale), as a spec writes it ("DECIMAL(12, 2)", a money column's; plain DECIMAL
# is DECIMAL(18,3)) and as DuckDB names it ("DECIMAL(12,2)").
DECIMAL_TYPE = re.compile(r"DECIMAL\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)")
MAX_DECIMAL_DIGITS = 38  # the widest DECIMAL both engines hold
GLOB_CHARACTERS = frozenset("*?[]{}")


def _csv_type(column: str, name: str) -> str:
    """A declared CSV column type, spelled as the engines take it: one of ``CSV_TYPES``, or
    DECIMAL(precision, scale) with 1 ≤ precision ≤ 38 and scale ≤ precision."""
    upper = name.strip().upper()
    if upper == "DECIMAL":
        return "DECIMAL(18,3)"  # DuckDB's own; Spark's plain DECIMAL is (10,0), which rounds 3000.5 to 3001
    if upper in CSV_TYPES:
        return upper
    if decimal := DECIMAL_TYPE.fullmatch(upper):
        precision, scale = (int(g) for g in decimal.groups())
        if 1 <= precision <= MAX_DECIMAL_DIGITS and scale <= precision:
            return f"DECIMAL({precision},{scale})"
        raise ValueError(f"column {name_shown(column)}: type {name_shown(name)} needs 1 <= precision <= "
                         f"{MAX_DECIMAL_DIGITS} and scale <= precision, e.g. \"DECIMAL(12, 2)\"")
    raise ValueError(f"column {name_shown(column)}: type {name_shown(name)} is not one of {', '.join(CSV_TYPES)} or "
                     "DECIMAL(precision, scale)")


WAREHOUSE_QUOTES = '"`'  # what a warehouse's SQL quotes a name's part with (warehouse_table_parts)
WAREHOUSE_QUOTING = ("a part holding a dot is written in double quotes or backticks, a quote inside doubled "
                     "(analytics.\"peo.ple\", `my-project`.analytics.`peo.ple`, \"a\"\"b\")")
WarehouseDialect = Literal["duckdb", "spark", "postgres", "snowflake", "bigquery", "trino"]
WAREHOUSE_DIALECTS: tuple[str, ...] = get_args(WarehouseDialect)


class Source(_Model):
    """A table on disk: Parquet, CSV, or a DuckDB database file (then ``table`` is required,
    schema-qualified allowed: ``main.people``) — or a SQL ``query`` — or, with ``format =
    "warehouse"``, a table in a SQL warehouse that sqlclose never reads itself (``table``: its
    dotted name, no ``path``; ``dialect``: the warehouse's SQL; ``columns``: the table's columns,
    which the release query names; see docs/warehouse.md).

    A path is literal: ``data[1].csv`` is that one file. ``glob = true`` makes it a pattern. CSV
    columns are read as the text they are (no sniffing of booleans or dates); ``types`` gives a
    column a type, ``nulls`` the strings that mean NULL, ``encoding`` the file's encoding. On a
    warehouse source ``types`` gives an ordered sensitive column its type in a CSV histogram.

    ``query``: one SELECT (DuckDB's SQL; anything else is refused), run once, read-only, into a
    temporary table that the search, the release and the checks all read. With ``path`` naming a
    DuckDB database, the query reads that database's tables; without a path, it reads files
    (``FROM 'people.parquet'``, ``read_csv('x.csv', columns = {…})``), relative names looked up in ``folder``
    (default: the spec file's folder).
    """

    path: Path | None = None
    query: str | None = None
    folder: Path | None = None
    table: str | None = None
    delimiter: str | None = None
    format: Literal["parquet", "csv", "duckdb", "warehouse"] | None = None
    dialect: WarehouseDialect | None = None
    columns: list[str] | None = None
    glob: StrictBool = False
    encoding: Literal["utf-8", "utf-16", "latin-1"] = "utf-8"
    nulls: list[str] = Field(default_factory=lambda: [""])
    types: dict[str, str] = Field(default_factory=dict)

    _one_character = field_validator("delimiter")(one_character)

    @field_validator("types")
    @classmethod
    def _known_types(cls, types: dict[str, str]) -> dict[str, str]:
        return {column: _csv_type(column, name) for column, name in types.items()}

    @field_validator("query")
    @classmethod
    def _one_select(cls, query: str | None) -> str | None:
        if query is not None:
            from sqlclose.model import source_query  # sqlglot loads only for a spec with a query

            source_query.check(query)
        return query

    @property
    def is_pattern(self) -> bool:
        """Whether the path is read as a glob pattern (only when asked)."""
        return self.glob and any(ch in GLOB_CHARACTERS for ch in str(self.path))

    @property
    def kind(self) -> str:
        if self.query is not None:
            return "query"
        if self.format:
            return self.format
        if self.path is None:
            raise ValueError("give path = \"…\" (a file or a DuckDB database), query = \"SELECT …\", or format = "
                             "\"warehouse\" with table = \"schema.table\"")
        if self.path.is_dir():
            return "parquet"
        kind = suffix_kind(self.path)
        if kind is not None:
            return kind
        if self.path.suffix.lower() in (".gz", ".zst") and suffix_kind(self.path.with_suffix("")) == "csv":
            raise ValueError(f"{self.path.name} is a compressed CSV, which [source] path does not read: decompress "
                             f"it, or read it in a [source] query, read_csv('{self.path.name}', columns = {{…}})")
        raise ValueError(f"cannot tell the format of {self.path}; set format = \"parquet\", \"csv\" or \"duckdb\"")

    @model_validator(mode="after")
    def _table_for_duckdb(self) -> Source:
        kind = self.kind
        if kind == "query":
            if self.path is not None and (self.format or suffix_kind(self.path)) != "duckdb":
                raise ValueError("with a query, path names the DuckDB database it reads (.duckdb); files are named "
                                 "in the query itself (FROM 'people.parquet')")
            if self.table or self.glob or self.delimiter or self.types or self.nulls != [""] or \
                    self.encoding != "utf-8" or self.dialect is not None or self.columns is not None:
                raise ValueError("a query source takes path (a DuckDB database) and folder only; read files with "
                                 "options inside the query (read_csv('x.csv', delim = ';', columns = {…}))")
            return self
        if self.folder is not None:
            raise ValueError("folder applies to a query source (where the files it names are looked up)")
        if kind == "warehouse":
            return self._warehouse_table()
        if self.dialect is not None or self.columns is not None:
            raise ValueError("dialect and columns apply to a warehouse source (format = \"warehouse\") only")
        if kind == "duckdb" and not self.table:
            raise ValueError("a DuckDB database source needs table = \"name\"")
        if kind == "duckdb":
            table_parts(self.table)
        if kind != "duckdb" and self.table:
            raise ValueError(f"table = {name_shown(self.table)} only applies to DuckDB database sources")
        if kind == "duckdb" and self.glob:
            raise ValueError("glob = true applies to Parquet and CSV files, not to a DuckDB database")
        if kind != "csv" and (self.types or self.nulls != [""] or self.encoding != "utf-8"):
            raise ValueError("types, nulls and encoding apply to CSV sources only")
        return self

    def _warehouse_table(self) -> Source:
        if self.path is not None or self.glob or self.delimiter is not None:
            raise ValueError("a warehouse source is a table, not a file: give table = \"schema.table\" and no path, "
                             "glob or delimiter")
        # types: an ordered sensitive column's type in a CSV histogram (histogram.check_warehouse_spec)
        if self.nulls != [""] or self.encoding != "utf-8":
            raise ValueError("nulls and encoding apply to CSV sources only (a warehouse's CSV histogram reads an "
                             "empty field as NULL, as UTF-8)")
        warehouse_table_parts(self.table or "")
        if self.columns is not None and len(set(self.columns)) != len(self.columns):
            raise ValueError("columns names a column more than once")
        return self

    @property
    def table_parts(self) -> list[str]:
        """A warehouse table's name split at its dots outside quotes (``warehouse_table_parts``):
        [catalog, schema, table] (or fewer)."""
        return warehouse_table_parts(self.table or "")


def warehouse_table_parts(table: str) -> list[str]:
    """A warehouse ``[source] table`` split as the warehouse's SQL splits a name, at the dots outside
    quotes (``split_name``): double quotes (Postgres, Snowflake, Trino, DuckDB) or backticks (BigQuery,
    Spark), either whatever the dialect, so a part may hold a dot (``analytics."peo.ple"``). It was
    split at every dot, and a quoted part refused (the SQL would have named schema '"peo' and table
    'ple"'). A part not quoted is as written, a quote inside it a character of the name (``peo"ple``).
    ValueError, naming the table and what to write, for a quote left open or followed by text, a part
    not quoted that ends with a quote or is bracketed (T-SQL's quoting, which no dialect here takes),
    an empty part, or more than three."""
    try:
        split = split_name(table, WAREHOUSE_QUOTES, WAREHOUSE_QUOTING)
    except ValueError as e:
        raise ValueError(f"table = {name_shown(table)}: the name {e}") from None
    parts = [part for part, _ in split]
    if not table or not all(part.strip() for part in parts) or len(parts) > 3:
        raise ValueError("a warehouse source needs table = \"[catalog.][schema.]table\" (1 to 3 dot-separated "
                         f"names; got {name_shown(table)})")
    for part, quoted in split:
        end = part.rstrip()[-1:]
        if not quoted and end and end in WAREHOUSE_QUOTES:  # ana.peo.ple": named with its quote, its dots split
            raise ValueError(f"table = {name_shown(table)}: the part {name_shown(part)} ends with {QUOTE_NAMES[end]} "
                             f"it does not open (a quote opens a part before its first character): {WAREHOUSE_QUOTING}")
        if not quoted and (part.lstrip()[:1] == "[" or end == "]"):
            raise ValueError(f"table = {name_shown(table)}: the part {name_shown(part)} is in brackets, which quote no "
                             f"name in the dialects sqlclose writes (T-SQL's): {WAREHOUSE_QUOTING}")
    return parts


def suffix_kind(path: Path) -> str | None:
    """The source format ``path``'s suffix names (None: none)."""
    suffix = path.suffix.lower()
    for kind, suffixes in (("parquet", (".parquet", ".pq")), ("csv", (".csv", ".tsv", ".txt")),
                           ("duckdb", (".duckdb", ".db", ".ddb"))):
        if suffix in suffixes:
            return kind
    return None


OutputFormat = Literal["parquet", "parquet-folder", "csv", "duckdb", "sql"]
OUTPUT_SUFFIXES: dict[str, tuple[str, ...]] = {
    "parquet": (".parquet", ".pq"), "csv": (".csv",), "duckdb": (".duckdb", ".db", ".ddb"),
    "sql": (".sql",),  # the warehouse path's release query (sqlclose anonymize --histogram)
    "parquet-folder": ("",)}
_COMPRESSION_SUFFIXES = (".gz", ".zst", ".bz2", ".xz", ".zip", ".lz4")
_NAMED = {"parquet": "a Parquet file", "csv": "a CSV file", "duckdb": "a DuckDB database", "sql": "a release query",
          "parquet-folder": "a Parquet folder (no suffix)"}


class Output(_Model):
    """Where the release goes. ``format`` is told by the path when not given: ``x.parquet`` a
    Parquet file, ``x.csv`` CSV, ``x.duckdb`` a table (``table``, schema-qualified allowed) in a
    DuckDB database, a path without a suffix a Parquet folder (optionally ``partition_by``
    released columns). A given format must agree with a suffix that names a format (``x.csv`` is no
    Parquet file); a path whose suffix names none (a dated folder ``nightly.2026-11-30``) takes the
    format given."""

    path: Path
    report: Path | None = None
    overwrite: StrictBool = False
    format: OutputFormat | None = None
    table: str | None = None
    partition_by: list[str] = Field(default_factory=list)

    @property
    def kind(self) -> str:
        """The output format: the one given, else the one the path's suffix names."""
        if self.format:
            return self.format
        return output_kind(self.path)

    @model_validator(mode="after")
    def _format_fits(self) -> Output:
        if self.path.suffix.lower() in _COMPRESSION_SUFFIXES:  # its readers would unpack what is not packed
            # Told before the format: "cannot tell the format of x.csv.gz" sent users to --format first.
            inner = self.format or (_kind_of_suffix(Path(self.path.stem)) if Path(self.path.stem).suffix else None)
            raise ValueError(f"the output path {name_shown(self.path.name)} names a compressed file, and sqlclose "
                             f"writes {_NAMED[inner] if inner else 'its releases'} uncompressed: name it without "
                             f"{name_shown(self.path.suffix)} (e.g. {name_shown(self.path.stem)}) and compress the "
                             "release after it is written, if you must")
        kind = self.kind
        told = _kind_of_suffix(self.path)
        if self.format and told is not None and told != kind:
            raise ValueError(f"format = {name_shown(kind)} does not fit the path {name_shown(self.path.name)}, which "
                             f"names {_NAMED[told]}: name it with "
                             f"{' or '.join(repr(s) for s in OUTPUT_SUFFIXES[kind] if s) or 'no suffix'}")
        if kind == "sql" and told is None:  # the release query is written to a .sql path only (verify: x.verify.sql)
            raise ValueError(f"format = 'sql' is the warehouse path's release query (sqlclose anonymize --histogram), "
                             f"written to a .sql path only: name it {name_shown(self.path.name + '.sql')}")
        if (kind == "duckdb") != (self.table is not None):
            raise ValueError("a DuckDB database output needs table = \"name\"" if kind == "duckdb"
                             else f"table = {name_shown(self.table)} only applies to a DuckDB database output")
        if self.table is not None:  # '' failed after the search (review, 63rd round)
            table_parts(self.table)
        if self.partition_by and kind != "parquet-folder":
            raise ValueError("partition_by applies to a Parquet folder output (a path without a suffix, or "
                             "format = \"parquet-folder\")")
        _refuse_repeated_partitions(self.partition_by)
        return self

    @property
    def report_path(self) -> Path:
        return self.report or default_report_path(self.path, self.table)


def _refuse_repeated_partitions(columns: list[str]) -> None:
    """A column given twice (or in two cases: the engines' names ignore case) was refused by
    DuckDB after the whole search, as an internal error."""
    seen: dict[str, str] = {}
    for column in columns:
        earlier = seen.get(column.casefold())
        if earlier is not None:
            twice = (f"{name_shown(column)} twice" if earlier == column
                     else f"{name_shown(earlier)} and {name_shown(column)}, one column to the engines")
            raise ValueError(f"partition_by names {twice}: give each partition column once")
        seen[column.casefold()] = column


def output_kind(path: Path) -> str:
    """The output format a path's suffix names (no suffix: a Parquet folder)."""
    kind = _kind_of_suffix(path)
    if kind is None:
        raise ValueError(f"cannot tell the output format of {name_shown(path.name)}: name it .parquet, .csv or "
                         ".duckdb, give no suffix for a Parquet folder, or set format = \"parquet-folder\" (--format; "
                         "or \"parquet\", \"csv\", \"duckdb\") to write it under this name")
    return kind


def _kind_of_suffix(path: Path) -> str | None:
    """The output format ``path``'s suffix names; None for a suffix that names none (``.2026-11-30``)."""
    suffix = path.suffix.lower()
    return next((kind for kind, suffixes in OUTPUT_SUFFIXES.items() if suffix in suffixes), None)


def default_report_path(path: Path, table: str | None = None) -> Path:
    """The report sits beside the release: ``<release>.report.json`` (for a table in a DuckDB
    database, ``<database>.<table>.report.json``: one database holds many releases; the table as
    ``table_identity`` gives it, so that one table has one report however it is spelled; a '/' in
    it, which no file name can hold, written ``%2F``, and so ``%`` itself ``%25``)."""
    named = table_identity(table).replace("%", "%25").replace("/", "%2F") if table else None
    return path.with_name(path.name + (f".{named}" if named else "") + ".report.json")


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def catalog_name(name: str) -> str:
    """A DuckDB schema or table name as its catalog matches it: ASCII letters in any case
    (``People`` is ``people``; ``Äpfel`` is not ``äpfel``)."""
    return name.translate(_ASCII_LOWER)


NAME_QUOTING = ("a part holding a dot is written in double quotes, a quote inside doubled "
                "(\"a.b\", main.\"a.b\", \"a\"\"b\")")


def table_parts(table: str) -> tuple[str, str]:
    """A DuckDB database's table as given, ``[schema.]name``: (schema, name), ``main`` when none.
    Split by ``dotted_parts``. ValueError saying what to write otherwise: a part empty, a quote not
    closed or followed by text, more than two parts (a database file is one catalog, whatever name
    a session attaches it under: ``main.a.b`` was meant as ``main."a.b"`` or ``"main.a".b``, and
    ``hr.main.t`` as ``main.t``)."""
    try:
        parts = dotted_parts(table)
    except ValueError as e:
        raise ValueError(f"table = {name_shown(table)} {e}") from None
    if any(not part.strip() for part in parts):
        raise ValueError(f"table = {name_shown(table)} names no table: give \"name\" or \"schema.name\", neither part "
                         "empty")
    if len(parts) > 2:
        raise ValueError(f"table = {name_shown(table)} names {len(parts)} parts, and a database file's table is named "
                         f"by \"name\" or \"schema.name\" (the file is its catalog): {NAME_QUOTING}; e.g. "
                         f"{_readings(parts)}")
    return ("main", parts[0]) if len(parts) == 1 else (parts[0], parts[1])


def _readings(parts: list[str]) -> str:
    """What a name of more than two parts may have meant, each typed as ``table_parts`` reads it:
    a dot inside the schema's name or the table's, or, of three, a catalog before them (DuckDB's
    ``catalog.schema.table``), which the database's path names instead."""
    first, rest = (parts[0], ".".join(parts[1:])), (".".join(parts[:-1]), parts[-1])
    said = (f"{typed_name(first)} (table {name_shown(first[1])} of schema {name_shown(first[0])}) or "
            f"{typed_name(rest)} (table {name_shown(rest[1])} of schema {name_shown(rest[0])})")
    if len(parts) == 3:
        said += (f", or {typed_name(parts[1:])} if {name_shown(parts[0])} is the database's catalog (DuckDB's "
                 "catalog.schema.table): the path names the database, so the name leaves its catalog out")
    return said


def dotted_parts(table: str) -> list[str]:
    """A table's name split at its dots outside double quotes; a part in double quotes is SQL's
    quoted identifier, and may hold a dot (``"a.b"``, ``s."a.b"``, ``"my.schema"."a.b"``; a quote
    inside doubled, ``"a""b"``), and spaces (tabs, line breaks) before its opening quote and after its
    closing one are no part of the name, as in SQL (``' "a.b" '``, ``'main. "a.b"'``); any other part is
    the text up to the next dot, as written, spaces too (``s.t``: schema s, table t; an empty part is
    kept, for the caller to refuse). Not split by sqlglot's table parser: it drops a leading dot, an
    empty part and a comment, and trims spaces (``.people`` and ``a..b`` read as tables). ValueError
    (a phrase, its subject the name) for a quote not closed or followed by text."""
    return [part for part, _ in split_name(table)]


def split_name(table: str, quotes: str = '"', quoting: str = NAME_QUOTING) -> list[tuple[str, bool]]:
    """``dotted_parts``, each part with whether it was quoted. ``quotes``: the characters that open
    (and close) a quoted part (Spark's names take backticks as well: ``prepare/spark_tables``);
    ``quoting``: what to write, which ends a ValueError's phrase."""
    parts: list[tuple[str, bool]] = []
    at = 0
    while True:
        opening = _past_spaces(table, at)
        if opening < len(table) and table[opening] in quotes:
            part, at = _quoted_part(table, opening, quoting)
            parts.append((part, True))
            after = _past_spaces(table, at)
            if after < len(table) and table[after] != ".":
                raise ValueError(f"goes on after its quoted part {name_shown(table[:at])} with "
                                 f"{name_shown(table[at:])}, where a dot or the end belongs: {quoting}")
            at = after
        else:
            dot = table.find(".", at)
            end = len(table) if dot < 0 else dot
            parts.append((table[at:end], False))
            at = end
        if at >= len(table):
            return parts
        at += 1  # past the dot: a name ending in one has an empty last part


def source_table_parts(name: Any, source: str, naming: str, quotes: str = '"', quoting: str = NAME_QUOTING,
                       refuse_stray: bool = False) -> list[str]:
    """The parts, ``[catalog,] [schema,] table``, of the table a ``(connection, name)`` source
    names (a DuckDB connection's, a Spark session's): a text split at its dots outside ``quotes``
    (``split_name``), or a tuple (list) of parts taken as they are (a part may then hold a dot).
    InputError, saying "cannot read table <name> of <source>", for a quote left open or followed by
    text (what to write: ``quoting``), a quote inside a part not quoted when ``refuse_stray`` (Spark's
    parser refuses one: ``x`a.b``` meant something else), an empty part, or more than three
    (``naming``: how to name the table)."""
    if isinstance(name, str):
        try:
            split = split_name(name, quotes, quoting)
        except ValueError as e:
            raise InputError(f"cannot read table {name_shown(name)} of {source}: the name {e}") from None
        stray = next((c for part, quoted in split if not quoted for c in quotes if c in part), None) if refuse_stray \
            else None
        if stray is not None:
            raise InputError(f"cannot read table {name_shown(name)} of {source}: the name holds {QUOTE_NAMES[stray]} "
                             f"inside a part it does not quote: {quoting}")
        parts = [part for part, _ in split]
        named = all(part.strip() for part in parts)
    else:
        parts = list(name) if isinstance(name, (tuple, list)) else []
        named = all(isinstance(part, str) and part for part in parts)
    if not 1 <= len(parts) <= 3 or not named:
        raise InputError(f"cannot read table {name_shown(name)} of {source}: {naming}")
    return parts


_SQL_SPACES = " \t\n\r\f\v"  # what SQL (DuckDB too) reads as space between a name's parts
QUOTE_NAMES = {'"': "a double quote", "`": "a backtick"}  # each quote a name's part may be quoted in, said


def _past_spaces(table: str, at: int) -> int:
    """Where the spaces (``_SQL_SPACES``) from ``at`` on end."""
    while at < len(table) and table[at] in _SQL_SPACES:
        at += 1
    return at


def _quoted_part(table: str, at: int, quoting: str) -> tuple[str, int]:
    """The quoted part of ``table`` opening at ``at`` (its doubled quotes made one), and where it
    ends. It closes with the quote it opens with."""
    quote = table[at]
    text, end = [], at + 1
    while True:
        close = table.find(quote, end)
        if close < 0:
            raise ValueError(f"opens {QUOTE_NAMES[quote]} it does not close: {quoting}")
        text.append(table[end:close])
        if not table.startswith(quote, close + 1):
            return "".join(text), close + 1
        text.append(quote)
        end = close + 2


def typed_name(parts: Sequence[str], quote: str = '"', quotes: str = "") -> str:
    """A table's parts as they are typed for ``table_parts``: a part holding a dot, or starting
    with a quote (after spaces, which ``dotted_parts`` drops before one), in ``quote`` (its quotes
    doubled), any other as it is (``main."a.b"``). ``quotes``: for a name whose reader refuses a
    quote inside a part not quoted (``source_table_parts``' ``refuse_stray``: Spark's), the quotes it
    reads; a part holding any of them, or spaces at its ends, is quoted too (``db.`a.b```)."""
    def typed(part: str) -> str:
        if quotes:
            quoted = "." in part or any(q in part for q in quotes) or part != part.strip()
        else:
            quoted = "." in part or part.lstrip(_SQL_SPACES).startswith(quote)
        return quote + part.replace(quote, quote * 2) + quote if quoted else part

    return ".".join(map(typed, parts))


def table_identity(table: str) -> str:
    """A DuckDB table's ``[schema.]name`` as its catalog tells tables apart (``catalog_name``),
    the default schema ``main`` left out, typed as ``table_parts`` reads it: ``People`` and
    ``main.people`` are one table, ``"a.b"`` (one name) and ``a.b`` (table b of schema a) two."""
    try:
        schema, name = (catalog_name(part) for part in table_parts(table))
    except ValueError:  # a report's, of no table a run could name
        return catalog_name(table)
    return typed_name([schema, name] if schema != "main" else [name])


# DuckDB starts every thread it is given, at once: 100,000 (a typo, a value meant as memory) took
# the machine down in a dry run. No machine this runs on has more cores than this.
MAX_THREADS = 1024


class EngineSettings(_Model):
    """Where the queries run: ``name`` (duckdb, the default, or spark) and that engine's settings.
    DuckDB: ``threads``, ``memory_limit`` (e.g. "2GB", for the whole job: of what the interpreter's
    250 MB leave, DuckDB gets 60 % and spills past it to ``temp_directory``, the search's Python side
    20 %). Spark: ``master`` (e.g.
    "local[2]") and ``conf`` (passed to the session builder); ``${VAR}`` in either expanded as in paths.
    Settings change how fast a release is
    made, never the release: they are not hashed."""

    name: str = "duckdb"
    threads: int | None = Field(default=None, ge=1, le=MAX_THREADS)
    memory_limit: str | None = None
    temp_directory: Path | None = None
    master: str | None = None
    conf: dict[str, str] = Field(default_factory=dict)

    @field_validator("memory_limit", mode="before")
    @classmethod
    def _a_size(cls, limit: object) -> object:
        """A number and its unit, in any case as DuckDB reads it; "0", "0GB" or a fraction of a byte
        would be DuckDB's limit of 0, which sqlclose read as no limit at all; one past what DuckDB
        takes failed inside it as an internal error. Each said in a sentence, not a pattern."""
        return None if limit is None else checked_size(limit)

    @field_validator("temp_directory")
    @classmethod
    def _a_folder(cls, folder: Path | None) -> Path | None:
        """A file there stopped the job only once DuckDB spilled (--temp-directory refuses it up front).
        A name that is no UTF-8 (a ``${VAR}`` holding such bytes) failed in DuckDB as ``std::bad_cast``
        (exit 1; the hundredth round): told in ``--temp-directory``'s words."""
        if folder is not None:
            try:
                refuse_undecodable_temp_directory(folder)
            except InputError as e:
                raise QuotesItsValue(str(e)) from None
        if folder is not None and folder.exists() and not folder.is_dir():
            raise ValueError("a file, not a folder: DuckDB spills into temp_directory; "
                             "give a folder (made if missing)")
        return folder

    @field_validator("master", "conf")
    @classmethod
    def _spark_setting_in_utf8(cls, given: str | dict[str, str] | None) -> object:
        """A ``master`` or ``conf`` setting that is no UTF-8 (given from Python: a TOML file holds
        UTF-8 alone) failed in py4j once Spark's JVM had started (the hundred-and-first round)."""
        try:
            if isinstance(given, dict):
                refuse_undecodable_spark_settings(None, given)
            elif given is not None:
                refuse_undecodable_spark_settings(given, {})
        except InputError as e:
            raise QuotesItsValue(str(e)) from None
        return given

    @model_validator(mode="after")
    def _settings_of_its_engine(self) -> EngineSettings:
        """One engine's settings given to the other reached its constructor as keyword arguments it
        has not (a TypeError shown as is): said up front, with where that engine's resources are set."""
        duckdb_only = {"threads": self.threads, "memory_limit": self.memory_limit,
                       "temp_directory": self.temp_directory}
        given = [key for key, value in duckdb_only.items() if value is not None]
        if self.name == "spark" and given:
            options = ", ".join("--" + key.replace("_", "-") for key in given)
            raise ValueError(
                f"{_listed(given)} {'is a DuckDB setting' if len(given) == 1 else 'are DuckDB settings'} "
                f"({options}), not Spark's: on Spark give the session's resources as [engine] conf (e.g. "
                "conf = { \"spark.driver.memory\" = \"4g\", \"spark.local.dir\" = \"/scratch\" }) and its "
                "cores as master (e.g. \"local[4]\"); see docs/engines.md, \"Spark's resources\"")
        spark_only = [key for key, value in {"master": self.master, "conf": self.conf}.items() if value]
        if self.name == "duckdb" and spark_only:
            raise ValueError(
                f"{_listed(spark_only)} {'is a Spark setting' if len(spark_only) == 1 else 'are Spark settings'}, "
                "not DuckDB's, the engine this run uses: to run on Spark give [engine] name = \"spark\" (or --engine "
                "spark); on DuckDB give its resources as [engine] threads, memory_limit and temp_directory "
                "(--threads, --memory-limit, --temp-directory); see docs/engines.md, \"Spark's resources\"")
        return self

    def options(self) -> dict[str, Any]:
        """The settings given, as keyword arguments of the engine's constructor."""
        given = {"threads": self.threads, "memory_limit": self.memory_limit, "temp_directory": self.temp_directory,
                 "master": self.master, "conf": self.conf or None}
        return {key: value for key, value in given.items() if value is not None}


def _listed(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


Algorithm = Literal["incognito", "gaa"]
# Discernibility (Incognito's default) and the seven metrics of Mauger et al. (2023), section 3.2;
# "custom" takes the user's own edge weights (``weights``).
METRIC_NAMES: tuple[str, ...] = ("discernibility", "distortion", "ncp", "total", "llm", "nllm", "wllm", "wnllm",
                                 "custom")
GAA_STRATEGIES: tuple[str, ...] = ("S1", "S2", "S3", "S4", "S5", "S6", "S7", "ldiv", "tclo")
EdgeWeightsSpec = list[float] | dict[str, float]


class Search(_Model):
    """How the release is chosen. ``algorithm``: ``"incognito"`` (full-domain, the default) or
    ``"gaa"`` (greedy multidimensional recoding, Mauger et al. 2023). ``metric``: what "least
    information lost" means — for Incognito the optimum among satisfying nodes (default
    discernibility), for GAA the merge cost (default nllm). ``"custom"`` uses ``weights``: per
    quasi-identifier one weight per level step, or a weight per edge keyed by the child's label.
    ``strategy`` (GAA only, default S1) and ``scope`` (GAA only: "table", the paper's definition,
    or "class") choose GAA's merge partner. ``explore`` (Incognito; ``exploring`` gives what applies):
    ``"optimum"``, the default, (with discernibility) leaves alone the nodes whose discernibility
    cannot be below a satisfying node's found — by their suppressed records, or by the classes they
    can have — the same optimum, far fewer nodes; ``"lattice"`` decides every node, so that
    ``Release.minimal_nodes`` lists every minimal satisfying node for the operator (no report
    holds them) (docs/performance.md, "ninth round" and "forty-sixth round")."""

    algorithm: Algorithm = "incognito"
    metric: str | None = None
    explore: Literal["lattice", "optimum"] | None = None
    strategy: Literal[GAA_STRATEGIES] | None = None  # type: ignore[valid-type]
    scope: Literal["table", "class"] | None = None
    weights: dict[str, EdgeWeightsSpec] | None = None

    @property
    def exploring(self) -> str:
        """What Incognito decides: the spec's ``explore``, else the optimum alone (the release is the
        same; deciding every node serves only ``Release.minimal_nodes``, and costs 4-13× under
        suppression)."""
        return self.explore or "optimum"

    @field_validator("strategy", mode="before")
    @classmethod
    def _strategy_any_case(cls, name: object) -> object:
        """"s3" is S3 and "LDIV" is ldiv, as metric names and `sqlclose sweep --strategies` take
        any case; an unknown name is left for the Literal to refuse, listing the choices."""
        if isinstance(name, str):
            return {s.lower(): s for s in GAA_STRATEGIES}.get(name.strip().lower(), name)
        return name

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, name: str | None) -> str | None:
        if name is not None and name.lower() not in METRIC_NAMES:
            raise ValueError(f"unknown metric {name_shown(name)}; choose one of {', '.join(METRIC_NAMES)}")
        return None if name is None else name.lower()

    @model_validator(mode="after")
    def _consistent(self) -> Search:
        if self.algorithm != "gaa" and (self.strategy is not None or self.scope is not None):
            raise ValueError("strategy and scope apply to algorithm = \"gaa\" only")
        if self.algorithm == "gaa" and self.explore is not None:  # either value: neither applies, none is ignored
            raise ValueError("explore applies to algorithm = \"incognito\" only (GAA has no lattice): leave it out")
        if self.algorithm == "gaa" and self.metric == "discernibility":
            raise ValueError("GAA merges by an information-loss metric: choose one of "
                             f"{', '.join(METRIC_NAMES[1:])}")
        if (self.metric == "custom") != (self.weights is not None):
            raise ValueError("metric = \"custom\" and [search.weights] go together: give both or neither")
        return self

    @property
    def metric_name(self) -> str:
        """The metric in effect: the given one, else discernibility (Incognito) or nllm (GAA)."""
        return self.metric or ("nllm" if self.algorithm == "gaa" else "discernibility")

    @property
    def strategy_name(self) -> str:
        return self.strategy or "S1"

    @property
    def scope_name(self) -> str:
        return self.scope or "table"


OthersPolicy = Literal["keep", "drop"]


class Spec(_Model, metaclass=_SpecErrorWhenCalled):
    """Everything a release needs. ``k`` and ``suppression`` may be given at the top level.

    ``others`` says what happens to columns that are neither identifier, quasi-identifier nor
    sensitive: ``"keep"`` (released unchanged) or ``"drop"``. Unset, a source with such columns is
    refused, so that nobody publishes a column they never looked at.
    """

    quasi_identifiers: dict[str, QuasiIdentifier]
    sensitive: dict[str, Sensitive] = Field(default_factory=dict)
    identifiers: list[str] = Field(default_factory=list)
    others: OthersPolicy | None = None
    privacy: Privacy | None = None
    source: Source | None = None
    output: Output | None = None
    engine: EngineSettings | None = None
    search: Search = Field(default_factory=Search)
    _origin: Path | None = PrivateAttr(default=None)  # the spec file, when loaded from one

    @model_validator(mode="before")
    @classmethod
    def _paths_absolute(cls, value: Any, info: ValidationInfo) -> Any:
        """A Spec built directly (``Spec(source={"path": "x.csv"}, …)``) gets its relative paths made
        absolute against the working folder now, as a dict spec does: kept relative, they were
        read against whatever folder the run was in, and the report named them so. load_spec and
        build_spec resolved them already (against the spec's file) and say so."""
        if not isinstance(value, dict) or (info.context or {}).get("paths_resolved"):
            return value
        data = _copy_dicts(_as_dicts(value))
        _resolve_paths(data, Path.cwd(), "spec")
        return data

    @model_validator(mode="before")
    @classmethod
    def _top_level_privacy(cls, value: Any) -> Any:
        if isinstance(value, dict) and ("k" in value or "suppression" in value):
            value = dict(value)
            privacy = dict(value.get("privacy") or {})
            for key in ("k", "suppression"):
                if key in value:
                    if key in privacy:
                        raise ValueError(f"{key} is given both at the top level and under [privacy]; give it once")
                    privacy[key] = value.pop(key)
            value["privacy"] = privacy
        return value

    @model_validator(mode="after")
    def _columns_consistent(self) -> Spec:
        if not self.quasi_identifiers:
            raise ValueError("declare at least one quasi-identifier under [quasi_identifiers]")
        for name, sensitive in self.sensitive.items():
            if not sensitive.models:
                raise ValueError(f"sensitive column {name_shown(name)} has no privacy model: give t (with distance), "
                                 "distinct_l, entropy_l, recursive = {c = …, l = …} or p")
        roles: dict[str, str] = {}
        for role, names in (("quasi-identifier", self.quasi_identifiers), ("sensitive", self.sensitive),
                            ("identifier", self.identifiers)):
            for name in names:
                if name in roles and roles[name] == role:  # a list of identifiers naming it twice
                    raise ValueError(f"column {name_shown(name)} is listed twice in identifiers; list it once")
                if name in roles:
                    raise ValueError(f"column {name_shown(name)} is declared both {roles[name]} and {role}; give it "
                                     "one role")
                roles[name] = role
        if self.privacy is None:
            raise ValueError("no privacy requirement: add [privacy] with k = … (e.g. k = 5), and t-closeness or "
                             "l-diversity under [sensitive.<column>]; a spec that states no requirement releases "
                             "nothing")
        unknown = sorted(set(self.search.weights or {}) - set(self.quasi_identifiers))
        if unknown:
            raise ValueError(f"[search.weights] names {name_shown(unknown[0])}, which is not a quasi-identifier")
        missing = [name for name in self.quasi_identifiers if self.search.weights is not None
                   and name not in self.search.weights]
        if missing:
            raise ValueError(f"[search.weights] gives no weights for {', '.join(name_shown(m) for m in missing)}: "
                             "a custom metric weighs every quasi-identifier's hierarchy")
        if self.privacy.k < 2 and not self.sensitive:
            raise ValueError("k = 1 with no sensitive model protects nothing: raise k (e.g. k = 5) or add a model "
                             "(t, distinct_l, entropy_l, recursive, p) under [sensitive.<column>]")
        if self.privacy.k < 2 and all(s.protects_nothing for s in self.sensitive.values()):
            raise ValueError(self._vacuous_message())
        return self

    def _vacuous_message(self) -> str:
        given = [(name, key) for name, s in self.sensitive.items() for key in s.model_keys]
        shown = ", ".join(f"sensitive.{name}.{key} = {_toml(getattr(self.sensitive[name], key))}"
                          for name, key in given)
        tighter = " or ".join(dict.fromkeys(_TIGHTER[key] for _, key in given))
        return (f"the requirements as given protect nothing: k = 1, and every table satisfies {shown}; raise k "
                f"(e.g. k = 5), or {tighter}")

    @property
    def k(self) -> int:
        return self.privacy.k

    @property
    def suppression(self) -> float:
        return self.privacy.suppression

    @property
    def declared_columns(self) -> list[str]:
        return [*self.identifiers, *self.quasi_identifiers, *self.sensitive]

    @property
    def origin(self) -> Path | None:
        """The spec file it was loaded from (``load_spec``); None for a spec given in Python (a
        dict, a ``Spec``), which no command naming SPEC.toml can be given."""
        return self._origin

    @property
    def files_read(self) -> list[Path]:
        """Every file the job reads besides the source: the spec itself and hierarchy files."""
        files = [self._origin] if self._origin is not None else []
        hierarchies = [*self.quasi_identifiers.values(), *(s.hierarchy for s in self.sensitive.values())]
        return files + [h.file for h in hierarchies if h is not None and h.file is not None]

    def sha256(self) -> str:
        """Hash of the canonical JSON form: equal specs hash equal, however they were written."""
        return hashlib.sha256(canonical_json(self).encode()).hexdigest()


def _toml(value: Any) -> str:
    """A model's parameter as the spec writes it."""
    if isinstance(value, Recursive):
        return f"{{ c = {value.c:g}, l = {value.l} }}"
    return f"{value:g}"


def canonical_json(spec: Spec) -> str:
    """The spec as canonical JSON, with what its hierarchies *contain*: editing a hierarchy file
    changes the hash even when its path does not."""

    def default(obj: Any) -> Any:
        if isinstance(obj, Path):
            return str(obj)
        if isinstance(obj, (_dt.date, _dt.time)):  # a TOML date in a domain, a time as a tree's leaf: ISO text
            return obj.isoformat()
        raise TypeError(type(obj).__name__)

    data = spec.model_dump(exclude={"output", "engine"}, exclude_none=True)
    entries = [("quasi_identifiers", name, qi) for name, qi in spec.quasi_identifiers.items()]
    entries += [("sensitive", name, s.hierarchy) for name, s in spec.sensitive.items() if s.hierarchy is not None]
    for section, name, h in entries:
        target = data[section][name] if section == "quasi_identifiers" else data[section][name]["hierarchy"]
        if h.hierarchy is not None:
            target["hierarchy"] = {"rows": [list(r) for r in h.hierarchy.rows]}
        if h.file is not None:  # what the file holds, not where it lies
            target["file_sha256"] = file_sha256(Path(h.file))
            target.pop("file", None)
        if "bands" in target:  # 5 and 5.0 are one width (a float when it holds the number exactly)
            target["bands"] = [_one_number(w) for w in target["bands"]]
        if "origin" in target:
            target["origin"] = _one_number(target["origin"])
    return json.dumps(data, sort_keys=True, default=default, separators=(",", ":"))


def _one_number(number: float) -> float:
    as_float = float(number) if abs(number) < 1e308 else math.inf
    return as_float if as_float == number else number


def load_spec(path: str | os.PathLike[str] | dict[str, Any] | Spec) -> Spec:
    """Read a TOML spec. Relative paths in it are relative to the spec file; ``${VAR}`` and
    ``${VAR:-default}`` in paths expand from the environment; ``~`` is the home folder, as in them.
    A dict is validated as ``anonymize(source, dict)`` validates it (its relative paths against the
    working folder), and a Spec is returned as it is: both ended in Python's ``TypeError: expected
    str, bytes or os.PathLike object`` (ninety-sixth round), where every other entry point takes them."""
    if isinstance(path, (Spec, dict)):
        return as_spec(path)
    if not isinstance(path, (str, os.PathLike)):
        raise SpecError(f"load_spec takes a TOML file's path, a dict or a sqlclose.Spec, not "
                        f"{type(path).__name__}")
    _refuse_text_for_a_path(path)
    refuse_undecodable_path(path, "cannot read the spec file", RENAME_IN_UTF8, NAMED_IN_UTF8, SpecError)
    path = Path(path).expanduser()
    try:
        if path.is_dir():
            raise SpecError(f"spec file {path} is a folder: give the path of a TOML file")
        text = read_utf8(path, f"spec file {path}", SpecError)
    except FileNotFoundError:
        raise SpecError(f"spec file {clipped(str(path), head=repr)} does not exist") from None
    except OSError as e:
        if e.errno != errno.ENAMETOOLONG:
            raise
        raise SpecError(f"spec file {clipped(str(path), head=repr)} cannot be read: {e.strerror}; give the path "
                        "of a TOML file") from None
    try:
        data = tomllib.loads(text, parse_float=toml_float)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{path}: not valid TOML: {e}") from None
    refuse_rewritten_leaves(data, str(path))
    data = plain_floats(data)
    if not data:
        raise SpecError(f"spec file {path} is empty (or holds only comments): name the quasi-identifiers and the "
                        "requirements, as in datasets/table3/table3.toml")
    # absolute: the same spec hashes the same from any working directory
    spec = build_spec(data, str(path), base=path.resolve().parent)
    spec._origin = path.resolve()
    return spec


TEXT_FOR_A_PATH = ("give the spec file's path, or the text parsed, tomllib.loads(text), as a dict (its relative "
                   "paths then relative to the working folder)")


def _refuse_text_for_a_path(given: str | Path) -> None:
    """TOML text given where a spec file's path belongs: text holding a line break (no file name holds
    one), or one line holding '=' that names no file (``"k = 3"``), each was "spec file <the whole
    text> does not exist" (review of the ninety-sixth round); a NUL character, which no file name
    holds, was Python's bare ValueError. The text is not echoed whole: it may be a long spec. A
    path, not a str (the command line's), is taken as one."""
    if not isinstance(given, str):
        return
    if "\0" in given:
        raise SpecError(f"spec file {shown(given)} holds a NUL character, which no file name can hold: give the "
                        "path of a TOML file")
    if "\n" in given or "\r" in given:
        raise SpecError(f"spec is TOML text, not a path: {TEXT_FOR_A_PATH}")
    if "=" in given and not _is_a_file(Path(given).expanduser()):
        # TOML text given as a path: its first characters shown, as a list's repr is (a spec's text is no path)
        if _reads_as_toml(given):
            raise SpecError(f"spec {shown(given, text_limit=SHOWN_CHARACTERS)} is TOML text, not a path (it names no "
                            f"file): {TEXT_FOR_A_PATH}")
        # a missing path may hold '=' too (a Hive folder's date=2024): both readings said
        raise SpecError(f"spec file {shown(given, text_limit=SHOWN_CHARACTERS)} does not exist; if it is TOML text (it "
                        f"holds '='), not a path: {TEXT_FOR_A_PATH}")


def _reads_as_toml(text: str) -> bool:
    try:
        return bool(tomllib.loads(text))
    except tomllib.TOMLDecodeError:
        return False


def _is_a_file(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a name too long for a file
        return False


def build_spec(data: dict[str, Any], where: str = "spec", *, base: Path | None = None) -> Spec:
    """Validate a spec given as a dict (as from Python), with the same messages as load_spec. Its
    relative paths are relative to ``base`` (default: the working folder), made absolute now (as a
    TOML spec's are beside its file), so that the report names files any folder can find; the dict
    is not changed."""
    data = _copy_dicts(data)
    try:
        _resolve_paths(data, base or Path.cwd(), where)
        return Spec.model_validate(data, context={"paths_resolved": True})
    except ValidationError as e:
        raise spec_error(e, where) from None


def spec_error(error: ValidationError, where: str, model: type[BaseModel] | None = None) -> SpecError:
    """The spec's problems as one error, ``listed`` when there are several (a line each). ``model``:
    the model validated, when not the whole ``Spec`` (its keys are those an unknown key is told of)."""
    message = format_validation_error(error, where, model)
    failure = SpecError(message)
    failure.listed = "\n" in message
    return failure


def format_validation_error(error: ValidationError, where: str, model: type[BaseModel] | None = None) -> str:
    """One problem on the message's one line (a job log searched for ``error:`` shows it); several
    listed below a line that counts them. A line break a value brings is shown as ``\\n``: the
    list's are the message's only ones."""
    problems = [escaped_breaks(p) for p in validation_problems(error, model)]
    where = escaped_breaks(where)
    if len(problems) == 1:
        return f"{where}: invalid spec: {problems[0]}"
    return "\n".join([f"{where}: invalid spec ({len(problems)} problems):", *(f"  - {p}" for p in problems)])


def validation_problems(error: ValidationError, model: type[BaseModel] | None = None) -> list[str]:
    """Each validation error as ``key.path: what is wrong (got …)``, one line each, each once (a
    union's branches refusing one value said it twice). ``model``: the model validated (``Spec``
    unless said), whose table an unknown key at the top of the path is a key of."""
    return list(dict.fromkeys(_problem(item, model or Spec) for item in error.errors()))


def _problem(item: Any, model: type[BaseModel]) -> str:
    """One validation error as ``key.path: what is wrong (got …)``, the value given shown bounded
    (``text.shown``): never a hierarchy's rows, an array's or a DataFrame's values."""
    parts = tuple(str(p) for p in item["loc"] if not str(p).startswith("function-"))
    given = item.get("input")
    if (hierarchy_problem := _hierarchy_misplaced(parts, given)) is not None:
        return hierarchy_problem
    if item["type"] == "extra_forbidden":  # pydantic: "Extra inputs are not permitted"
        msg, got = _unknown_key(parts, model), ""
    elif item["type"] == "missing":  # pydantic: "Field required"
        msg, got = "missing: this key is required", ""
    elif item["type"] == "bool_type":  # pydantic: "Input should be a valid boolean"; "yes" and 1 are not
        msg, got = "give true or false, without quotes", f" (got {shown(given)})"
    else:
        msg = item["msg"].removeprefix("Value error, ")
        quoted = isinstance((item.get("ctx") or {}).get("error"), QuotesItsValue)
        got = f" (got {typed(given, shown)})" if not isinstance(given, dict) and "; got " not in msg and not quoted \
            else ""
        if parts[-1:] == ("suppression",) and _number_in(given, 1, 100):
            msg += "; it is a fraction of the rows: 5 % is suppression = 0.05"
    return f"{'.'.join(parts) or '(top level)'}: {msg}{got}"


def _hierarchy_misplaced(parts: tuple[str, ...], given: Any) -> str | None:
    """A ready ``sqlclose.Hierarchy`` given under another key of a column's hierarchy (``file = H``,
    ``tree = H``), or ``hierarchy =`` given something else (rows as a list): said with what to write,
    the value named by its type. pydantic's message quoted the hierarchy whole, every leaf (a
    hierarchy made of the data's values counts as data), and for a list asked for "a dictionary"
    without saying which. None for any other problem."""
    fields = [i for i, part in enumerate(parts) if part in HierarchySpec.model_fields and i >= 2]
    if not fields or parts[0] not in ("quasi_identifiers", "sensitive"):
        return None
    at = fields[-1]
    key, where = parts[at], ".".join(parts[:at + 1])  # a union's branch after the key ('mask.bool') left out
    entry = (f" (or as the column's entry itself, {json.dumps(parts[1], ensure_ascii=False)}: H)"
             if parts[0] == "quasi_identifiers" else "")
    if isinstance(given, Hierarchy) and key != "hierarchy":
        return f"{where}: a sqlclose.Hierarchy is given as hierarchy = H{entry}, not as {key} = H (got a " \
               "sqlclose.Hierarchy)"
    if key != "hierarchy" or isinstance(given, (Hierarchy, dict)):
        return None
    if isinstance(given, (str, Path)):
        return f"{where}: hierarchy takes a sqlclose.Hierarchy; a hierarchy file is given as file = \"…\" (got " \
               f"{shown(str(given))})"
    return (f"{where}: hierarchy takes a sqlclose.Hierarchy: make one of rows (leaf, level 1, …, top) with "
            f"hierarchy = sqlclose.Hierarchy.from_rows(rows) (got {shown(given, limit=0)})")


def _number_in(value: Any, low: float, high: float) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and low <= value <= high


_TOP_LEVEL = "a top-level key: write it at the top of the spec, before the first [table]"


def _unknown_key(loc: tuple[str, ...], model: type[BaseModel]) -> str:
    """What to say of a key no model has: a top-level key's place, the close keys of its table,
    else the keys it has."""
    if model is Spec and len(loc) > 1 and loc[-1] in ("identifiers", "others"):
        return f"{loc[-1]} is {_TOP_LEVEL} (TOML makes a key written after [{loc[0]}] a key of that table)"
    if model is Spec and len(loc) > 1 and loc[0] != "privacy" and loc[-1] in ("k", "suppression"):
        return (f"{loc[-1]} belongs under [privacy] (or at the top of the spec, before the first [table]): TOML "
                f"makes a key written after [{loc[0]}] a key of that table")
    keys = _keys_at(loc[:-1], model)
    close = difflib.get_close_matches(loc[-1], keys, n=2) if loc else []
    if close:
        return f"unknown key; did you mean {' or '.join(repr(k) for k in close)}?"
    return f"unknown key (this table's keys: {', '.join(keys)})" if keys else "unknown key"


def _keys_at(loc: tuple[str, ...], model: type[BaseModel]) -> list[str]:
    """The keys the table at ``loc`` of ``model`` takes (a column's name under quasi_identifiers or
    sensitive is not a key: the table below it is that column's)."""
    for part in loc:
        field = model.model_fields.get(part)
        if field is None:
            continue
        found = _model_in(field.annotation)
        if found is None:
            return []
        model = found
    return [name for name in model.model_fields if not name.startswith("_")]


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The spec model a field holds, itself or inside an Optional, a union or a dict's values."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _expanded_spark_settings(engine: dict[str, Any], where: str) -> None:
    """``[engine] master`` and ``conf`` values with ``${VAR}`` and ``${VAR:-default}`` expanded, as a
    spec's paths are: passed as written, ``"spark.local.dir" = "${BAD}"`` made Spark spill into a folder
    named ``${BAD}`` (hundred-and-second round), and ``master = "${M}"`` failed in Spark's JVM. Spark's
    own ``${env:NAME}``, ``${system:name}`` and ``${spark.key}`` are refused: Spark substitutes them in
    the settings it reads through its typed entries only (not ``spark.local.dir``, read as written;
    ``spark.sql.shuffle.partitions`` is refused as no number; not the master, which Spark refuses as
    "Master must either be yarn or start with spark, k8s, or local"), so the same text meant a folder in
    one setting and a literal name in another."""
    if isinstance(engine.get("master"), str):  # anything else is told by validation
        engine["master"] = _expanded_spark_setting(
            engine["master"], f"{where}: invalid spec: engine.master",
            "which Spark does not apply to the master (it refuses such a master)", "[engine] master")
    if isinstance(engine.get("conf"), dict):
        engine["conf"] = {
            key: _expanded_spark_setting(value, f"{where}: invalid spec: engine.conf: {key}",
                                         "which Spark applies to some settings only (spark.local.dir keeps it "
                                         "as a folder's name)", "every [engine] conf value")
            if isinstance(value, str) else value
            for key, value in engine["conf"].items()}


def _expanded_spark_setting(value: str, label: str, where_spark_applies_it: str, setting: str) -> str:
    spark_own = SPARK_REFERENCE.search(ENV_VAR.sub("", value))
    if spark_own:
        raise SpecError(
            f"{label}: {spark_own.group()} in {name_shown(value)} is Spark's own substitution, "
            f"{where_spark_applies_it}: write ${{NAME}} or ${{NAME:-default}} for an environment variable, which "
            f"sqlclose expands in {setting}, or the value itself")
    return _expanded(value, label)


def _expanded(value: str, label: str) -> str:
    """``expand_env``, its refusal naming the spec's key (``spec.toml: invalid spec: output.path: …``)."""
    try:
        return expand_env(value)
    except SpecError as e:
        raise SpecError(f"{label}: {e}") from None


def _copy_dicts(value: Any) -> Any:
    """``value`` with every dict in it copied (what ``_resolve_paths`` rewrites); other values shared."""
    return {key: _copy_dicts(item) for key, item in value.items()} if isinstance(value, dict) else value


def _as_dicts(value: dict[str, Any]) -> dict[str, Any]:
    """A spec's sections and columns given as models (``QuasiIdentifier(file="age.csv")``) as the
    dicts they were made from, for ``_resolve_paths``; validated again, they are the same models."""
    def plain(item: Any) -> Any:
        return item.model_dump(exclude_unset=True) if isinstance(item, BaseModel) else item

    out = {key: plain(item) for key, item in value.items()}
    for section in ("quasi_identifiers", "sensitive"):
        if isinstance(out.get(section), dict):
            out[section] = {name: plain(entry) for name, entry in out[section].items()}
            for entry in out[section].values():
                if isinstance(entry, dict) and isinstance(entry.get("hierarchy"), BaseModel):
                    entry["hierarchy"] = plain(entry["hierarchy"])
    return out


def _refuse_top_level_keys_in_tables(data: dict[str, Any], where: str) -> None:
    """TOML puts a key written after ``[quasi_identifiers]`` in that table: ``others = "drop"``
    there was read as a quasi-identifier named others (its hierarchy file "drop"), and
    ``identifiers = […]`` as one that is a list."""
    for table in ("quasi_identifiers", "sensitive"):
        columns = data.get(table)
        if not isinstance(columns, dict):
            continue
        for key, looks_so in (("others", columns.get("others") in ("keep", "drop")),
                              ("identifiers", isinstance(columns.get("identifiers"), list))):
            if looks_so:
                raise SpecError(f"{where}: invalid spec: {table}.{key}: {key} is {_TOP_LEVEL} (TOML makes a key "
                                f"written after [{table}] a key of that table)")


def _resolve_paths(data: dict[str, Any], base: Path, where: str) -> None:
    """Expand env vars and make relative paths absolute (relative to the spec file)."""
    _refuse_top_level_keys_in_tables(data, where)

    def fix(container: dict[str, Any], key: str, label: str) -> None:
        value = container.get(key)
        if isinstance(value, (str, Path)):
            if "\0" in str(value):  # no file name holds one: Python's file calls raise a bare ValueError
                raise SpecError(f"{where}: invalid spec: {label}: the path {name_shown(str(value))} holds a NUL "
                                "character, which no file name can hold; remove it")
            p = Path(_expanded(str(value), f"{where}: invalid spec: {label}")).expanduser()
            container[key] = os.path.normpath(p if p.is_absolute() else (base / p))

    for section, keys in (("source", ("path", "folder")), ("output", ("path", "report")),
                          ("engine", ("temp_directory",))):
        if isinstance(data.get(section), dict):
            for key in keys:
                fix(data[section], key, f"{section}.{key}")
    source = data.get("source")
    if isinstance(source, dict) and "query" in source and "folder" not in source:
        # the files a query names are looked up beside the spec: its folder's name is no text of the
        # spec's, so not expanded (a folder named ${DIR} was read as the variable's value)
        source["folder"] = str(base)
    if isinstance(data.get("engine"), dict):
        _expanded_spark_settings(data["engine"], where)
    for section in ("quasi_identifiers", "sensitive"):
        if not isinstance(data.get(section), dict):  # validation names what it must be
            continue
        for name, entry in data[section].items():
            if isinstance(entry, str) and section == "quasi_identifiers":
                data[section][name] = entry = {"file": entry}
            if not isinstance(entry, dict):
                continue
            target = entry
            if section == "sensitive":
                if isinstance(entry.get("hierarchy"), str):
                    entry["hierarchy"] = {"file": entry["hierarchy"]}
                target = entry.get("hierarchy") if isinstance(entry.get("hierarchy"), dict) else {}
            fix(target, "file", f"{section}.{name}" + (".hierarchy" if section == "sensitive" else ""))


def static_hierarchy(s: HierarchySpec, column: str) -> Hierarchy:
    """A hierarchy given by a file, a tree or a ready object (rule hierarchies need the data)."""
    try:
        if s.kind == "file":
            h = Hierarchy.from_csv(s.file, s.delimiter)
        elif s.kind == "tree":
            h = Hierarchy.from_tree(s.tree, f"tree for column {name_shown(column)}")
        else:
            h = s.hierarchy
    except HierarchyError as e:
        raise HierarchyError(f"hierarchy of column {name_shown(column)}: {e}") from None
    return h.with_leaves_declared() if s.leaves_declared else h


def as_spec(spec: Spec | str | Path | dict) -> Spec:
    """A spec given as a Spec, a TOML path or a dict."""
    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, (str, os.PathLike)):
        return load_spec(spec)  # TOML text given as the path is told so there
    if isinstance(spec, dict):
        return build_spec(spec)
    raise SpecError(f"spec must be a Spec, a TOML path or a dict, not {type(spec).__name__}")
