"""The text form of a check: what `sqlclose check` prints without --json."""

from __future__ import annotations

from sqlclose.model.text import agreeing, counted, name_shown

SELF_REFERENCE = "the table itself"  # the report's "reference" when none was given


def render_text(data: dict) -> str:
    """The human-readable report."""
    lines = [f"{data['table']}: {counted(data['rows'], 'row')} in {_classes(data['classes'])} over "
             f"{', '.join(data['quasi_identifiers'])}"]
    lines.append(_line("k (smallest class)", data["k"]))
    for name, s in data["sensitive"].items():
        lines.append(f"sensitive {name} ({counted(s['domain_size'], 'value')}; reference: {data['reference']})")
        lines.append(_line("  distinct l", s["distinct_l"]))
        if "p" in s:
            lines.append(_line("  p", s["p"]))
        lines.append(_line("  entropy l", s["entropy_l"]))
        if "recursive" in s:
            lines.append(_line("  recursive r1/tail", s["recursive"]))
        for dname, d in s["distances"].items():
            label = f"  max {'EMD ' if d['emd'] else ''}{dname}" + ("" if d["emd"] else " (not EMD)")
            lines.append(_line(label, d))
        lines.extend(_attack_lines(s["attacks"], data["reference"]))
    lines.extend(_utility_lines(data.get("utility")))
    if data["passed"] is None:
        lines.append("no thresholds given: measured only")
    else:
        lines.append("PASSED: every threshold holds" if data["passed"] else "FAILED:")
        lines.extend(f"  - {f}" for f in data["failures"])
    return "\n".join(lines)


def as_given(number: float) -> str:
    """A number as typed, to its last digit (1.0000001 is no 1), without a whole number's ".0"."""
    text = repr(float(number))
    return text[:-2] if text.endswith(".0") else text


def _attack_lines(a: dict, reference: str) -> list[str]:
    """The three attacks' lines: the records exposed, in how many classes."""
    def exposed(found: dict, one: str, many: str) -> str:
        return (f"{counted(found['records'], 'record')} in {_classes(found['classes'])} "
                f"{agreeing(found['records'], one, many)}")

    sk, sim = a["skewness"], a["similarity"]
    share = "its table share" if reference == SELF_REFERENCE else "its share in the reference"
    lines = [f"  homogeneity attack: {exposed(a['homogeneity'], 'has', 'have')} one sensitive value",
             f"  skewness attack: {exposed(sk, 'holds', 'hold')} a value at >= {as_given(sk['ratio'])}x {share} "
             f"(worst {_ratio(sk['worst_ratio'])})"]
    if sim is None:
        return [*lines, "  similarity attack: no hierarchy given for this column"]
    return [*lines, f"  similarity attack: {exposed(sim, 'reveals its', 'reveal their')} level-{sim['level']} group "
                    f"{sim['records_by_group'] or ''}".rstrip()]


def _classes(n: int) -> str:
    return counted(n, "class", "classes")


def _line(label: str, entry: dict) -> str:
    value = entry["reached"]
    text = f"{label:<28} {value:.4g}" if isinstance(value, float) else f"{label:<28} {value}"
    if entry.get("required") is not None:
        text += f"   required {entry['required']}: {'ok' if entry['passed'] else 'FAIL'}"
    worst = entry["worst_classes"][0] if entry["worst_classes"] else None
    if worst is not None:
        text += f"   (worst class {worst['class']}, {counted(worst['size'], 'row')})"
    return text


def _percent(value: float | None, unknown: str) -> str:
    return f"unknown ({unknown})" if value is None else f"{value:.1f} %"


def leaves_unknown(names: list[str]) -> str:
    """Why the share generalized is unknown, and what tells it: a column's leaves come from a file or
    tree hierarchy of the release's spec (``--spec``; a rule's, a mask's, bands' or dates', do not
    list them), or from the release's input given as ``--reference`` (refused without a sensitive
    column, the spec's or ``--sensitive``'s): with ``--qi`` no hierarchy can be given."""
    return (f"the leaves of {', '.join(name_shown(n) for n in names)} are not known: a file or tree hierarchy lists "
            "them, given by the release's spec with --spec; a mask's, bands' or dates' are its input's values, given "
            "by --reference INPUT beside a sensitive column")


# A root share is unknown only for a mask whose top the input's codes tell: its length is not declared.
ROOT_UNKNOWN = "a mask without a declared length: its top is as long as the input's codes; declare length in the spec"


def _utility_lines(u: dict | None) -> list[str]:
    """Mauger et al.'s values a file alone gives (the alterations count the suppressed records, which
    the file lacks: see --against)."""
    if not u:
        return []
    unknown = [name for name, entry in u.get("quasi_identifiers", {}).items()
               if entry.get("generalized_percent") is None]
    lines = [f"utility: values generalized {_percent(u.get('generalized_percent'), leaves_unknown(unknown))}, at the "
             f"root {_percent(u.get('root_percent'), ROOT_UNKNOWN)}"]
    for name, s in u.get("sensitive", {}).items():
        lines.append(f"  {name}: l-diversity value (least exp(entropy)) {s['l_diversity']:.3f}; L1 closeness "
                     f"(largest Σ|p - q|, not halved) {s['l1_closeness']:.4f}")
    return lines


def _ratio(worst: float | str) -> str:
    """The worst skewness ratio: "inf" when a class holds a value the reference never holds."""
    return f"{worst:.2f}x" if isinstance(worst, (int, float)) else f"{worst} (a value the reference lacks)"
