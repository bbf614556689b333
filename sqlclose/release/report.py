"""The release report as a typed model: one place that says what a report holds and means.

The report is published beside the release (docs/what-a-release-reveals.md says why that is
safe). Its JSON schema is generated from this model into docs/report-schema.json
(``python -m sqlclose.release.report``) and a test keeps the two equal. ``schema_version`` changes
whenever a field changes meaning or goes away; new fields add a minor version.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, model_serializer

from sqlclose.model.classes import ClassHistograms
from sqlclose.privacy.criteria import Criterion, TCloseness

# 8: a table output's content_digest is sha256-rows-v2; 8.1: warehouse.verification_models; 8.2: input.path
SCHEMA_VERSION = "8.2"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InputSummary(_Model):
    source: str = Field(description="The source's path or kind (as given), for the operator.")
    path: str | None = Field(None, description="The file, folder or pattern the rows were read from, as given (a "
                             "file source's, a [source] query's path); null for a source that is no path (a "
                             "DataFrame, an Arrow table, a DuckDB relation or table, Spark's). What a page or an "
                             "output must not replace: `source` is words, which a file's name may spell. Absent "
                             "from reports before 8.2.")
    rows: int = Field(description="Rows read from the source.")
    fingerprint: str | None = Field(description="Keyed fingerprint of the input's rows (in any order) and its "
                                    "columns' names and types, as fingerprint_kind says: keyed-hmac-typed-v3 "
                                    "(DuckDB), HMAC-SHA256 under the operator's key of a typed digest of the rows; "
                                    "keyed-md5-sum-v2 (Spark), a sum over rows of a keyed hash of their text "
                                    "(sql/fingerprint.sql), then, after a colon, a keyed hash of the columns. Null "
                                    "without the operator's key. Without the key nobody can test a guessed row "
                                    "against it.")
    fingerprint_kind: str | None = Field(description="How the fingerprint was computed (versioned).")
    dropped_null_rows: int = Field(description="Rows removed by nulls = \"drop\" before anything else.")


class Lattice(_Model):
    """The lattice searched, as the spec and hierarchies make it. Which of its other nodes satisfy
    (the minimal ones, how many) and how many the search evaluated are not here: whether a finer
    node satisfies is a fact of raw values the release hides (one row's hidden value told by the
    minimal nodes alone: docs/what-a-release-reveals.md). ``Release.minimal_nodes`` gives them
    to the operator."""

    levels: dict[str, int] = Field(description="Hierarchy levels per quasi-identifier (level 0 = raw value).")
    size: int = Field(description="Nodes in the full-domain generalization lattice.")
    complete: bool = Field(True, description="Every node was decided ([search] explore = \"lattice\", or a metric "
                           "other than discernibility). False when exploring for the optimum alone (the default) left "
                           "alone nodes that could not be the optimum.")
    searched: bool = Field(True, description="False when the node was given (--node, anonymize(node=…)) and "
                           "satisfied as measured alone: no search ran, and nothing else of the lattice was decided.")
    seconds: float = Field(description="Search time (0 when no search ran).")


class Generalization(_Model):
    level: int | None = Field(description="The chosen level (0 = raw values); null for a multidimensional (GAA) "
                              "release, whose classes sit at several levels (see classes_per_level).")
    levels: int = Field(description="Levels of the hierarchy.")
    labels: list[str] = Field(description="Labels used in the release at the chosen level (at most 20 shown).")
    label_count: int = Field(description="How many distinct labels the release uses.")
    at_top: bool = Field(description="Generalized to the top: the column carries no information any more.")
    classes_per_level: dict[str, int] | None = Field(None, description="GAA: how many released classes hold this "
                                                     "column at each level (keys are levels).")

    @model_serializer(mode="wrap")
    def _without_absent(self, handler: Any) -> dict[str, Any]:
        out = handler(self)
        if out.get("classes_per_level") is None:
            out.pop("classes_per_level", None)
        return out


class GaaSummary(_Model):
    """How a GAA release was made (Mauger et al. 2023, Algorithm 1)."""

    metric: str = Field(description="The merge cost: one of the seven information-loss metrics, or custom.")
    strategy: str = Field(description="The merge strategy: S1..S7, ldiv or tclo (Definition 17).")
    scope: str = Field(description="table (the paper's: the table's l / t value after a merge) or class.")
    strategy_column: str | None = Field(description="The sensitive column whose l-diversity / L1 values the "
                                        "strategies compare (the spec's first); null for S1, which compares "
                                        "none.")
    # No count of merges or of the distinct raw QI combinations GAA started from: both tell whether
    # two rows share their raw values, which the release hides (docs/what-a-release-reveals.md).
    seconds: float = Field(description="GAA's time.")


class SensitiveReached(_Model):
    """What one sensitive column reached, per model asked (absent keys: model not asked)."""

    distance: str | None = Field(None, description="t-closeness distance: ordered, equal, hierarchical "
                                 "(EMD), or variational, kl (not EMD).")
    t: float | None = Field(None, description="The t threshold.")
    emd: bool | None = Field(None, description="Whether the distance is an Earth Mover's Distance.")
    max_emd: float | None = Field(None, description="Largest EMD of a released class from the input's "
                                  "distribution (the guarantee).")
    max_distance: float | None = Field(None, description="Largest non-EMD distance (variational, KL).")
    withheld: str | None = Field(None, description="Why max_emd / max_distance is not given: with rows suppressed "
                                 "the input's distribution holds their values (every class is within t all the "
                                 "same; t_against_release gives the distance against the release).")
    distinct_l: dict[str, Any] | None = Field(None, description="{l, reached}: fewest distinct values in a class.")
    entropy_l: dict[str, Any] | None = Field(None, description="{l, reached}: smallest exp(entropy) of a class.")
    recursive: dict[str, Any] | None = Field(None, description="{c, l, reached}: largest r1 / (r_l + … + r_m).")
    p: dict[str, Any] | None = Field(None, description="{p, reached}: p-sensitivity, fewest distinct values.")
    null_value: str | None = Field(None, description="The value a NULL of this column counts as (the spec's "
                                   "null_value under nulls = \"value\"; the file holds NULL), with which every "
                                   "figure above was measured; absent under another NULL policy. Spec text, given "
                                   "whether or not the input held a NULL.")

    @model_serializer(mode="wrap")
    def _asked_only(self, handler: Any) -> dict[str, Any]:
        return {key: value for key, value in handler(self).items() if value is not None}


class Privacy(_Model):
    k: int = Field(description="The k required.")
    min_class_size: int = Field(description="The smallest released class.")
    suppression_limit: float = Field(description="The fraction of rows that could be suppressed.")
    sensitive: dict[str, SensitiveReached] = Field(description="Per sensitive column, the values reached.")


class SensitiveUtility(_Model):
    """Mauger et al.'s (2023, section 4.1) values of one sensitive column over the released classes."""

    l_diversity: float | None = Field(description="The paper's l-diversity value (Definition 11): the least "
                                      "exp(entropy) of a released class's sensitive values.")
    l1_closeness: float | None = Field(description="The paper's t-closeness value (Definitions 12-14): the largest "
                                       "plain L1 distance Σ|p_class − p_release| of a released class from the "
                                       "released table's distribution (the input's holds the suppressed rows' "
                                       "values), NOT halved (in [0, 2]): not an EMD.")


