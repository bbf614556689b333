"""``${VAR}`` and ``${VAR:-default}`` in a spec's paths and Spark settings, expanded from the environment.

One job: turn a setting's text into what it means, or say which reference in it cannot be expanded
and how to write it. Every ``${`` in a value is a reference: a malformed one (``${1abc}``, ``${A:x}``,
``${HOME``) is refused, not kept as part of a file's name (it made a folder literally named
``${1abc}``; the hundred-and-second round). The result never holds ``${`` (a variable's value holding
one is refused), so expanding it again, as validating a dumped spec again does, changes nothing.
"""

from __future__ import annotations

import os
import re

from sqlclose.errors import SpecError
from sqlclose.model.text import name_shown

ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What Spark's own ConfigReader substitutes in a setting's value: ${env:NAME}, ${system:name}, and a
# setting's key (Spark's keys are dotted: ${spark.local.dir}).
SPARK_REFERENCE = re.compile(r"\$\{(?:(?:env|system):[^}\s]+|[^}\s:]+\.[^}\s]+)\}")
HOW_TO_WRITE = "write ${NAME} or ${NAME:-default} (NAME of letters, digits and _, not starting with a digit)"


def expand_env(text: str) -> str:
    """``text`` with each ``${NAME}`` and ``${NAME:-default}`` replaced by the variable's value (its
    default when unset or empty). Refused: an unset or empty variable with no default, a malformed
    reference, and a value that would hold ``${`` once expanded (validated again, it was expanded a
    second time)."""
    refuse_malformed(text)

    def sub(m: re.Match) -> str:
        name, default = m.group(1), m.group(2)
        value = os.environ.get(name)
        if value:
            if "${" in value:
                # Its value is not shown: a variable may hold a secret (a Spark setting's key).
                raise SpecError(
                    f"environment variable {name} holds ${{ in its value (used in {name_shown(text)}; the value is "
                    f"not shown): sqlclose expands a spec's ${{…}} once, not a variable's value; give {name} the text "
                    "itself, without ${")
            return value
        if default is None:
            state = "is set but empty" if value == "" else "is not set"
            raise SpecError(f"environment variable {name} {state} (used in {name_shown(text)}); set it or "
                            f"write ${{{name}:-default}}")
        return default

    expanded = ENV_VAR.sub(sub, text)
    if "${" in expanded:  # a value ending in "$" met a "{" after it: read again, it would be a reference
        raise SpecError(f"{name_shown(text)} expands to text holding ${{ (a variable's value ending in $ meets the "
                        "{ written after it; the expansion is not shown, as a variable may hold a secret): sqlclose "
                        "expands a spec's ${…} once; write the value so that its expansion holds no ${")
    return expanded


def refuse_malformed(text: str) -> None:
    """Refuse the first ``${`` in ``text`` that starts no ``${NAME}`` or ``${NAME:-default}``, saying
    what is wrong with it and how to write one."""
    at = text.find("${")
    while at >= 0:
        whole = ENV_VAR.match(text, at)
        if whole is None or "${" in (whole.group(2) or ""):
            piece, what = _what_is_wrong(text, at)
            raise SpecError(f"{piece} in {name_shown(text)} is no variable reference sqlclose can expand: {what}; "
                            f"{HOW_TO_WRITE}")
        at = text.find("${", whole.end())


def _what_is_wrong(text: str, at: int) -> tuple[str, str]:
    """The malformed reference starting at ``at`` (up to its ``}``) and what is wrong with it."""
    end = text.find("}", at)
    if end < 0:
        return name_shown(text[at:]), "it has no closing }"
    piece = text[at:end + 1]
    inner = piece[2:-1]
    if "${" in inner:
        return name_shown(piece), "a reference cannot hold another (a default is text as written)"
    if not inner:
        return name_shown(piece), "it names no variable"
    name, colon, rest = inner.partition(":")
    if colon and name in ("env", "system"):
        return name_shown(piece), f"that is Spark's form; an environment variable is written ${{{rest}}}"
    if colon and _NAME.fullmatch(name) and not rest.startswith("-"):
        return name_shown(piece), f"a default follows :- (${{{name}:-{rest}}}), not :"
    return name_shown(piece), f"{name_shown(name)} is no variable's name"
