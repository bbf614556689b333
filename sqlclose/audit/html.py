"""One self-contained HTML page a data-protection officer reads before signing a release off.

Everything comes from the published pair — the report and the released file — re-measured by the
audit path (``check``): the lattice with its chosen node, each quasi-identifier's
level and labels, class sizes against k, per sensitive column the class distances against t
and the released distribution, suppression, the attack audit and utility. Charts are PNGs
drawn by matplotlib and embedded as data URIs: the page needs no network.
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
import secrets
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sqlclose.audit.check import CheckReport, check
from sqlclose.audit.claims import L_AND_P_MODELS, REPORT_FIELDS, T_TOLERANCE, read_report
from sqlclose.audit.render import as_given
from sqlclose.errors import InputError, OutputExistsError, writing_file
from sqlclose.model.lattice import nodes_by_height_groups
from sqlclose.model.own_files import PAGE_HEAD_BYTES, PAGE_MARK
from sqlclose.model.spec import Spec, load_spec
from sqlclose.model.text import WRITTEN_NAMED_IN_UTF8, escaped_controls, refuse_undecodable_path

if TYPE_CHECKING:
    from sqlclose.against_report import ReportModels

# What the page prints of the report besides what every reader takes (``claims.REPORT_FIELDS``); a
# column's l-diversity and L1 values may be null (no class: printed "—"), never left out.
PAGE_FIELDS = (*REPORT_FIELDS, "output.sha256", "privacy.suppression_limit", "utility.discernibility",
               "utility.average_class_size", "utility.sensitive.*.l_diversity", "utility.sensitive.*.l1_closeness")
# The figures the page prints (a count's digits, "0.2963", a GAA strategy), given null or left out by no
# report sqlclose writes (a full-domain report's node and lattice levels, for each quasi-identifier).
PAGE_PRINTS = ("generalization.*.labels", "generalization.*.label_count", "generalization.*.classes_per_level.*",
               "node.*", "lattice.levels.*",
               "lattice.size", "lattice.complete", "lattice.seconds", "gaa.metric", "gaa.strategy", "gaa.scope",
               "gaa.seconds", "classes", "output.rows", "privacy.suppression_limit", "t_against_release.*",
               "utility.discernibility", "utility.average_class_size",
               *(f"privacy.sensitive.*.{model}.reached" for model in L_AND_P_MODELS))
NOT_GIVEN = "—"  # a figure the schema allows as null (l1_closeness where the file has no class)
PALETTE = {"other": "#d9d9d9", "satisfying": "#9ecae1", "minimal": "#3182bd", "chosen": "#e6550d"}


# Why a sensitive column is measured without its model when neither the spec nor the report's models are given.
NO_MODEL = ("no model was given for it: give the release's spec (--spec), or the models `sqlclose check --against` "
            "rebuilds from the report (`against_report.models_from_report`)")


def write_html(report_path: Path, out: Path, spec: Spec | str | Path | None = None,
               release_path: Path | None = None, from_report: ReportModels | None = None,
               audit: CheckReport | None = None, checked_notes: Sequence[str] = (), overwrite: bool = True) -> Path:
    """Render the page for a release and write it to ``out`` (``write_page``). ``checked_notes``: what
    the check of the release against its report could not check, said on the page (its Notes) as
    ``check --against`` says it."""
    refuse_unwritable_name(out)  # before the page is made: nothing read for a page never written
    page = render_html(report_path, spec, release_path, from_report, audit, checked_notes)
    return write_page(page, out, overwrite)


def write_page(page: str, out: Path, overwrite: bool) -> Path:
    """Write a rendered page to ``out`` atomically: to a temporary of this run's own beside it (two runs
    writing one page shared ``.NAME.tmp``), then renamed over the page (``overwrite``), else linked
    where none is: a page that appeared while this one was made is refused, not replaced. The
    temporary goes on any failure: a full disk left a truncated page beside the page for good, keeping
    the room a retry needed (the ninety-eighth round); the error names the page (``writing_file``)."""
    out = Path(out)
    refuse_unwritable_name(out)
    tmp = out.with_name(f".{out.name}.{os.getpid()}-{secrets.token_hex(6)}.tmp")
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with writing_file(out):
            tmp.write_text(page, encoding="utf-8")
            if overwrite:
                tmp.replace(out)
            else:
                _place_new(tmp, out)
    finally:  # a signal too; gone already once renamed
        tmp.unlink(missing_ok=True)
    return out


def _place_new(tmp: Path, out: Path) -> None:
    """Put ``tmp`` at ``out`` where nothing is: a hard link fails if a file appeared there since the
    page path was checked (no check-then-act window); without hard links, a checked rename."""
    appeared = OutputExistsError(f"{out} appeared while the page was being made (another run wrote it?); it was "
                                 "left as it is: pass --overwrite to replace it")
    try:
        os.link(tmp, out)
    except FileExistsError:
        raise appeared from None
    except OSError:
        if out.exists():
            raise appeared from None
        tmp.replace(out)


def refuse_unwritable_name(out: Path) -> None:
    """A page's name that is no UTF-8 was written, told as a lone surrogate (``p\\udcff.html``):
    refused as the command's ``--html`` is (the hundredth round), for a Python caller too."""
    refuse_undecodable_path(out, "cannot write the page", "give a path named in UTF-8", WRITTEN_NAMED_IN_UTF8)