class Utility(_Model):
    discernibility: int = Field(description="Σ class size² + suppressed rows × input rows (lower is better).")
    average_class_size: float = Field(description="Released rows per class.")
    metric: str = Field("discernibility", description="The metric that chose the release: discernibility or one of "
                        "Mauger et al.'s distortion, ncp, total, llm, nllm, wllm, wnllm, or custom.")
    alteration: dict[str, float | None] = Field(default_factory=dict, description="Per information-loss metric "
                                                "(the seven, and custom when used): the release's cost over the "
                                                "cost of every value at the root, in % (Mauger et al. Definition "
                                                "7); null when even that costs 0, or when the figure is "
                                                "withheld (see withheld). Suppressed records count at the root.")
    mean_alteration: float | None = Field(None, description="Mean of the seven metrics' alteration (those defined).")
    withheld: dict[str, str] = Field(default_factory=dict, description="Figures left out (null above) because they "
                                     "would describe the input beyond the release, each with the reason and what "
                                     "to declare to publish it (docs/what-a-release-reveals.md).")
    generalized_percent: float | None = Field(None, description="% of (record, QI) values above level 0; "
                                              "suppressed records count as generalized (on a column whose "
                                              "hierarchy has more than one level: else its root is level 0).")
    root_percent: float | None = Field(None, description="% of (record, QI) values at the root (suppressed "
                                       "records count at the root).")
    sensitive: dict[str, SensitiveUtility] = Field(default_factory=dict, description="Per sensitive column, the "
                                                   "paper's l-diversity and L1 t-closeness values.")


