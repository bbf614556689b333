"""sqlclose: k-anonymous, t-close releases of tables, computed in SQL.

    release = sqlclose.anonymize("patients.parquet", sqlclose.load_spec("release.toml"))
    release.write_parquet("out/patients.parquet")
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

from sqlclose._version import __version__
from sqlclose.errors import (  # every kind of failure, by its exit code, and the warnings (README "Errors in Python")
    DataError,
    EngineError,
    EngineFault,
    EngineOutOfMemory,
    EnvironmentFailure,
    HierarchyError,
    HierarchyWarning,
    InputError,
    LimitWarning,
    NoSolutionError,
    NotLeavesError,
    NullsError,
    OptionError,
    OutputExistsError,
    SpecError,
    SqlcloseError,
    SqlcloseWarning,
    VerificationError,
    WaitWarning,
)

if TYPE_CHECKING:
    from sqlclose.api import anonymize, anonymize_histogram, histogram_sql
    from sqlclose.audit.check import CheckReport, check
    from sqlclose.model.hierarchy import Hierarchy
    from sqlclose.model.spec import HierarchySpec, Privacy, QuasiIdentifier, Sensitive, Spec, load_spec
    from sqlclose.privacy.emd import emd
    from sqlclose.release.release import Release

# The entry points are imported on first use (PEP 562), so ``import sqlclose.cli`` (--help,
# --version, every command's start) does not pay for the whole library: docs/performance.md "Cold start".
_LAZY = {
    "sqlclose.api": ("anonymize", "anonymize_histogram", "histogram_sql"),
    "sqlclose.audit.check": ("check", "CheckReport"),
    "sqlclose.model.hierarchy": ("Hierarchy",),
    "sqlclose.model.spec": ("HierarchySpec", "Privacy", "QuasiIdentifier", "Sensitive", "Spec", "load_spec"),
    "sqlclose.privacy.emd": ("emd",),
    "sqlclose.release.release": ("Release",),
}
_MODULE_OF = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        # A subpackage or module (``sqlclose.engine.SparkEngine``, ``sqlclose.sweep.sweep``) is
        # imported when first named, as ``import sqlclose.engine`` would.
        if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
            return importlib.import_module(f"{__name__}.{name}")
        raise AttributeError(f"module 'sqlclose' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_MODULE_OF})


__all__ = [
    "anonymize", "anonymize_histogram", "histogram_sql",
    "check", "CheckReport", "emd", "load_spec", "Spec", "QuasiIdentifier", "Sensitive",
    "HierarchySpec", "Privacy",
    "Hierarchy", "Release", "SqlcloseError", "InputError", "SpecError", "HierarchyError", "DataError",
    "OptionError", "OutputExistsError", "NoSolutionError", "VerificationError", "NotLeavesError", "NullsError",
    "EngineError", "EngineFault", "EngineOutOfMemory", "EnvironmentFailure",
    "SqlcloseWarning", "LimitWarning", "HierarchyWarning", "WaitWarning", "__version__",
]
