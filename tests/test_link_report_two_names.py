"""A release through ``link.parquet -> real/rel.parquet`` whose report beside the link is itself a link
to the target's report (one file, two names) and a ``--report`` elsewhere: refused as before (the one
report would be left describing a file no longer there), but told as "both link.parquet.report.json
(beside the link) and real/rel.parquet.report.json (beside that file) are sqlclose reports: … remove
the one no longer used", two reports where there is one, whose removal would leave the other name a
dangling link. It is now told as one report of two names, and the advice given (``--report`` at the
link's name) replaces the one report both names reach.

Oracles: hashlib's sha256 of the file the link names against the report's ``output.sha256``, the
files' bytes before and after, ``os.path.samefile`` and ``check --against``'s exit code."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from table3_project import invoke, table3_through_link

OTHER_NODE = ("--node", "zip=5,age=3")  # Table 3's top node: a release whose bytes differ from the optimum's


def _linked(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Table 3 released through ``link.parquet -> real/rel.parquet``, its report moved beside the
    target: the directory, the report beside the link and the one beside the target."""
    d = table3_through_link(tmp_path)
    link_report, target_report = d / "link.parquet.report.json", d / "real" / "rel.parquet.report.json"
    link_report.rename(target_report)
    return d, link_report, target_report


def _vouches(report: Path, data: Path) -> bool:
    return json.loads(report.read_text())["output"]["sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}

def _refused_with_a_report_elsewhere(d: Path) -> str:
    """Another node released through the link with its report given elsewhere: refused (exit 2), not
    told as two reports; the message, its spaces folded."""
    refused = invoke("anonymize", d / "spec.toml", *OTHER_NODE, "-o", d / "link.parquet", "--report",
                     d / "other.json", "--overwrite", "-q")
    assert refused.exit_code == 2, refused.output
    told = " ".join(refused.output.split())
    assert "are sqlclose reports" not in told and "remove the one no longer used" not in told, told
    return told



def test_a_links_report_that_links_to_the_targets_is_told_as_one_report(tmp_path):
    d, link_report, target_report = _linked(tmp_path)
    link_report.symlink_to("real/rel.parquet.report.json")
    before = _files(d)
    told = _refused_with_a_report_elsewhere(d)
    assert (f"the report beside that file, {target_report}, is the one beside the link too, {link_report} (a "
            "symbolic link: one report of two names)") in told, told
    assert f"--report {link_report}" in told, told
    assert _files(d) == before and not (d / "other.json").exists()
    # As advised: written through the link's name, the one report both names reach is replaced.
    given = invoke("anonymize", d / "spec.toml", *OTHER_NODE, "-o", d / "link.parquet", "--report", link_report,
                   "--overwrite", "-q")
    assert given.exit_code == 0, given.output
    assert link_report.is_symlink() and os.path.samefile(link_report, target_report)
    assert _vouches(target_report, d / "real" / "rel.parquet")
    assert (d / "real" / "rel.parquet").read_bytes() != before["real/rel.parquet"]
    assert invoke("check", d / "link.parquet", "--against", link_report).exit_code == 0


def test_a_links_report_hard_linked_to_the_targets_is_told_as_one_file_of_two_names(tmp_path):
    d, link_report, target_report = _linked(tmp_path)
    os.link(target_report, link_report)
    before = _files(d)
    told = _refused_with_a_report_elsewhere(d)
    assert (f"is the one beside the link too, {link_report} (a hard link: one file of two names)") in told, told
    assert "remove one of the two names" in told, told
    assert _files(d) == before
    # Given at one of the names, the report was renamed over it and the other name kept the old
    # report (exit 0, the target's report vouching for the release replaced): refused alike.
    at_one = invoke("anonymize", d / "spec.toml", *OTHER_NODE, "-o", d / "link.parquet", "--report", link_report,
                    "--overwrite", "-q")
    assert at_one.exit_code == 2 and "(a hard link: one file of two names)" in " ".join(at_one.output.split())
    assert _files(d) == before
    # As advised: one name removed, the other given, the one report vouches for the release.
    link_report.unlink()
    given = invoke("anonymize", d / "spec.toml", *OTHER_NODE, "-o", d / "link.parquet", "--report", target_report,
                   "--overwrite", "-q")
    assert given.exit_code == 0, given.output
    assert _vouches(target_report, d / "real" / "rel.parquet") and not link_report.exists()
    assert invoke("check", d / "link.parquet", "--against", target_report).exit_code == 0
