"""sqlclose: k-anonymous, t-close releases of tables, computed in SQL.

    release = sqlclose.anonymize("patients.parquet", sqlclose.load_spec("release.toml"))
    release.write_parquet("out/patients.parquet")
"""

from ._version import __version__
from .api import anonymize  # noqa: E402
from .check import CheckReport, check  # noqa: E402
from .emd import emd  # noqa: E402
from .errors import (  # noqa: E402
    DataError,
    HierarchyError,
    InputError,
    NoSolutionError,
    OutputExistsError,
    SpecError,
    SqlcloseError,
    VerificationError,
)
from .hierarchy import Hierarchy  # noqa: E402
from .release import Release  # noqa: E402
from .spec import HierarchySpec, Privacy, QuasiIdentifier, Sensitive, Spec, load_spec  # noqa: E402

__all__ = [
    "anonymize", "check", "CheckReport", "emd", "load_spec", "Spec", "QuasiIdentifier", "Sensitive",
    "HierarchySpec", "Privacy",
    "Hierarchy", "Release", "SqlcloseError", "InputError", "SpecError", "HierarchyError", "DataError",
    "OutputExistsError", "NoSolutionError", "VerificationError", "__version__",
]
