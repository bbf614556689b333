"""The spec reference (docs/spec-reference.md) is generated from the validation models and
cannot drift: the committed file is the generator's output, every key of every section has a
meaning, and every model of the spec has a section."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from sqlclose.model import spec
from sqlclose.model.spec_reference import MEANINGS, SECTIONS, meaning, own_fields, reference

REPO = Path(__file__).resolve().parents[1]


def test_the_committed_reference_is_the_generated_one():
    assert (REPO / "docs" / "spec-reference.md").read_text(encoding="utf-8") == reference(), \
        "regenerate it: python -m sqlclose.model.spec_reference > docs/spec-reference.md"


def test_every_key_has_a_meaning_and_every_meaning_a_key():
    missing = [f"{model.__name__}.{name}" for _, model, _ in SECTIONS
               for name, info in own_fields(model).items() if not meaning(model, name, info)]
    assert missing == [], f"describe these keys (Field description or MEANINGS): {missing}"
    known = {f"{cls.__name__}.{name}" for _, model, _ in SECTIONS for cls in model.__mro__
             if isinstance(cls, type) and issubclass(cls, BaseModel) for name in getattr(cls, "__annotations__", {})}
    assert sorted(set(MEANINGS) - known) == [], "MEANINGS names keys the models no longer have"


def test_every_model_of_the_spec_has_a_section():
    models = {obj for obj in vars(spec).values()
              if isinstance(obj, type) and issubclass(obj, spec._Model) and obj is not spec._Model}
    assert models == {model for _, model, _ in SECTIONS}


def test_the_reference_shows_types_defaults_and_constraints():
    """Spot checks against the models as written (spec.py): k ≥ 1 and required, suppression in [0, 1)."""
    text = reference()
    assert "| `k` | integer | required | ≥ 1 |" in text
    assert "| `suppression` | number | 0.0 | ≥ 0.0, < 1.0 |" in text
    assert '| `distance` | one of "ordered", "equal", "hierarchical", "variational", "kl" | "equal" |' in text


# A value each key of a hierarchy accepts; the keys that are a hierarchy's source validate alone.
HIERARCHY_SAMPLES = {"file": "h.csv", "bands": [5], "mask": True, "dates": True, "tree": {"a": ["x", "y"]},
                     "delimiter": ";", "origin": 0, "mask_char": "#", "domain": [0, 1], "alphabet": "01",
                     "length": 3}


def _accepted_alone(build) -> list[str]:
    accepted = []
    for key, value in HIERARCHY_SAMPLES.items():
        try:
            build({key: value})
        except ValueError:  # pydantic's ValidationError is one
            continue
        accepted.append(key)
    return accepted


def test_the_hierarchy_keys_sentence_lists_every_source_the_models_accept():
    """docs/spec-reference.md, 'Hierarchy keys', said 'exactly one of `file`, `bands`, `mask`, `tree`':
    `dates`, accepted (and in the table below it), was left out; and it gave a sensitive column's
    `hierarchy = { … }` the same list, where only the keys listing values are accepted. The oracle:
    which keys the models accept as a hierarchy's only key, for a quasi-identifier and for a
    sensitive column (hierarchical distance)."""
    assert set(HIERARCHY_SAMPLES) == set(spec.HierarchySpec.model_fields) - {"hierarchy"}  # every key tried
    for_qi = _accepted_alone(spec.HierarchySpec.model_validate)
    for_sensitive = _accepted_alone(lambda h: spec.Sensitive.model_validate(
        {"t": 0.3, "distance": "hierarchical", "hierarchy": h}))
    assert for_qi == ["file", "bands", "mask", "dates", "tree"] and for_sensitive == ["file", "tree"]
    section = reference().split("## Hierarchy keys", 1)[1].split("\n## ", 1)[0]
    qi_part, sensitive_part = section.split("exactly one of", 1)[1].split("of a sensitive column", 1)
    assert set(re.findall(r"`(\w+)`", qi_part)) == set(for_qi), qi_part
    assert set(re.findall(r"`(\w+)`", sensitive_part.split("\n", 1)[0])) == set(for_sensitive), sensitive_part
