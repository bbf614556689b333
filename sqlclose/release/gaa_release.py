"""A GAA release: multidimensional recoding written, verified and reported like any release.

GAA's result is a mapping from each QI leaf combination to its generalized labels (levels may
differ between classes and columns). The mapping is registered as a table and joined in the
release query (``queries.release_mapped``); writing, the transaction, the independent re-check
from the written file and the report are ``Release``'s. The re-check receives the mapping as
text (leaves → labels) and proves it only generalizes (every label is its leaf or an ancestor)
and that the file is the input recoded by it; privacy is measured on the file as for any release.
GAA never suppresses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from sqlglot import exp

from sqlclose.errors import InputError
from sqlclose.model.classes import ClassHistograms
from sqlclose.model.lattice import GAA_HAS_NO_NODES, Node
from sqlclose.prepare.release_query import written_as_given
from sqlclose.release.release import MAX_LABELS_SHOWN, Release, t_against_release
from sqlclose.release.report import GaaSummary, Generalization, privacy_section, shown_labels
from sqlclose.release.utility_section import multidimensional_utility
from sqlclose.release.verify import recheck_relation
from sqlclose.search.gaa import release_mapping
from sqlclose.search.gaa_run import GaaRun
from sqlclose.sql import queries as q
from sqlclose.utility.metrics import average_class_size


def suppression_unused(limit: float) -> list[str]:
    """GAA never suppresses: a spec's suppression limit is not used, and the user is told so."""
    if limit > 0:
        return [f"GAA does not suppress records: the suppression limit ({limit:g}) was not used; every input row "
                "is released"]
    return []


