"""A bands or dates rule's levels, told by a label's shape alone: what ``check --against --spec``
holds a file's labels to when the column's hierarchy is built from the input's values.

The rule's hierarchy cannot be built again without the input, but every label of a level follows a
pattern the spec decides. Bands of width w from origin o: ``lo-hi`` (whole numbers, hi = lo + w − 1)
or ``[lo, hi)`` (hi = lo + w), lo = o + n·w; either form is accepted, the column's type deciding which
one preparation wrote. Dates: ``2024-05`` (month), ``2024-Q2`` (quarter), ``2024`` (year),
``2020-2024`` (Ny: a multiple of N, the band cut at 9999). Level 0 holds the values themselves (a
number; a day, maybe with a time of day), the top ``*``; a NULL's stand-in is of every level below
the top. Written apart from the builders (``model.hierarchy.bands_hierarchy``, ``model.dates``) on
purpose: the audit shares no judging code with what it audits.

Band edges are compared exactly as whole numbers of 10^-S (S: the most decimals of the widths and
the origin), in HUGEINT: a band-shaped label with an edge of more than 37 digits there (or widths
that long) is not judged (``unjudged``), and the column's level is then left unchecked, not called
wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from sqlglot import exp

from sqlclose.model.hierarchy import TOP_LABEL
from sqlclose.sql import queries as q

_NUMBER = r"-?[0-9]+(?:\.[0-9]+)?"
_DASH = r"^(-?[0-9]+)-([0-9]+)$"  # 35-39: a band of whole numbers ending at 0 or above
_INTERVAL = rf"^\[({_NUMBER}), ({_NUMBER})\)$"  # [35, 40), [-15, -10), [0.5, 1)
_DIGITS = 37  # an edge's digits the check compares: a HUGEINT holds 38, and a sum of two stays within


@dataclass(frozen=True)
class BandLevels:
    """A bands rule as the spec gives it: widths and origin as the exact decimals written."""

    widths: tuple[Decimal, ...]
    origin: Decimal
    stand_in: str | None

    @property
    def levels(self) -> int:
        return len(self.widths) + 2

    def tests(self, params: q.Params) -> list[exp.Expression]:
        value = _value()
        number = exp.Not(this=exp.Is(this=exp.TryCast(this=value.copy(), to=exp.DataType.build("DOUBLE")),
                                     expression=exp.Null()))
        tests = [exp.and_(number, exp.Not(this=_band_shaped(params)))]
        if self._judged:  # else every band-shaped label is unjudged: none is called of a band's level
            edges = {form: (self._edge(form, 1, params)[0], self._edge(form, 2, params)[0])
                     for form in (_DASH, _INTERVAL)}
            tests += [self._band_of(width, edges, params) for width in self.widths]
        else:
            tests += [exp.false() for _ in self.widths]
        return _with_stand_in_and_top(tests, self.stand_in, params)

    def unjudged(self, params: q.Params) -> exp.Expression:
        """A band-shaped label whose edges, as whole numbers of 10^-S, are too long to compare."""
        if not self._judged:
            return _band_shaped(params)
        return exp.or_(*(exp.and_(_matches(form, params), self._edge(form, group, params)[1])
                         for form in (_DASH, _INTERVAL) for group in (1, 2)))

    def _band_of(self, width: Decimal, edges: dict[str, tuple[exp.Expression, exp.Expression]],
                 params: q.Params) -> exp.Expression:
        """Whether a label is a band of ``width`` on the grid, in either form (``edges``: each
        form's low and high edge, ``_edge``)."""
        one, w, o = 10 ** self._scale, self._whole(width), self._whole(self.origin)
        forms = []
        for form, extra in ((_DASH, one), (_INTERVAL, 0)):  # hi − lo: w − 1 written as whole numbers, else w
            lo, hi = edges[form]
            span = exp.EQ(this=hi.copy(), expression=exp.Add(this=lo.copy(), expression=_huge(w - extra, params)))
            on_grid = exp.EQ(this=exp.Mod(this=exp.Paren(this=exp.Sub(this=lo.copy(), expression=_huge(o, params))),
                                          expression=_huge(w, params)), expression=_huge(0, params))
            forms.append(exp.and_(_matches(form, params), span, on_grid))
        return exp.Paren(this=exp.or_(*forms))

    @property
    def _scale(self) -> int:
        return max(0, *(-d.normalize().as_tuple().exponent for d in (*self.widths, self.origin)))

    @property
    def _judged(self) -> bool:
        """Whether the widths and origin are short enough to compare with (a band's edges)."""
        return all(abs(self._whole(x)) < 10 ** _DIGITS for x in (*self.widths, self.origin))

    def _whole(self, x: Decimal) -> int:
        return int(x.scaleb(self._scale))

    def _edge(self, form: str, group: int, params: q.Params) -> tuple[exp.Expression, exp.Expression]:
        """An edge of a label of ``form`` as a HUGEINT whole number of 10^-S, and whether it is too
        long to compare. The number is NULL when the edge has more decimals than S (it lies on no
        grid of this rule) or more than ``_DIGITS`` digits (too long: sums of two stay in range)."""
        text = exp.RegexpExtract(this=_value(), expression=params.add(form), group=exp.Literal.number(group))
        whole = exp.func("SPLIT_PART", text.copy(), params.add("."), exp.Literal.number(1))
        decimals = exp.func("SPLIT_PART", text.copy(), params.add("."), exp.Literal.number(2))
        digits = exp.DPipe(this=whole, expression=exp.func("RPAD", decimals.copy(), exp.Literal.number(self._scale),
                                                           params.add("0")))
        on_scale = exp.LTE(this=exp.Length(this=decimals), expression=exp.Literal.number(self._scale))
        long_digits = exp.GT(this=exp.Length(this=exp.func("LTRIM", digits.copy(), params.add("-"))),
                             expression=exp.Literal.number(_DIGITS))
        too_long = exp.Paren(this=exp.and_(on_scale.copy(), long_digits.copy()))
        fits = exp.and_(on_scale, exp.Not(this=exp.Paren(this=long_digits)))
        scaled = exp.If(this=fits, true=exp.TryCast(this=digits, to=exp.DataType.build("HUGEINT")), false=exp.Null())
        return scaled, too_long


@dataclass(frozen=True)
class DateLevels:
    """A dates rule as the spec gives it: its levels below the top (month, quarter, year, Ny)."""

    names: tuple[str, ...]
    stand_in: str | None

    @property
    def levels(self) -> int:
        return len(self.names) + 2

    def tests(self, params: q.Params) -> list[exp.Expression]:
        day = _full_match(r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])([ Tt].*)?", params)  # as the rule reads
        return _with_stand_in_and_top([day, *(self._level(name, params) for name in self.names)],
                                      self.stand_in, params)

    def _level(self, name: str, params: q.Params) -> exp.Expression:
        shapes = {"month": r"[0-9]{4}-(0[1-9]|1[0-2])", "quarter": r"[0-9]{4}-Q[1-4]", "year": r"[0-9]{4}"}
        if name in shapes:
            return _full_match(shapes[name], params)
        years = int(name[:-1])  # Ny, as the spec validated it
        form = r"^([0-9]{4})-([0-9]{4})$"
        lo, hi = (exp.TryCast(this=exp.RegexpExtract(this=_value(), expression=params.add(form),
                                                     group=exp.Literal.number(g)), to=exp.DataType.build("INT"))
                  for g in (1, 2))
        last = exp.func("LEAST", exp.Add(this=lo.copy(), expression=exp.Literal.number(years - 1)),
                        exp.Literal.number(9999))
        return exp.Paren(this=exp.and_(_matches(form, params),
                                       exp.EQ(this=exp.Mod(this=lo.copy(), expression=exp.Literal.number(years)),
                                              expression=exp.Literal.number(0)),
                                       exp.EQ(this=hi, expression=last)))


def _with_stand_in_and_top(tests: list[exp.Expression], stand_in: str | None,
                           params: q.Params) -> list[exp.Expression]:
    if stand_in is not None:
        tests = [exp.Paren(this=exp.or_(t, exp.EQ(this=_value(), expression=params.add(stand_in)))) for t in tests]
    return [*tests, exp.EQ(this=_value(), expression=params.add(TOP_LABEL))]


def _band_shaped(params: q.Params) -> exp.Expression:
    return exp.Paren(this=exp.or_(_matches(_DASH, params), _matches(_INTERVAL, params)))


def _matches(pattern: str, params: q.Params) -> exp.Expression:
    return exp.RegexpLike(this=_value(), expression=params.add(pattern))


def _full_match(pattern: str, params: q.Params) -> exp.Expression:
    return _matches(f"^(?:{pattern})$", params)


def _huge(n: int, params: q.Params) -> exp.Expression:
    """A whole number as a HUGEINT (bound as text: past 64 bits a number binds as a float)."""
    return exp.Cast(this=params.add(str(n)), to=exp.DataType.build("HUGEINT"))


def _value() -> exp.Column:
    return q.col("value", "v")