class Output(_Model):
    path: str | None = Field(description="Where the release was written (for a table: the database file).")
    format: str = Field("parquet", description="parquet, csv or duckdb (a table in a DuckDB database file); sql for "
                        "the warehouse path's release query (docs/warehouse.md).")
    table: str | None = Field(None, description="The table, for a DuckDB database output.")
    rows: int = Field(description="Released rows.")
    sha256: str | None = Field(description="sha256 of the written file; the report vouches for exactly these bytes "
                               "(null for a table, which has no bytes of its own: see content_digest).")
    content_digest: str | None = Field(None, description="For a table output: sha256-rows-v2:HEX, the SHA-256 of "
                                       "the table's column names and types, then of its rows' SHA-256 digests (of each "
                                       "row as text) in sorted order: independent of row order. Reports of schema 7 "
                                       "recorded md5-sum-v1:N, a sum of MD5s that can be forged.")
    columns: list[str] = Field(description="Released columns, in order.")
    column_types: dict[str, str] | None = Field(None, description="For a CSV output: each column's type, with "
                                                "which the file is read back (numbers stay numbers); for a "
                                                "partitioned Parquet folder: its partition columns' types, which "
                                                "its folder names (text) do not keep.")
    column_roles: dict[str, str] = Field(description="Every released column with its role.")
    partition_by: list[str] | None = Field(None, description="For a Parquet folder output partitioned by columns "
                                           "(Hive folders name=value): those columns, outermost first; null "
                                           "otherwise. A rerun with another partitioning redoes the release.")


class HierarchyFile(_Model):
    path: str = Field(description="The hierarchy file the release used (absolute).")
    delimiter: str = Field(";", description="Its delimiter.")
    sha256: str | None = Field(description="Its sha256 when the release was made, keyed with the operator's secret "
                               "(HMAC-SHA256 under $SQLCLOSE_FINGERPRINT_KEY): check --against, given the key, "
                               "refuses a changed file. Null without the key: a hierarchy built from the data lists "
                               "its values, and a plain digest let anyone test guesses of a hidden row against it.")


class VerifiedModel(_Model):
    """A privacy model a column of the warehouse's verification row measures."""

    model: str = Field(description="k-anonymity, t-closeness, distinct l-diversity, p-sensitivity, entropy "
                                   "l-diversity or recursive (c,l)-diversity.")
    column: str | None = Field(description="The sensitive column (null for k-anonymity).")
    parameters: dict[str, Any] = Field(description="The model's parameters, as the spec gives them.")