@dataclass(repr=False)  # Release's own repr
class GaaRelease(Release):
    """The result of ``sqlclose.anonymize`` with ``[search] algorithm = "gaa"``."""

    gaa_run: GaaRun | None = None
    _mapping_table: exp.Table | None = None
    _instants: dict[int, dict[str, str]] | None = None  # ``_written_instants``
    _read_back: dict[int, exp.Table] | None = None  # ``_as_leaves``' tables

    # ---- no lattice -------------------------------------------------------------------------
    @property
    def node(self) -> None:
        """None: no one node holds every class (``Release.node``)."""
        return None

    @property
    def minimal_nodes(self) -> None:
        """None, as for a lattice not decided: GAA has none (``[]`` read as "no node satisfies")."""
        return None

    def at(self, node: dict[str, int] | Node) -> Release:
        raise InputError(GAA_HAS_NO_NODES)

    # ---- classes ------------------------------------------------------------------------------
    def _classes(self) -> tuple[ClassHistograms, np.ndarray]:
        if self._hist is None:
            run = self.gaa_run
            classes = run.result.classes
            counts = []
            for h in run.data.extra or []:
                out = np.zeros((classes, h.shape[1]))
                np.add.at(out, run.result.class_of, h)
                counts.append(out)
            self._hist = ClassHistograms(np.zeros((classes, 0), dtype=np.int64), run.result.sizes.astype(np.int64),
                                         counts)
            self._failing = np.zeros(classes, dtype=bool)
        return self._hist, self._failing

    @property
    def summary(self) -> dict[str, Any]:
        hist, failing = self._classes()
        kept = ~failing
        p = self.problem
        sizes = hist.sizes
        return {
            "t_against_release": t_against_release(p, hist, kept),
            "classes": hist.classes,
            "suppressed_rows": 0,
            "rows": p.rows,
            "privacy": privacy_section(self.criteria, hist, kept, p.k, p.suppression),
            "utility": {
                "discernibility": int((sizes.astype(np.int64) ** 2).sum()),
                "average_class_size": average_class_size(p.rows, hist.classes),
                **multidimensional_utility(p, self.selection, self.gaa_run, hist),
            },
        }

    # ---- the data -----------------------------------------------------------------------------
    def _mapping(self) -> pa.Table:
        """The mapping the release query joins to: the labels as written (``_written_instants``)."""
        mapping = release_mapping(self.gaa_run.data, self.gaa_run.result)
        for j in self._written_instants():
            name = f"q{j}_label"
            levels = mapping.column(f"q{j}_level").to_pylist()
            labels = [self._as_written(j, level, text) for text, level in zip(mapping.column(name).to_pylist(), levels)]
            mapping = mapping.set_column(mapping.column_names.index(name), name, pa.array(labels, pa.string()))
        return mapping

    def _written_instants(self) -> dict[int, dict[str, str]]:
        """Per quasi-identifier holding a ``TIMESTAMP WITH TIME ZONE``, its values' texts (its leaves)
        that GAA writes otherwise as labels, each with the text it writes: one naming its instant
        (``Engine.instants_as_written``), in the session's zone, offset and all. Spark's text of an
        instant is a wall time with no offset (UTC's, where its statements run): written as the
        session's wall time was, a New York session's 1980-01-01 00:00 UTC read back as 19:00 UTC
        (review of the ninety-seventh round). Empty on DuckDB, whose text has its offset."""
        if self._instants is None:
            self._instants = {}
            types = self.qi_types
            for j, qi in enumerate(self.problem.qis):
                kind = types.get(qi.name)
                if kind is None or not pa.types.is_timestamp(kind) or kind.tz is None:
                    continue
                leaves = list(qi.hierarchy.labels(0))
                named = self.problem.engine.instants_as_written(leaves, source=self.problem.source, column=qi.name)
                changed = {leaf: text for leaf, text in zip(leaves, named) if text != leaf}
                if changed:
                    self._instants[j] = changed
        return self._instants

    def _as_written(self, j: int, level: int, label: str) -> str:
        """Quasi-identifier ``j``'s ``label`` at ``level`` as the file holds it: a leaf's instant as GAA
        writes it (``_written_instants``), any other label as it is."""
        return self._written_instants().get(j, {}).get(label, label) if level == 0 else label

    def _as_leaves(self, written: exp.Expression) -> exp.Expression:
        """The written file with each instant's written text (``_written_instants``) read as its leaf,
        the text the mapping and the hierarchy hold, for the re-check: a renaming one-to-one, so what
        the re-check proves of the file so read it proves of the file as written. A text that is no
        leaf's written one (a value altered) stays as it is, and fails as such."""
        changed = self._written_instants()
        if not changed:
            return written
        engine = self.problem.engine
        if self._read_back is None:
            self._read_back = {}
            with self._recording():
                for j, pairs in changed.items():
                    name = engine.temp_name("gaa_instants")
                    engine.load(name, pa.table({"written": pa.array(list(pairs.values()), pa.string()),
                                                "leaf": pa.array(list(pairs), pa.string())}))
                    self._read_back[j] = q.table(name)
        by_name = {self.problem.qis[j].name: j for j in changed}
        select = exp.select().from_(exp.alias_(written.copy(), "w", table=True) if isinstance(written, exp.Table)
                                    else written.copy().as_("w"))
        for name in engine.schema(written).names:
            value: exp.Expression = exp.column(name, "w", quoted=True)
            if name in by_name:
                alias = f"n{by_name[name]}"
                select = select.join(exp.alias_(self._read_back[by_name[name]].copy(), alias, table=True),
                                     join_type="left", on=exp.EQ(this=exp.column("written", alias), expression=value))
                value = exp.Coalesce(this=exp.column("leaf", alias), expressions=[value.copy()])
            select = select.select(exp.alias_(value, exp.to_identifier(name, quoted=True)))
        return select.subquery()

    def _query(self, dictionaries: bool = False) -> tuple[Any, list]:
        """The release query; its labels stay text whatever the write (``dictionaries``): they come
        from a per-run mapping, at several levels per column."""
        self._require_open()
        params = q.Params()
        ties, rewrites = written_as_given(self.problem, None)
        query = q.release_mapped(self.problem.source, self.columns, [qi.coded for qi in self.problem.qis],
                                 self._mapping_relation(), params, ties=ties, rewrites=rewrites,
                                 looked_up=self.problem.engine.looked_up)
        return query, params.values

    def _own_tables(self) -> None:
        self._mapping_relation()

    def _mapping_relation(self) -> exp.Table:
        """The run's mapping, registered once for all the release's queries."""
        if self._mapping_table is None:
            name = self.problem.engine.temp_name("gaa_mapping")
            # Loaded, not registered: the engine knows its labels hold no NULL, and a Parquet write makes
            # them required, as every generalized column is (queries.given_as_is).
            with self._recording():
                self.problem.engine.load(name, self._mapping())
            self._mapping_table = q.table(name)
        return self._mapping_table

    def text_mapping(self) -> pa.Table:
        """The recoding as text: per distinct QI combination, each QI's value (``l0``, ``l1``, … in
        QI order) and the label the release writes for it (``g0``, …), an instant's written text
        (``_written_instants``) as its leaf, as the re-check reads the file (``_as_leaves``).
        Aggregated values only."""
        mapping = self._mapping()
        data = self.gaa_run.data
        instants = self._written_instants()
        text = {}
        for j, qi in enumerate(self.problem.qis):
            text[f"l{j}"] = pa.array(np.asarray(qi.hierarchy.leaves, dtype=object)[data.leaves[:, j]], pa.string())
            text[f"g{j}"] = mapping.column(f"q{j}_label")
            if j in instants:  # the renaming is one-to-one: its inverse
                leaf_of = {written: leaf for leaf, written in instants[j].items()}
                text[f"g{j}"] = pa.array([leaf_of.get(t, t) for t in text[f"g{j}"].to_pylist()], pa.string())
        return pa.table(text)

    def _recheck_relation(self, written: exp.Expression) -> dict:
        return recheck_relation(self.problem, self._as_leaves(written), self.text_mapping())

    # ---- the report ---------------------------------------------------------------------------
    def _search_section(self) -> dict:
        run = self.gaa_run
        return {"algorithm": "gaa", "node": None, "lattice": None,
                "gaa": GaaSummary(metric=self.selection.metric_name, strategy=run.strategy, scope=run.scope,
                                  strategy_column=run.strategy_column, seconds=round(run.result.seconds, 4))}

    def _warnings(self) -> list[str]:
        return suppression_unused(self.problem.suppression)

    @property
    def generalization(self) -> dict[str, Generalization]:
        """Per quasi-identifier: how many classes sit at each level, and the labels used."""
        result = self.gaa_run.result
        first = np.unique(result.class_of, return_index=True)[1]  # one combination per class
        types = self.qi_types
        out = {}
        for j, qi in enumerate(self.problem.qis):
            h = qi.hierarchy
            levels = result.levels[first, j]
            labels = result.labels[first, j]
            pairs = [(int(lv), h.labels(int(lv))[int(i)]) for lv, i in zip(levels, labels)]
            used = shown_labels([(lv, self._as_written(j, lv, text)) for lv, text in pairs], types.get(qi.name))
            per_level = {str(int(lv)): int(n) for lv, n in zip(*np.unique(levels, return_counts=True))}
            out[qi.name] = Generalization(level=None, levels=h.levels, labels=used[:MAX_LABELS_SHOWN],
                                          label_count=len(used), at_top=bool((levels == h.levels - 1).all()),
                                          classes_per_level=per_level)
        return out
