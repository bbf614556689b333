"""sqlclose: k-anonymous, t-close releases of tables, computed in SQL.

    release = sqlclose.anonymize("patients.parquet", sqlclose.load_spec("release.toml"))
    release.write_parquet("out/patients.parquet")
"""

from sqlclose._version import __version__
from sqlclose.api import anonymize, anonymize_histogram, histogram_sql  # noqa: E402
from sqlclose.audit.check import CheckReport, check  # noqa: E402
from sqlclose.errors import (  # noqa: E402
    DataError,
    HierarchyError,
    InputError,
    NoSolutionError,
    OutputExistsError,
    SpecError,
    SqlcloseError,
    VerificationError,
)
from sqlclose.model.hierarchy import Hierarchy  # noqa: E402
from sqlclose.model.spec import HierarchySpec, Privacy, QuasiIdentifier, Sensitive, Spec, load_spec  # noqa: E402
from sqlclose.privacy.emd import emd  # noqa: E402
from sqlclose.release.release import Release  # noqa: E402

__all__ = [
    "anonymize", "anonymize_histogram", "histogram_sql",
    "check", "CheckReport", "emd", "load_spec", "Spec", "QuasiIdentifier", "Sensitive",
    "HierarchySpec", "Privacy",
    "Hierarchy", "Release", "SqlcloseError", "InputError", "SpecError", "HierarchyError", "DataError",
    "OutputExistsError", "NoSolutionError", "VerificationError", "__version__",
]
