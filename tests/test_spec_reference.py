"""The spec reference (docs/spec-reference.md) is generated from the validation models and
cannot drift: the committed file is the generator's output, every key of every section has a
meaning, and every model of the spec has a section."""

from __future__ import annotations

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