class Warehouse(_Model):
    """The warehouse path (docs/warehouse.md): the release is a query the warehouse runs."""

    dialect: str = Field(description="The SQL dialect of the release and verification queries.")
    table: str = Field(description="The warehouse table the histogram counted and the release reads.")
    histogram: str = Field(description="The histogram file the search read (counts, no rows).")
    # No count of the histogram's rows: the distinct raw (QI, sensitive) combinations, which tell
    # whether two rows share their raw values (docs/what-a-release-reveals.md).
    release_query: str | None = Field(description="The file holding the release query.")
    verified_locally: bool = Field(description="Always false: sqlclose never sees the released rows.")
    note: str = Field(description="What to do instead: run the verification query in the warehouse.")
    verification_query: str | None = Field(description="The file holding the verification query (one row measured "
                                           "on the released table in the warehouse: released_rows, classes, "
                                           "min_class_size, min_distinct_s<j>, source_rows, the figures "
                                           "verification_models names, and ok last). Like the release query it "
                                           "holds raw values, so the report names it and does not hold it.")
    expected: dict[str, int] = Field(description="The values verification_query must return (the search's claims).")
    sensitive_columns: dict[str, str] = Field(description="s<j> in expected's keys → the sensitive column.")
    verification_models: dict[str, list[VerifiedModel]] = Field(
        default_factory=dict,
        description="A column of the verification row → the privacy models it measures: min_class_size "
                    "(k-anonymity), min_distinct_s<j> (distinct l-diversity, p-sensitivity), and the figures "
                    "measured in the warehouse beyond the search's claims: max_distance_s<j> (t-closeness: the "
                    "largest distance of a class), min_entropy_l_s<j> (entropy l-diversity: the smallest "
                    "exp(entropy) of a class), max_recursive_ratio_s<j> (recursive (c,l)-diversity: the largest "
                    "r1 / (r_l + … + r_m) of a class), off_hierarchy_s<j> (t-closeness with the hierarchical "
                    "distance: the released rows whose value is no leaf of the hierarchy, which must be 0). ok is "
                    "false when a class fails one of them, by the local re-check's comparison "
                    "(docs/verification.md). Absent before report schema 8.1.")


class Report(_Model):
    """The JSON report written beside every release."""

    schema_version: str = Field(SCHEMA_VERSION, description="This report's schema version.")
    sqlclose_version: str
    sqlclose_build: str | None = Field(None, description="sha256 of the sqlclose package's source files: the "
                                       "code that made the release, where the version may stay the same (a "
                                       "re-run of another build is never \"up to date\").")
    created_at: str = Field(description="UTC time the report was made.")
    spec_sha256: str | None = Field(description="Hash of the spec's resolved content (hierarchy files by content), "
                                    "the same from any working directory, keyed with the operator's secret "
                                    "(HMAC-SHA256 under $SQLCLOSE_FINGERPRINT_KEY); null without it (see "
                                    "hierarchies.*.sha256).")
    input: InputSummary
    algorithm: str = Field("incognito", description="incognito (full-domain: one level per quasi-identifier) or "
                           "gaa (multidimensional: classes at different levels).")
    node: dict[str, int] | None = Field(description="The released node: level per quasi-identifier (null for GAA).")
    node_given: bool = Field(False, description="True when the node was given (--node, Release.at) rather than "
                             "the search's optimum.")
    lattice: Lattice | None = Field(description="The lattice search (null for GAA).")
    gaa: GaaSummary | None = Field(None, description="How GAA made the release (null for Incognito).")
    generalization: dict[str, Generalization] = Field(description="Per quasi-identifier, what the release holds.")
    hierarchies: dict[str, HierarchyFile] = Field(default_factory=dict, description="Per column (quasi-identifier "
                                                  "or sensitive), the hierarchy file it used, if it came from one.")
    classes: int = Field(description="Released equivalence classes.")
    suppressed_rows: int
    privacy: Privacy
    t_against_release: dict[str, float] = Field(description="Per sensitive column with a t model: the largest "
                                                "distance of a class from the released table's own distribution "
                                                "over the values the file holds (what an auditor holding only "
                                                "the file recomputes).")
    utility: Utility
    output: Output
    warnings: list[str] = Field(description="Things a publisher should know (e.g. columns generalized to the top).")
    timings: dict[str, float]
    verified: bool = Field(description="The written file was re-read and re-checked by the independent verifier.")
    warehouse: Warehouse | None = Field(None, description="Only for a release made by the warehouse "
                                        "(sqlclose anonymize --histogram): its queries and expected values.")

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def float_label(text: str) -> str:
    """A DOUBLE quasi-identifier's value (a level-0 label) in one text on every engine, the one
    ``sqlclose check`` reads back: DuckDB's CAST AS VARCHAR, which is Python's repr of the value.
    Spark prints 1e13 as '1.0E13' and 1e-7 as '1.0E-7', which the report listed and ``check
    --against`` then refused. Text that is not a number (a NULL's stand-in) stays as it is."""
    try:
        return repr(float(text))
    except ValueError:
        return text


