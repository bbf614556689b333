"""Text files a user writes (specs, hierarchies): read as UTF-8, the way editors save them."""

from __future__ import annotations

import codecs
import datetime as dt
import hashlib
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from decimal import Decimal
from pathlib import Path, PurePath

from sqlclose.errors import InputError, OptionError


def escaped_breaks(text: str) -> str:
    """``text`` with its line breaks shown as ``\\n`` and ``\\r``: a message a log reads as one line
    (a path holding a line break split it in two: review h2 of the eighty-sixth round)."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def escaped_controls(text: str, keep: str = "") -> str:
    """``text`` with its control characters shown escaped: line breaks and tabs as ``\\n``, ``\\r``,
    ``\\t``, the others as ``\\x1b`` or ``\\u0085`` (a lone surrogate, an undecodable byte of a file
    name, as ``\\udcff``; a bidirectional override as ``\\u202e``): text that must stay one line of a
    file that is read back, e.g. a comment in a TOML spec (a folder named with a line break broke the
    demo's spec: ninety-fourth round). ``keep``: the characters left as they are (``terminal_text``)."""
    out = []
    for ch in text:
        if ch in keep:
            out.append(ch)
        elif ch in _NAMED_CONTROLS:
            out.append(_NAMED_CONTROLS[ch])
        elif unicodedata.category(ch) in ("Cc", "Cs") or ch in "\u2028\u2029" or ch in BIDI_CONTROLS:
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def terminal_text(text: str) -> str:
    """``text`` as a terminal may be given it: its lines kept, every other control character escaped
    (``escaped_controls``). A column or file name holding an escape sequence (``\\x1b[2J`` clears the
    screen, ``\\x1b]0;…`` retitles the window), a carriage return or a backspace (which print over what
    precedes them) or a right-to-left override (which shows the rest of the line reversed) reached the
    terminal as it was: the ninety-eighth round."""
    return escaped_controls(text, keep="\n")


# The characters that reorder how the text around them is shown (Unicode's bidirectional embeddings,
# overrides, isolates and marks): a name holding U+202E showed what followed it reversed, "t = 0.9"
# read as "9.0 = t" (the "Trojan Source" trick). Written escaped wherever a person reads a name.
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


_NAMED_CONTROLS = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


# A run's files as read once on its start (``read_once``): its path (absolute) -> its bytes.
_READ_ONCE: ContextVar[dict[Path, bytes] | None] = ContextVar("sqlclose_read_once", default=None)


@contextmanager
def read_once(paths: Iterable[Path]) -> Iterator[None]:
    """Within, each of ``paths`` reads (``file_bytes``) as the bytes read on entry: what a run
    parses, hashes into its spec's digest and records in its report are one version of the file.
    A hierarchy edited during a run left a release built from the old file beside a report
    vouching for the new one, "up to date" ever after (review h2 of the eighty-sixth round). A
    file that cannot be read here (missing, a FIFO) is left to the read that says why."""
    taken: dict[Path, bytes] = {}
    for path in paths:
        if special_file(Path(path)) is None:
            try:
                taken[_absolute(path)] = Path(path).read_bytes()
            except OSError:
                pass
    token = _READ_ONCE.set(taken)
    try:
        yield
    finally:
        _READ_ONCE.reset(token)


def file_bytes(path: Path) -> bytes:
    """A file's bytes: as ``read_once`` took them within a run, else as they are now."""
    taken = _READ_ONCE.get()
    held = taken.get(_absolute(path)) if taken else None
    return held if held is not None else Path(path).read_bytes()


def file_sha256(path: Path) -> str | None:
    """The sha256 of a file's bytes as the run read them (``file_bytes``); None for a special file
    (read once, by whoever refuses it) or one that cannot be read (told where it is read)."""
    if special_file(Path(path)) is not None:
        return None
    try:
        return hashlib.sha256(file_bytes(path)).hexdigest()
    except OSError:
        return None


def _absolute(path: Path) -> Path:
    return Path(os.path.abspath(path))


def read_utf8(path: Path, what: str, error: type[InputError]) -> str:
    """The file's text, a leading byte-order mark dropped (editors on Windows write one). Bytes
    that are not UTF-8 raise ``error`` naming ``what`` (e.g. "spec file x.toml"), the line and
    the byte offset, and what to do. OS errors (a missing file, a folder) are the caller's."""
    data = file_bytes(path)
    body = data.removeprefix(codecs.BOM_UTF8)
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as e:
        before = body[:e.start]  # its lines as an editor counts them: LF, CRLF and a lone CR end one
        line = before.count(b"\n") + before.count(b"\r") - before.count(b"\r\n") + 1
        offset = e.start + len(data) - len(body)
        raise error(f"{what} is not UTF-8 text (line {line}, byte {offset}); re-save it as UTF-8") from None


ENGINE_READS_UTF8 = "the engine takes a path as UTF-8 text"
RENAME_IN_UTF8 = "rename it (or the folder holding it) in UTF-8"
NAMED_IN_UTF8 = "sqlclose names the files it reads (in messages, in the report) as UTF-8 text"
WRITTEN_NAMED_IN_UTF8 = "sqlclose names the files it writes (in messages, in the report) as UTF-8 text"


def refuse_undecodable_path(path: str | PurePath, told: str, fix: str, why: str = ENGINE_READS_UTF8,
                            error: type[InputError] = InputError) -> None:
    """A path holding bytes that are no UTF-8 (a name in Latin-1: Python keeps such a byte as a lone
    surrogate, ``\\udce9``), which the engine takes as UTF-8 text (``why``): refused as ``told``
    ("cannot read the source"), its bytes escaped (``in\\xe9.csv``), with ``fix``. Unsaid, DuckDB failed
    after the whole search on an output path (exit 1, a bug), and Python's codec's words refused a
    source's (``'utf-8' codec can't encode``: the ninety-eighth round). A spec's and a hierarchy's
    name (files Python reads) reached messages as ``\\udcff`` and the report as a lone surrogate, which
    is no Unicode text (the ninety-ninth round): they are refused alike, ``why`` saying so."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise error(f"{told} {undecodable_shown(path)}: its name is not UTF-8 (a byte of another encoding is "
                    f"shown as \\xNN), and {why}: {fix}") from None


def refuse_undecodable_temp_directory(folder: str | PurePath, error: type[InputError] = InputError) -> None:
    """A DuckDB ``temp_directory`` that is no UTF-8: DuckDB's connect failed as ``std::bad_cast``
    (exit 1, a bug) wherever it came from: ``--temp-directory`` (refused with the command's paths),
    a spec's ``[engine] temp_directory`` (a ``${VAR}`` in it), ``DuckDBEngine(temp_directory=…)``
    (the hundredth round). Told as ``--temp-directory`` is."""
    refuse_undecodable_path(folder, "cannot spill to the temporary folder", "give a folder named in UTF-8",
                            error=error)


def refuse_undecodable_spark_settings(master: str | None, conf: Mapping[str, str], named: str = "",
                                      error: type[InputError] = InputError) -> None:
    """A Spark ``master`` or ``conf`` setting (its name or its value) holding bytes that are no UTF-8
    (a ``spark.local.dir`` in Latin-1, kept by Python as a lone surrogate): the session's builder
    sends each to the JVM through py4j as UTF-8, which failed once the JVM had started, as
    ``Py4JError: An error occurred while calling o0.set`` (a bug's exit; the hundred-and-first
    round). Refused before any session is sought or started, naming the setting; ``named`` says
    where the settings came from (``conf `` for ``SparkEngine(conf=…)``)."""
    given = ([("master", master)] if master is not None else []) + [(named + str(key), value)
                                                                      for key, value in conf.items()]
    for key, value in given:
        for part, what in ((key, "its name"), (str(value), "its value")):
            try:
                part.encode("utf-8")
            except UnicodeEncodeError:
                a_path = re.search(r"(dirs?|path|file)$", key.rpartition(".")[2], re.IGNORECASE) is not None
                raise error(f"cannot start the Spark session with {undecodable_shown(key)} = "
                            f"{undecodable_shown(str(value))}: {what} is not UTF-8 (a byte of another encoding is "
                            f"shown as \\xNN), and Spark takes its settings as UTF-8 text: "
                            f"{'give a path named in UTF-8' if a_path and what == 'its value' else 'give it in UTF-8'}"
                            ) from None


def undecodable_shown(path: str | PurePath) -> str:
    """A path as its bytes spell it, a byte that is no UTF-8 escaped (``in\\xe9.csv``, not Python's
    ``in\\udce9.csv``)."""
    try:
        return os.fsencode(path).decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no file name's byte gives (a dict's "\\ud800"): as written
        return str(path).encode("utf-8", "backslashreplace").decode("ascii")


def special_file(path: Path) -> str | None:
    """What ``path`` is when it is neither a regular file (a link to one counts) nor a folder nor
    missing: a pipe or device, which gives its bytes once. A hierarchy is read for its rows and its
    sha256, a source several times: a FIFO blocked the run for good, a source one was "empty"."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    kinds = ((stat.S_ISFIFO, "a pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return next((kind for test, kind in kinds if test(mode)), None)


def quoted(value: object, escaped: bool = False) -> str:
    """A value quoted for a message: its repr, or with every character past ASCII escaped when the
    text is not in Unicode NFC (or ``escaped``): repr writes a combining mark as it is, so a decomposed
    'ü' (u + U+0308) looked exactly like the precomposed leaf it is not."""
    if isinstance(value, str) and (escaped or not unicodedata.is_normalized("NFC", value)):
        return ascii(value)
    return repr(value)


SHOWN_CHARACTERS = 80  # the longest repr of a list (a tuple, a dict) a message quotes (``shown``)
SHOWN_TEXT = 300  # the most of a text a message quotes: a path's, a name's (a longer one is cut)
_SHOWN_SCALARS = (str, int, float, complex, bool, type(None), Decimal, PurePath, dt.date, dt.time, dt.timedelta)
_SHOWN_CONTAINERS = (list, tuple, set, frozenset, dict)


def shown(value: object, limit: int = SHOWN_CHARACTERS, text_limit: int = SHOWN_TEXT) -> str:
    """A value a user gave, as an error message shows it (``got …``): its repr when that is short
    (``limit`` characters) and made of plain values (text, numbers, booleans, None, dates, paths;
    lists, tuples, sets and dicts of them); a text past ``text_limit`` characters cut (``'abc…'
    (1204 characters)``); a long list, or any other object, by what it is (``a list of 5000
    items``, ``a numpy array of shape (4,)``, ``a sqlclose.Hierarchy``, ``a pandas.Series``). A
    hierarchy, an array or a DataFrame built from
    the data holds the data's values, and pydantic's ``got …`` quoted them whole: every leaf of a
    hierarchy, 99 kB of them for 5,000 leaves (review of the ninety-sixth round)."""
    if isinstance(value, (str, PurePath)):  # a path as long as a text
        text = str(value)
        return repr(value) if len(text) <= text_limit else clipped(text, text_limit, repr)
    if _plain_and_short(value, limit):
        text = repr(value)
        if len(text) <= limit:
            return text
    if isinstance(value, _SHOWN_CONTAINERS):
        return f"a {type(value).__name__} of {counted(len(value), 'item')}"
    if type(value).__module__.split(".")[0] == "numpy" and hasattr(value, "shape"):
        return f"a numpy array of shape {value.shape}" if hasattr(value, "__len__") or value.shape else \
            f"a numpy {type(value).__name__}"
    return f"a {type_name(value)}"


def clipped(text: str, limit: int = SHOWN_TEXT, head: Callable[[str], str] = str) -> str:
    """``text`` as written when it has at most ``limit`` characters, else its first ``limit``
    (written by ``head``: ``repr`` quotes them) and its length: ``abc… (1204 characters)``."""
    return text if len(text) <= limit else f"{head(text[:limit])}… ({len(text)} characters)"


def type_name(value: object) -> str:
    """A value's type as its package names it: ``dict_keys``, ``pandas.Series``."""
    module = type(value).__module__.split(".")[0]
    return type(value).__qualname__ if module == "builtins" else f"{module}.{type(value).__qualname__}"


def _plain_and_short(value: object, limit: int) -> bool:
    """Whether ``value`` is made of plain values only, and holds at most ``limit`` of them (more
    could not be quoted within ``limit`` characters)."""
    if isinstance(value, _SHOWN_SCALARS) or type(value).__module__ == "numpy" and not hasattr(value, "__len__"):
        return True
    if not isinstance(value, _SHOWN_CONTAINERS) or len(value) > limit:
        return False
    items = [*value.keys(), *value.values()] if isinstance(value, dict) else value
    return all(_plain_and_short(item, limit) for item in items)


NON_FINITE_WORDS = ("nan", "inf", "infinity")  # what float() reads as no finite number, a sign before it


def not_finite(text: str) -> str:
    """That a number, quoted as typed, is not finite: ``nan``, ``inf``, or digits past what a float
    holds (``1e400`` is read as inf: "t = inf is out of range (t ≥ 0)" contradicted itself, and
    quoted a value nobody typed: the ninety-sixth round)."""
    past = text.strip().lstrip("+-").lower() not in NON_FINITE_WORDS
    return f"{text} is not a finite number{' (beyond what a float holds, ±1.8e308)' if past else ''}"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun`` for a message, the noun in the plural (``plural``, else ``noun`` + "s")
    unless ``n`` is 1: "1 value", "2 values", "0 values", "1 class", "3 classes"."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def named(noun: str, names: Iterable[object], plural: str | None = None) -> str:
    """``noun`` before the names it counts, agreeing with them: "column 'age'", "columns 'a', 'b'"."""
    names = list(names)
    return f"{noun if len(names) == 1 else plural or noun + 's'} {', '.join(map(name_shown, names))}"


NAME_HEAD, NAME_TAIL = 60, 20  # what a message quotes of a name past NAME_HEAD + NAME_TAIL + 20 characters
NAME_CUT = NAME_HEAD + NAME_TAIL + 20  # the longest name a message prints whole (``name_shown``, ``name_cut``)


def name_shown(name: object) -> str:
    """A column's (or file's) name quoted for a message: its repr, or, past ``NAME_HEAD + NAME_TAIL +
    20`` characters, its first ``NAME_HEAD`` and last ``NAME_TAIL`` with an ellipsis between, and its
    length: ``'aaa…zzz' (100,000 characters)``. A 100,000-character name a spec gave was printed whole,
    100 kB of one error line (ninety-ninth round); its ends and length still tell it from the names
    beside it."""
    if not isinstance(name, str) or len(name) <= NAME_CUT:
        return repr(name)
    return f"{repr(name[:NAME_HEAD] + '…' + name[-NAME_TAIL:])} ({len(name):,} characters)"


def name_cut(name: object) -> str:
    """A name printed unquoted in a message (``node age=2``, ``privacy.sensitive.disease.t``, ``(table
    sales)``): the name itself up to ``NAME_CUT`` characters, else cut as ``name_shown`` cuts it, without
    its quotes: ``aaa…zzz (100,000 characters)``. Printed whole, a 100,000-character name made 100 kB of
    one error line (the hundredth round)."""
    text = str(name)
    if len(text) <= NAME_CUT:
        return text
    return f"{text[:NAME_HEAD]}…{text[-NAME_TAIL:]} ({len(text):,} characters)"


def cut_in_advice(name: object) -> str:
    """What follows advice (a TOML line, SQL) that prints a name by ``name_cut``: nothing for a name
    printed whole; for one cut, that it is cut, so the advice is not copied as it is and fails."""
    return "" if len(str(name)) <= NAME_CUT else " (the name is cut here: write it whole)"


def given_items(given: object) -> list:
    """A caller's names or values (``check``'s quasi-identifiers, a sweep's ks or metrics) as a list:
    None as none; a text (or bytes, a bytearray), or a single number, as one item ("zip" was read as 'z', 'i', 'p');
    a set in sorted order, its own being no one's (the same report every run); any other iterable in
    its order: a list, a tuple, a pandas Index, a numpy array, whose truth value ``given or []``
    asked, which pandas and numpy refuse to give (the ninety-sixth round). numpy's text items come
    as plain ``str``: numpy 2 shows one as ``np.str_('zip')`` in a message."""
    if given is None:
        return []
    if isinstance(given, (str, bytes, bytearray)) or not hasattr(given, "__iter__"):
        items = [given]
    elif isinstance(given, (set, frozenset)):
        items = sorted(given, key=repr)
    else:
        items = list(given)
    return [str(item) if isinstance(item, str) else item for item in items]


def named_once(names: Sequence[object], option: str) -> None:
    """Refuse a column named twice in ``option`` (``--qi zip,zip``; ``--sensitive disease,disease``
    and ``--hierarchy disease=A --hierarchy disease=B``, which kept one of the two silently: the
    ninety-fourth round), naming the option as the caller gave it."""
    twice = next((name for i, name in enumerate(names) if name in names[:i]), None)
    if twice is not None:
        raise OptionError(option, f"names {name_shown(twice)} twice; name each column once")


def agreeing(n: int, one: str, many: str) -> str:
    """The verb of a count of ``n`` things: ``one`` ("is", "has") for 1, ``many`` ("are", "have") else."""
    return one if n == 1 else many


def unicode_twins(values: Iterable[object], texts: Iterable[str]) -> dict[str, str]:
    """Each of ``values`` that differs from one of ``texts`` only in its Unicode form (equal once both
    are in NFC), with that text: an ASCII value too (the Kelvin sign U+212A is 'K' in NFC)."""
    values = [v for v in values if isinstance(v, str)]
    by_form = {unicodedata.normalize("NFC", t): t for t in texts}
    twins = {v: by_form.get(unicodedata.normalize("NFC", v)) for v in values}
    return {v: t for v, t in twins.items() if t is not None and t != v}


def without_format_characters(text: str) -> str:
    """``text`` without its invisible characters: format characters (Unicode category Cf: U+FEFF,
    U+200B, …) and control characters that are no white space (U+0007, U+0000: a tab, a CR or a
    line break is told as a space is, ``attributes._near_leaves``)."""
    return "".join(ch for ch in text
                   if unicodedata.category(ch) != "Cf" and (unicodedata.category(ch) != "Cc" or ch.isspace()))


def format_twins(values: Iterable[object], texts: Iterable[str]) -> dict[str, str]:
    """Each of ``values`` that differs from one of ``texts`` only by invisible characters (a
    byte-order mark U+FEFF left at a file's start, a zero-width space, a control character), with
    that text."""
    values = [v for v in values if isinstance(v, str)]
    bare = {without_format_characters(t): t for t in texts}
    twins = {v: bare.get(without_format_characters(v)) for v in values}
    return {v: t for v, t in twins.items() if t is not None and t != v}


# What the values ``format_twins`` finds differ by, and what to do (a QI's value shown, a sensitive one counted).
FORMAT_CHARACTERS_ADVICE = ("(such as U+FEFF, a byte-order mark, U+200B, a zero-width space, or a control character "
                            "such as U+0007): remove them from the data or the hierarchy")


def format_characters_hint(value: str, leaf: str, others: int = 0) -> str:
    """Why ``value`` is not the leaf it looks like: escaped, its invisible characters show."""
    alike = f" ({counted(others, 'more value')} alike)" if others else ""
    return (f"{ascii(value)} differs from the leaf {ascii(leaf)} only by invisible characters{alike} "
            f"{FORMAT_CHARACTERS_ADVICE}")


def unicode_form_hint(value: str, leaf: str, line: int | None = None, others: int = 0) -> str:
    """Why ``value`` is not the leaf ``leaf`` it looks like (they differ only in Unicode form), both
    escaped so the difference shows, and how to make them one form: a line typed again for the value
    is the leaf's, refused as a duplicate. ``line``: the leaf's line in its file; ``others``: how many
    more values are alike."""
    where = f" (line {line})" if line is not None else ""
    alike = f" ({counted(others, 'more value')} alike)" if others else ""
    return (f"{ascii(value)} differs from the leaf {ascii(leaf)}{where} only in its Unicode form{alike}, and text "
            "is compared code point by code point: write the data and the hierarchy in one form, NFC (a [source] "
            "query's nfc_normalize(column) normalizes the column)")


_BARE_VARIABLE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def unexpanded_hint(path: object) -> str:
    """For a missing file whose path holds ``$NAME`` (a shell's form): that a spec expands only
    ``${NAME}``, said where the file is not found (a '$' may be a file name's own)."""
    found = _BARE_VARIABLE.search(str(path))
    return "" if found is None else (f" (a spec expands ${{{found[1]}}}, not ${found[1]}: write "
                                     f"${{{found[1]}}} to read the environment variable)")