def render_html(report_path: Path, spec: Spec | str | Path | None = None, release_path: Path | None = None,
                from_report: ReportModels | None = None, audit: CheckReport | None = None,
                checked_notes: Sequence[str] = ()) -> str:
    """The page's HTML. The sensitive columns are audited with the spec's models, else with those
    rebuilt from the report (``from_report``, as ``check --against`` rebuilds them); a column with no
    model is still measured (its attacks, its distribution), and the page says what its class
    distances need. ``audit``: that audit, made already by the check of the release against its
    report (the same models, k and table), not made again."""
    doc = read_report(Path(report_path), PAGE_FIELDS, PAGE_PRINTS)
    if release_path is None and doc["output"].get("format") == "sql":
        raise InputError(f"{report_path} is the report of a release query ({doc['output']['path']}), which the "
                         "warehouse runs; sqlclose never saw its rows: export the released table from the warehouse "
                         "as Parquet and pass it with --release (docs/warehouse.md)")
    release = Path(release_path or doc["output"]["path"])
    if not release.exists():  # a file, a Parquet folder, or a DuckDB database holding the table
        raise InputError(f"the release {release} named by {report_path} does not exist; pass it explicitly")
    spec = load_spec(spec) if isinstance(spec, (str, Path)) else spec
    models, unknown, notes = _models(doc, spec, from_report)
    table = doc["output"].get("table") if doc["output"].get("format") == "duckdb" else None
    if audit is None:
        audit = check(release, list(doc["generalization"]), models, k=doc["privacy"]["k"], table=table)
    return _page(doc, audit, release, unknown, [*checked_notes, *(n for n in notes if n not in checked_notes)])


def _models(doc: dict, spec: Spec | None, from_report: ReportModels | None
            ) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """The sensitive models the audit measures with, per column without one why, and the notes
    the models rest on: the spec's; else the report's (``from_report``); else none, each column
    measured without a model."""
    if spec is not None:
        return dict(spec.sensitive), {}, []
    if from_report is not None:
        return from_report.models, from_report.unknown, from_report.notes
    names = list(doc["privacy"]["sensitive"])
    return dict.fromkeys(names), dict.fromkeys(names, NO_MODEL), []