def shown_labels(labels: Sequence[tuple[int, str]], dtype: pa.DataType | None,
                 in_utc: Callable[[list[str]], list[str]] | None = None) -> list[str]:
    """The distinct labels of (level, label) pairs, sorted as the report lists them: a DOUBLE column's
    level-0 labels (its values) in ``float_label``'s text. A FLOAT's stay in the engine's: DuckDB's
    shortest digits of a float32 follow a rule of their own (76945696.0, not 76945700.0). A
    ``TIMESTAMP WITH TIME ZONE`` released as it is has its values as UTC writes them (``in_utc``:
    ``Engine.instants_in_utc``), as ``check --against`` reads the file in a session of its own: in a
    New York session's text they had made it refuse the untouched release (exit 4). GAA writes every
    label as its text, in the session's words (an instant's as ``Engine.instants_as_written`` names it):
    those stay, as its caller gives them."""
    double = dtype is not None and pa.types.is_float64(dtype)
    distinct = {float_label(text) if double and level == 0 else text for level, text in labels}
    if in_utc is not None and dtype is not None and pa.types.is_timestamp(dtype) and dtype.tz is not None:
        given = sorted({text for level, text in labels if level == 0})
        distinct = (distinct - set(given)) | set(in_utc(given))
    return sorted(distinct)


def privacy_section(criteria: Sequence[Criterion], hist: ClassHistograms, kept: np.ndarray, k: int,
                   suppression: float) -> dict:
    """The report's ``privacy`` section: per model, its parameters and the value reached."""
    sizes = hist.sizes[kept]
    out: dict = {"k": k, "min_class_size": int(sizes.min()) if sizes.size else 0,
                 "suppression_limit": suppression, "sensitive": {}}
    for c in criteria:
        column = getattr(c, "column", None)  # models of a sensitive attribute
        if column is None:
            continue
        entry = out["sensitive"].setdefault(column.name, {})
        values = c.reached(hist, kept)
        if isinstance(c, TCloseness):  # the core's keys, kept flat
            entry.update(distance=values["distance"], t=values["t"], emd=values["emd"])
            entry["max_emd" if values["emd"] else "max_distance"] = values["reached"] or 0.0
        else:
            entry[c.key] = values
    return out



AGAINST_THE_INPUT = ("the largest distance from the input's distribution is withheld: the input holds the "
                     "suppressed rows' sensitive values, so the figure would tell of them; every released class "
                     "is within t all the same (verified), and t_against_release gives the largest distance "
                     "against the released table's own distribution")


def published_privacy(privacy: dict, suppressed_rows: int, stand_ins: dict[str, str] | None = None) -> dict:
    """The privacy section as a report may publish it. With rows suppressed, no distance against the
    input's distribution: it holds their values (a suppressed row's flu or ulcer moved ``max_emd``,
    the release the same byte for byte). With none, the release holds every row: it is the
    release's own distribution, and the figure stands. ``stand_ins``: per sensitive column under
    nulls = "value", the value its NULLs count as (spec text), which ``check --against`` measures
    the file's NULLs as (a hierarchical column's NULL is no leaf of its hierarchy otherwise)."""
    stand_ins = stand_ins or {}
    sensitive = {name: {**entry, **({"null_value": stand_ins[name]} if name in stand_ins else {})}
                 for name, entry in privacy["sensitive"].items()}
    if suppressed_rows:
        sensitive = {name: {**{k: v for k, v in entry.items() if k not in ("max_emd", "max_distance")},
                            "withheld": AGAINST_THE_INPUT} if "t" in entry else entry
                     for name, entry in sensitive.items()}
    return {**privacy, "sensitive": sensitive}


def json_schema() -> str:
    return json.dumps(Report.model_json_schema(), indent=2) + "\n"


if __name__ == "__main__":  # python -m sqlclose.release.report > docs/report-schema.json
    print(json_schema(), end="")
