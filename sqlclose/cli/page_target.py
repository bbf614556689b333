"""Where a sign-off page must not land beyond the files a command names: inside a Parquet folder
release of any report (``anonymize --html`` and ``report --html`` alike)."""

from __future__ import annotations

import os
from pathlib import Path


def folder_releases_around(page: Path) -> list[tuple[Path, str]]:
    """The folders above ``page`` that are Parquet folder releases: those with a report of a
    parquet-folder release of their name beside them (``b`` and ``b.report.json``, the name a
    folder release's report takes by default). A page among its part files would be digested as one
    of them, and the release would no longer match its report."""
    from sqlclose.audit.claims import read_report
    from sqlclose.errors import InputError

    found = []
    for folder in Path(os.path.abspath(page)).parents:
        if not folder.name or not folder.is_dir():  # the root has no name; a folder not yet made holds nothing
            continue
        report = folder.with_name(folder.name + ".report.json")
        if not report.is_file():
            continue
        try:
            output = read_report(report, ("output",))["output"]
        except (InputError, OSError, KeyError, TypeError):  # not a report: the folder is no release of ours
            continue
        if isinstance(output, dict) and output.get("format") == "parquet-folder":
            found.append((folder, f"a Parquet folder release (its report: {report})"))
    return found