def _page(doc: dict, audit: CheckReport, release: Path, unknown: dict[str, str], notes: list[str]) -> str:
    search = _section("The lattice", _lattice_chart(doc), _lattice_text(doc)) if doc.get("lattice") else \
        _section("GAA", "", _gaa_text(doc))
    parts = [_header(doc, release), search,
             _section("Quasi-identifiers", "", _generalization_table(doc)),
             _section("Class sizes", _class_size_chart(audit.class_sizes, doc["privacy"]["k"]),
                      f"<p>{doc['classes']} classes; the smallest has {doc['privacy']['min_class_size']} rows "
                      f"(k = {doc['privacy']['k']}). {doc['suppressed_rows']} rows suppressed "
                      f"(limit {doc['privacy']['suppression_limit']:.1%}).</p>")]
    for name, reached in doc["privacy"]["sensitive"].items():
        parts.append(_section(f"Sensitive column {name}", _sensitive_charts(name, reached, audit),
                              _sensitive_text(name, reached, doc) + _unmodelled(name, unknown)))
    parts.append(_section("Attacks on the released file", "", _attacks(audit)))
    parts.append(_section("Utility", "", _utility(doc)))
    if notes:
        parts.append(_section("Notes", "", "<ul>" + "".join(f"<li>{_shown(n)}</li>" for n in notes) + "</ul>"))
    if doc.get("warnings"):
        parts.append(_section("Warnings", "", "<ul>" + "".join(f"<li>{_shown(w)}</li>" for w in doc["warnings"])
                              + "</ul>"))
    return _document(f"sqlclose release {release.name}", "\n".join(parts), _digest(doc))


def _shown(text: str) -> str:
    """``text`` (a column's name, a label, a file's) as the page shows it: HTML-escaped, its control
    and bidirectional characters written as ``\\u202e`` (``escaped_controls``). A right-to-left
    override in a name showed the rest of its paragraph reversed, the figures after it among them; a
    control character (U+0000, an escape) was no character a reader saw: the ninety-eighth round."""
    return html.escape(escaped_controls(text))


# ---- sections --------------------------------------------------------------------------------
def _header(doc: dict, release: Path) -> str:
    if doc.get("node") is not None:
        # A node given with --node / Release.at was not chosen by the search or its metric.
        chosen = ("Given node (not the search's optimum)" if doc.get("node_given") else "Chosen node") + \
            ": <strong id='chosen-node'>" + ", ".join(
            f"{_shown(k)} = {v}" for k, v in doc["node"].items()) + "</strong>"
    else:
        g = doc["gaa"]
        chosen = (f"Multidimensional recoding by <strong id='chosen-node'>GAA {_shown(g['strategy'])}</strong> "
                  f"({_shown(g['scope'])} scope, merge cost {_shown(g['metric'])})")
    verified = "verified from the written file" if doc.get("verified") else "NOT verified"
    return (f"<h1>Release {_shown(release.name)}</h1>"
            f"<p class='lead'>{chosen} — {doc['output']['rows']} of "
            f"{doc['input']['rows']} rows released, {verified}; "
            + (f"sha256 <code>{_shown(doc['output']['sha256'])}</code>.</p>" if doc["output"]["sha256"] else
               f"table {_shown(doc['output'].get('table') or '')}, content digest "
               f"<code>{_shown(str(doc['output'].get('content_digest')))}</code>.</p>"))


def _section(title: str, chart: str, text: str) -> str:
    return f"<section><h2>{_shown(title)}</h2>{text}{chart}</section>"


def _lattice_text(doc: dict) -> str:
    lat = doc["lattice"]
    if not lat.get("searched", True):  # a report before the field: searched
        done = "no search ran: the node was given, and measured alone"
    else:
        searched = "decided the whole lattice" if lat["complete"] else "explored for the optimum alone"
        done = f"the search {searched} in {lat['seconds']:.2f} s"
    return (f"<p>{lat['size']} nodes; {done}. Which other nodes satisfy "
            "is not in the report: whether a finer node satisfies tells of values the release hides.</p>")


def _gaa_text(doc: dict) -> str:
    g = doc["gaa"]
    return (f"<p>GAA (Mauger et al. 2023) merged value combinations with strategy {_shown(g['strategy'])} "
            "and merge cost "
            f"{_shown(g['metric'])}, in {g['seconds']:.2f} s. Classes sit at different levels; GAA suppresses "
            "nothing.</p>")


