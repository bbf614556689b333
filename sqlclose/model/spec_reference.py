"""The spec reference, generated from the validation models: ``python -m sqlclose.model.spec_reference
> docs/spec-reference.md``. A test keeps the committed file equal to this output, so the reference
cannot drift from what ``load_spec`` accepts.

Sections, keys, types, defaults and constraints come from the pydantic models of
``sqlclose.model.spec``; each section's text is its model's docstring; each key's meaning is its
``Field`` description, else the line of ``MEANINGS`` below (a test requires one for every key).
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Iterable
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from sqlclose.model import spec as s


def _listed(keys: Iterable[str], last: str = "") -> str:
    """``a``, ``b``, ``c`` as the reference writes keys (``last``: the word before the last one)."""
    shown = [f"`{key}`" for key in keys]
    return ", ".join(shown) if not last or len(shown) < 2 else f"{', '.join(shown[:-1])} {last} {shown[-1]}"


# The keys that say where a hierarchy comes from, as the models accept them (so the sentence below
# cannot leave one out): "hierarchy" is Python's ready hierarchy, and a sensitive column's lists its
# values (no rule).
_HIERARCHY_KEYS = [key for key in s.HIERARCHY_SOURCES if key != "hierarchy"]
_LISTING_KEYS = [key for key in _HIERARCHY_KEYS if key not in s.RULES]

# (section heading, model, how the section is written in TOML)
SECTIONS: list[tuple[str, type[BaseModel], str]] = [
    ("Top level", s.Spec, "Keys before the first table."),
    ("[source]", s.Source, "Written as `[source]`."),
    ("[output]", s.Output, "Written as `[output]`."),
    ("[privacy]", s.Privacy, "Written as `[privacy]`; `k` and `suppression` may also be top-level keys."),
    ("[quasi_identifiers]", s.QuasiIdentifier, "Written as `<column> = { … }` under `[quasi_identifiers]` (a "
     "string is a hierarchy file): the hierarchy keys below, plus these."),
    ("[sensitive.<column>]", s.Sensitive, "Written as `[sensitive.<column>]`, one section per sensitive column."),
    ("Hierarchy keys", s.HierarchySpec, f"Of a quasi-identifier (a string is a file): exactly one of "
     f"{_listed(_HIERARCHY_KEYS)}. As `hierarchy = {{ … }}` of a sensitive column (a string is a file): "
     f"{_listed(_LISTING_KEYS, 'or')}, its values listed (not a rule)."),
    ("recursive", s.Recursive, "Written as `recursive = { c = …, l = … }` in a sensitive column's section."),
    ("[search]", s.Search, "Written as `[search]`."),
    ("[engine]", s.EngineSettings, "Written as `[engine]`; not part of the spec hash."),
]
NESTED = {"quasi_identifiers", "sensitive", "privacy", "source", "output", "engine", "search"}

MEANINGS: dict[str, str] = {
    "Spec.identifiers": "Columns dropped from the release (direct identifiers).",
    "Spec.others": "Columns that are neither identifier, quasi-identifier nor sensitive: \"keep\" or \"drop\"; "
                   "unset, such columns are refused and listed.",
    "Spec.quasi_identifiers": "Per quasi-identifier column, its hierarchy (section [quasi_identifiers]).",
    "Spec.sensitive": "Per sensitive column, its privacy models (section [sensitive.<column>]).",
    "Spec.privacy": "The requirement (section [privacy]); required.",
    "Spec.source": "Where to read (section [source]); or pass a source on the command line / in Python.",
    "Spec.output": "Where to write (section [output]); or --output.",
    "Spec.engine": "Where the queries run (section [engine]); not part of the spec hash.",
    "Spec.search": "How the release is chosen (section [search]).",
    "Source.path": "A .parquet, .csv/.tsv/.txt file, a DuckDB database (.duckdb/.db/.ddb), or a folder of "
                   "Parquet files; literal unless glob = true. With query: the DuckDB database it reads.",
    "Source.query": "One SELECT (DuckDB SQL) whose result is the source; anything else is refused.",
    "Source.folder": "Where the files a query names are looked up (default: the spec file's folder).",
    "Source.table": "The table of a DuckDB database source; schema.table for another schema (a name holding a "
                    "dot in double quotes: '\"a.b\"' or 'main.\"a.b\"').",
    "Source.delimiter": "CSV delimiter, one character (default: told by the header line).",
    "Source.format": "The format, when the path's suffix does not tell it; \"warehouse\" for a table in a SQL "
                     "warehouse that sqlclose never reads (docs/warehouse.md).",
    "Source.glob": "Read path as a pattern (data/*.parquet).",
    "Source.encoding": "CSV encoding.",
    "Source.nulls": "CSV strings that mean NULL.",
    "Source.dialect": "A warehouse source's SQL dialect (docs/warehouse.md).",
    "Source.columns": "A warehouse source's columns, in order (the release query names them).",
    "Source.types": "CSV column types, e.g. { salary = \"BIGINT\" } or \"DECIMAL(12, 2)\"; undeclared columns are "
                    "read as text; a number the type would change (a fraction as BIGINT, decimals past the scale) "
                    "is refused; a name that is not a column of the file is refused. On a warehouse source: the "
                    "type of an ordered sensitive or banded column in a CSV histogram (e.g. DOUBLE for numeric text "
                    "such as 7000.00).",
    "Output.path": "The file to write (.parquet, .csv), the DuckDB database (.duckdb, with table), or a folder "
                   "(no suffix: a Parquet folder).",
    "Output.report": "The JSON report (default <path>.report.json; for a table <database>.<table>.report.json).",
    "Output.overwrite": "Replace an existing release (file, folder or table) and its report. A folder holding "
                        "anything but Parquet files is never replaced.",
    "Output.format": "The format; must fit a suffix that names one (writing Parquet to x.csv is an error); a path "
                     "whose suffix names none (a dated folder nightly.2026-11-30) is written in the format given. "
                     "\"sql\" is the warehouse path's release query (anonymize --histogram), written to a .sql "
                     "path only.",
    "Output.table": "The table to write in a DuckDB database output (schema.table allowed; the schema must exist; a "
                    "name holding a dot in double quotes: '\"a.b\"').",
    "Output.partition_by": "Released columns to partition a Parquet folder by.",
    "Privacy.k": "Minimum class size; required (k = 1 needs a sensitive model that some table fails).",
    "Privacy.suppression": "Fraction of rows that may be suppressed (records of failing classes).",
    "HierarchySpec.file": "An ARX hierarchy file: one line per leaf, leaf;level1;…;top.",
    "HierarchySpec.delimiter": "The file's delimiter, one character (a tab: \"\\t\").",
    "HierarchySpec.bands": "Numeric bands, finite positive widths, each a multiple of the previous, then *.",
    "HierarchySpec.origin": "Where the bands start (a finite number).",
    "HierarchySpec.mask": "Mask codes from the right: true (one character per level) or the numbers of characters.",
    "HierarchySpec.mask_char": "The masking character (refused if the column's values hold it).",
    "HierarchySpec.dates": "Dates: true (day → month → year → 5-year band → *) or the levels, e.g. "
                           "[\"month\", \"year\", \"5y\"].",
    "HierarchySpec.tree": "Nested tables with arrays of leaves.",
    "HierarchySpec.domain": "Bands and dates: [lowest, highest] value the column can hold, e.g. [0, 120] or "
                            "[\"1900-01-01\", \"2025-12-31\"]; values outside are refused. Lets the report publish "
                            "ncp, llm, nllm, wllm, wnllm (counted over the domain, not the data). A file or "
                            "tree: \"leaves\" when its leaves are the domain the column's values are drawn from "
                            "(e.g. a published code list), not read from the data; without it the report "
                            "withholds those figures.",
    "HierarchySpec.alphabet": "Mask: the characters codes are made of, e.g. \"0123456789\"; other characters are "
                              "refused. Lets the report publish ncp, llm, nllm, wllm, wnllm.",
    "HierarchySpec.length": "Mask: the codes' length in characters, e.g. 5; codes of another length are refused. "
                            "The levels then follow from the spec alone, also for a column whose codes are all "
                            "in suppressed rows.",
    "HierarchySpec.hierarchy": "A ready sqlclose.Hierarchy (Python only).",
    "QuasiIdentifier.nulls": "NULLs: \"error\", \"drop\" (remove those rows) or \"value\" (NULL is null_value).",
    "QuasiIdentifier.null_value": "The value NULL stands for with nulls = \"value\" (refused if it is also a "
                                  "real value of the column, or a label its bands, dates or mask rule writes "
                                  "below the top).",
    "Sensitive.distance": "t-closeness distance: ordered, equal, hierarchical (EMD); variational, kl (not EMD).",
    "Sensitive.t": "t-closeness threshold, in [0, 1] (KL: any ≥ 0).",
    "Sensitive.hierarchy": "Hierarchy of the values (file or tree): required for hierarchical.",
    "Sensitive.distinct_l": "Distinct l-diversity.",
    "Sensitive.entropy_l": "Entropy l-diversity (may be fractional).",
    "Sensitive.recursive": "Recursive (c, l)-diversity.",
    "Sensitive.p": "p-sensitivity: p distinct values per class.",
    "Sensitive.nulls": "NULLs: \"error\", \"drop\" or \"value\" (not for ordered).",
    "Sensitive.null_value": "The value NULL stands for with nulls = \"value\" (refused if it is also a real "
                            "value of the column).",
    "Recursive.c": "The constant c: r1 < c · (r_l + … + r_m).",
    "Recursive.l": "The l.",
    "Search.algorithm": "incognito (full-domain) or gaa (greedy multidimensional recoding).",
    "Search.metric": "What least information lost means (discernibility for Incognito, nllm for GAA by default).",
    "Search.explore": "Incognito: only what the optimum needs (optimum, the default) or every node (lattice: "
                      "Release.minimal_nodes lists every minimal node, for the operator; the same release, slower "
                      "under suppression).",
    "Search.strategy": "GAA's merge-partner strategy (default S1), in any case (\"s3\" is S3).",
    "Search.scope": "GAA's scope: \"table\" or \"class\" (default table).",
    "Search.weights": "Custom metric: per quasi-identifier, one weight per level step or a weight per edge.",
    "EngineSettings.name": "duckdb or spark.",
    "EngineSettings.threads": "DuckDB threads.",
    "EngineSettings.memory_limit": "Memory the whole job may use, e.g. \"2GB\": of what the interpreter's 250 MB "
                                   "leave, DuckDB gets 60 % (and spills to disk past it), the search's Python side "
                                   "20 %. A number and its unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB, in any "
                                   "case), above 0 bytes, at most 1 EiB.",
    "EngineSettings.temp_directory": "Where DuckDB spills; not at or inside the output path.",
    "EngineSettings.master": "Spark's master, e.g. \"local[2]\"; `${VAR}` and `${VAR:-default}` expand from the "
                             "environment, as in paths.",
    "EngineSettings.conf": "Spark session settings; `${VAR}` and `${VAR:-default}` in a value expand from the "
                           "environment, as in paths; Spark's own `${env:…}`, `${system:…}`, `${spark.…}` are refused.",
}


def own_fields(model: type[BaseModel]) -> dict[str, FieldInfo]:
    """The model's keys; a QuasiIdentifier shows only what it adds to a hierarchy's keys."""
    fields = {name: f for name, f in model.model_fields.items()}
    if model is s.QuasiIdentifier:
        fields = {name: f for name, f in fields.items() if name not in s.HierarchySpec.model_fields}
    return fields


def meaning(model: type[BaseModel], name: str, info: FieldInfo) -> str | None:
    return info.description or MEANINGS.get(f"{_owner(model, name)}.{name}")


def _owner(model: type[BaseModel], name: str) -> str:
    for cls in model.__mro__:
        if isinstance(cls, type) and issubclass(cls, BaseModel) and name in getattr(cls, "__annotations__", {}):
            return cls.__name__
    return model.__name__


def type_text(annotation: Any) -> str:
    """A TOML-minded type: text, integer, number, boolean, path, list of …, table of …, one of …."""
    origin = get_origin(annotation)
    args = [a for a in get_args(annotation) if a is not type(None)]
    if origin is Annotated:  # StrictBool: a boolean, pydantic's strictness aside
        return type_text(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return " or ".join(dict.fromkeys(type_text(a) for a in args))
    if origin is Literal:
        return "one of " + ", ".join(f'"{a}"' for a in args)
    if origin is list:
        return f"list of {type_text(args[0])}"
    if origin is dict:
        return f"table of {type_text(args[1])}"
    names = {str: "text", int: "integer", float: "number", bool: "boolean"}
    if annotation in names:
        return names[annotation]
    if annotation is Any:
        return "any"
    name = getattr(annotation, "__name__", str(annotation))
    return {"Path": "path", "Hierarchy": "Hierarchy (Python)", "HierarchySpec": "hierarchy",
            "Recursive": "{ c, l }", "QuasiIdentifier": "hierarchy", "Sensitive": "models"}.get(name, name)


def default_text(info: FieldInfo) -> str:
    if info.default_factory is not None:
        value = info.default_factory()
    elif info.default is PydanticUndefined:
        return "required"
    else:
        value = info.default
    if value is None:
        return "unset"
    if isinstance(value, BaseModel):
        return "its defaults"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value).replace("'", '"')


def constraint_text(info: FieldInfo) -> str:
    words = []
    for item in info.metadata:
        for attr, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            if isinstance(item, getattr(annotated_types, attr.capitalize())):
                words.append(f"{sign} {getattr(item, attr)}")
        pattern = getattr(item, "pattern", None)
        if pattern:
            words.append(f"matches `{pattern}`")
    return ", ".join(words)


def _doc(model: type[BaseModel]) -> str:
    return " ".join(inspect.cleandoc(model.__doc__ or "").split())


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def reference() -> str:
    lines = ["# Spec reference", "",
             "Generated from the validation models (`sqlclose/model/spec.py`) by "
             "`python -m sqlclose.model.spec_reference > docs/spec-reference.md`; a test keeps this file equal "
             "to that output. How to write a spec, with examples: [spec.md](spec.md).", ""]
    for heading, model, written in SECTIONS:
        lines += [f"## {heading}", "", written, "", _doc(model), "",
                  "| key | type | default | constraints | meaning |", "|---|---|---|---|---|"]
        for name, info in own_fields(model).items():
            shown = "(sections below)" if model is s.Spec and name in NESTED else type_text(info.annotation)
            lines.append(f"| `{name}` | {_cell(shown)} | {_cell(default_text(info))} | "
                         f"{_cell(constraint_text(info)) or ''} | {_cell(meaning(model, name, info) or '')} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    print(reference(), end="")