def _level_text(g: dict) -> str:
    if g.get("level") is not None:
        return f"{g['level']} of {g['levels'] - 1}"
    per_level = g.get("classes_per_level") or {}
    # "(of 5)" after the counts read as the classes' total; it is the hierarchy's top level
    said = ", ".join(f"level {lv}: {n} class{'' if n == 1 else 'es'}" for lv, n in per_level.items())
    return _shown(said) + f" (levels 0–{g['levels'] - 1})"


def _generalization_table(doc: dict) -> str:
    rows = []
    for name, g in doc["generalization"].items():
        labels = ", ".join(g["labels"][:8]) + (" …" if g["label_count"] > 8 else "")
        rows.append(f"<tr><td>{_shown(name)}</td><td>{_level_text(g)}</td>"
                    f"<td>{g['label_count']}</td><td>{_shown(labels)}</td></tr>")
    return ("<table><tr><th>column</th><th>level</th><th>labels</th><th>examples</th></tr>" + "".join(rows)
            + "</table>")


def _sensitive_text(name: str, reached: dict, doc: dict) -> str:
    items = []
    if "t" in reached:
        value = reached.get("max_emd", reached.get("max_distance"))
        shown = ("withheld from the report: the input holds the suppressed rows' values" if value is None
                 else f"<strong class='privacy-value'>{value:.4f}</strong>")
        distance = _shown(reached.get("distance") or NOT_GIVEN)
        within = value is None or reached["t"] is None or value <= reached["t"] + T_TOLERANCE  # said, not assumed
        items.append(f"largest {distance} distance from the input's distribution {shown} "
                     f"{'≤' if within else '> (FAILS)'} t = {_figure_text(reached['t'], '')}")
        if name in doc.get("t_against_release", {}):
            items.append(f"against the released table's own distribution: {doc['t_against_release'][name]:.4f}")
    for key in ("distinct_l", "entropy_l", "recursive", "p"):
        if key in reached:
            # The report's words, escaped: a field added to it (a script tag) reached the page as it was.
            params = ", ".join(f"{_shown(str(k))} = {_shown(str(v))}" for k, v in reached[key].items()
                               if k != "reached")
            items.append(f"{key}: reached <strong class='privacy-value'>{reached[key]['reached']:.4g}</strong> "
                         f"({params})")
    return "<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"


def _unmodelled(name: str, unknown: dict[str, str]) -> str:
    """What the page cannot show of a column measured without its model, and why."""
    if name not in unknown:
        return ""
    return (f"<p class='unmodelled'>The class distances of {_shown(name)} against t (and, for a hierarchy, "
            f"the similarity attack) are not shown: {_shown(unknown[name])}.</p>")


def _attacks(audit: CheckReport) -> str:
    rows = []
    for name, entry in audit.data["sensitive"].items():
        attacks = entry["attacks"]
        sim, skew = attacks.get("similarity"), attacks["skewness"]
        # The figures with what they were measured at: the ratio and the level are the audit's options.
        similarity = f"{sim['records']} (level {sim['level']})" if sim else "—"
        rows.append(f"<tr><td>{_shown(name)}</td><td>{attacks['homogeneity']['records']}</td>"
                    f"<td>{skew['records']} (share ≥ {as_given(skew['ratio'])}× the table's)</td>"
                    f"<td>{similarity}</td></tr>")
    return ("<p>Records exposed in the released file (see <code>sqlclose check</code>).</p><table><tr><th>column"
            "</th><th>homogeneity</th><th>skewness</th><th>similarity</th></tr>" + "".join(rows) + "</table>")


def _alteration(value: float | None, withheld: str | None) -> str:
    if withheld is not None:
        return f"withheld from the report: {_shown(withheld)}"
    return "—" if value is None else f"{value:.2f} %"


def _figure_text(value: float | None, spec: str) -> str:
    """A figure the schema allows as null, formatted by ``spec``, or "—"."""
    return NOT_GIVEN if value is None else format(value, spec)


def _utility(doc: dict) -> str:
    u = doc["utility"]
    role = " (the search's metric; the node was given)" if doc.get("node_given") else " (chose the release)"
    # Discernibility, the default metric, is said to have chosen the release as the seven are below.
    chose = role if u.get("metric") == "discernibility" else ""
    items = [f"discernibility {u['discernibility']}{chose}", f"average class size {u['average_class_size']:.2f}"]
    if u.get("generalized_percent") is not None:
        items.append(f"{u['generalized_percent']:.1f} % of values generalized, "
                     f"{_figure_text(u.get('root_percent'), '.1f')} % at the root")
    for name, s in (u.get("sensitive") or {}).items():
        items.append(f"{_shown(name)}: l-diversity value {_figure_text(s['l_diversity'], '.3f')}, L1 closeness "
                     f"(not halved, not an EMD) {_figure_text(s['l1_closeness'], '.4f')}")
    hidden = u.get("withheld") or {}
    rows = "".join(f"<tr><td>{_shown(name)}{role if name == u.get('metric') else ''}</td>"
                   f"<td>{_alteration(value, hidden.get(name))}</td></tr>"
                   for name, value in (u.get("alteration") or {}).items())
    table = ""
    if rows:
        mean = _alteration(u.get("mean_alteration"), hidden.get("mean_alteration"))
        table = ("<table><tr><th>metric (Mauger et al.)</th><th>alteration</th></tr>" + rows
                 + f"<tr><td>mean of the seven</td><td>{mean}</td></tr></table>")
    return "<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>" + table


# ---- charts ------------------------------------------------------------------------------------
CHARTS = "the HTML page's charts"


def _drawing() -> AbstractContextManager[Any]:
    """pyplot with every text drawn as given (a sensitive value holding ``$…$`` is no mathtext),
    a failure told without quoting what was drawn (``charts.drawing``)."""
    from sqlclose.utility.charts import drawing

    return drawing(CHARTS)


def _embed(plt: Any, fig: Any, alt: str) -> str:
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    finally:
        plt.close(fig)
    data = base64.b64encode(buffer.getvalue()).decode()
    return f"<img class='chart' alt='{_shown(alt)}' src='data:image/png;base64,{data}'>"


def _lattice_chart(doc: dict) -> str:
    """Every node by height, the chosen one marked (the report lists no other satisfying node)."""
    names = list(doc["generalization"])  # read_report: node and lattice.levels hold each of them
    shape = tuple(doc["lattice"]["levels"][n] for n in names)
    if doc["lattice"]["size"] > 20000 or math.prod(shape) > 20000:  # the levels', not the report's size alone
        return "<p>(lattice too large to draw)</p>"
    role = np.full(shape, "other", dtype=object)
    role[_chosen_node(doc, names)] = "chosen"
    points: dict[str, tuple[list[int], list[float]]] = {kind: ([], []) for kind in ("other", "chosen")}
    for h, nodes in enumerate(nodes_by_height_groups(shape)):
        for i, node in enumerate(nodes):
            xs, ys = points[role[node]]
            xs.append(h)
            ys.append((i + 0.5) / len(nodes))
    with _drawing() as plt:
        fig, ax = plt.subplots(figsize=(9, 3.6))
        for kind, (xs, ys) in points.items():
            ax.scatter(xs, ys, s=60 if kind == "chosen" else 14, c=PALETTE[kind], label=kind, zorder=3)
        ax.set_xlabel("height (sum of levels)")
        ax.set_yticks([])
        ax.set_title(f"Lattice of {doc['lattice']['size']} nodes")
        ax.legend(loc="upper left", fontsize=8)
        return _embed(plt, fig, "lattice with the chosen node")


def refuse_malformed(doc: dict) -> None:
    """What the page refuses as bad input in a report's own figures (exit 2), told before the
    release is checked against them (a mismatch, exit 4): a node outside its lattice."""
    if doc.get("lattice"):
        _chosen_node(doc, list(doc["generalization"]))


def _chosen_node(doc: dict, names: list[str]) -> tuple[int, ...]:
    """The report's node, refused (bad input, by field) when a level lies outside its lattice: no
    node of it to mark (numpy read a level of -1 as the top, and one past the top crashed)."""
    node, levels = doc["node"], doc["lattice"]["levels"]
    outside = [f"node.{n} is {node[n]}, outside lattice.levels.{n} = {levels[n]} (levels 0..{levels[n] - 1})"
               for n in names if not 0 <= node[n] < levels[n]]
    if outside:
        raise InputError(f"the report's node lies outside its lattice: {'; '.join(outside)} (give the report written "
                         "beside the release)")
    return tuple(node[n] for n in names)


def _class_size_chart(sizes: np.ndarray | None, k: int) -> str:
    values = np.asarray(sizes if sizes is not None else [])
    with _drawing() as plt:
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.hist(values, bins=min(40, max(5, len(np.unique(values)))), color=PALETTE["minimal"])
        ax.axvline(k, color=PALETTE["chosen"], linestyle="--", label=f"k = {k}")
        ax.set_xlabel("class size (rows)")
        ax.set_ylabel("classes")
        ax.legend()
        return _embed(plt, fig, "class sizes against k")


def _sensitive_charts(name: str, reached: dict, audit: CheckReport) -> str:
    """The class distances against t and the released distribution of one sensitive column; its
    values and name are drawn as they are (``_drawing``)."""
    charts = []
    with _drawing() as plt:
        if name in audit.class_distances:
            fig, ax = plt.subplots(figsize=(6, 3))
            ax.hist(audit.class_distances[name], bins=20, color=PALETTE["satisfying"])
            ax.set_xlabel(f"{reached.get('distance') or NOT_GIVEN} distance of a class from the released table")
            ax.set_ylabel("classes")
            if reached.get("t") is not None:  # null in the report: the page says "t = —", and draws no line
                ax.axvline(reached["t"], color=PALETTE["chosen"], linestyle="--", label=f"t = {reached['t']}")
                ax.legend()
            charts.append(_embed(plt, fig, f"class distances of {name} against t"))
        distribution = audit.distributions.get(name, {})
        if distribution:
            fig, ax = plt.subplots(figsize=(6, 3))
            shown = sorted(distribution.items(), key=lambda kv: -kv[1])[:25]
            ax.bar(range(len(shown)), [v for _, v in shown], color=PALETTE["minimal"])
            ax.set_xticks(range(len(shown)), [k for k, _ in shown], rotation=60, ha="right", fontsize=7)
            ax.set_ylabel("rows")
            ax.set_title(f"{name}: the released table's distribution")
            charts.append(_embed(plt, fig, f"distribution of {name}"))
    return "".join(charts)


def _digest(doc: dict) -> str:
    """What the page's release holds, as its report records it: a file's sha256, a table's content digest."""
    return doc["output"].get("sha256") or doc["output"].get("content_digest") or ""


def is_page_of(page: Path, doc: dict) -> bool:
    """Whether ``page`` is a sign-off page sqlclose wrote of the release the report ``doc`` vouches
    for: its head (the first bytes) carries that release's digest in sqlclose's mark. A rerun that
    finds its release up to date rewrites such a page; any other file there is refused as before."""
    digest = _digest(doc)
    try:
        with Path(page).open("rb") as f:
            head = f.read(PAGE_HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return False
    return bool(digest) and head.startswith("<!DOCTYPE html>") and _mark(digest) in head




def _mark(digest: str) -> str:
    return f"<meta name='{PAGE_MARK}' content='{_shown(digest)}'>"


def _document(title: str, body: str, digest: str) -> str:
    style = ("body{font-family:system-ui,sans-serif;max-width:980px;margin:2em auto;color:#222}"
             "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}"
             "img.chart{display:block;margin:1em 0;max-width:100%}section{margin-bottom:2em}.lead{font-size:1.1em}")
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>{_mark(digest)}"
            f"<title>{_shown(title)}</title>"
            f"<style>{style}</style></head><body>{body}</body></html>\n")
