"""One report per release written through a symbolic link (``files.refuse_orphaned_report``). A run
through ``link.parquet -> real/rel.parquet`` puts its report beside the link; a later run through the
same link given ``--report real/rel.parquet.report.json`` (the mirror of the refusal's advice for a
target with a report of its own) replaced the release at the target and left the first report
beside the link, vouching for a file no longer there: ``check --against`` it failed, exit 4. The
report beside the link now counts as the target's own does: a run whose report is neither refuses
(exit 2, before the search), naming both paths and the ``--report`` that keeps one report per file.

Oracles: hashlib's sha256 of the file the link names against each report's ``output.sha256``, the
files' bytes before and after, and ``check --against``'s exit code."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from table3_project import invoke, table3_project, table3_through_link

OTHER_NODE = ("--node", "zip=5,age=3")  # Table 3's top node: a release whose bytes differ from the optimum's


def _vouches(report: Path, data: Path) -> bool:
    return json.loads(report.read_text())["output"]["sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_a_report_given_at_the_links_target_refuses_to_leave_the_links_report_stale(tmp_path):
    d = table3_through_link(tmp_path)
    link_report, target_report = d / "link.parquet.report.json", d / "real" / "rel.parquet.report.json"
    before = _files(d)
    assert _vouches(link_report, d / "real" / "rel.parquet")
    args = ("anonymize", d / "spec.toml", *OTHER_NODE, "-o", d / "link.parquet", "--report", target_report, "-q")
    unasked = invoke(*args)  # without --overwrite, the file the link names is an existing output
    assert unasked.exit_code == 2 and f"{d / 'link.parquet'} already exists" in unasked.output, unasked.output
    refused = invoke(*args, "--overwrite")
    assert refused.exit_code == 2, refused.output
    assert (f"the report of a release written through that link, {link_report}, lies beside it: this release's "
            f"report goes to {target_report}") in refused.output, refused.output
    assert f"--report {link_report}" in refused.output
    assert _files(d) == before  # nothing written: the release and its one report as they were
    # As advised: the link's report given, it is replaced with the release, and checks.
    given = invoke("anonymize", d / "spec.toml", *OTHER_NODE, "-o", d / "link.parquet", "--report", link_report,
                   "--overwrite", "-q")
    assert given.exit_code == 0, given.output
    assert _vouches(link_report, d / "real" / "rel.parquet")
    assert (d / "real" / "rel.parquet").read_bytes() != before["real/rel.parquet"] and not target_report.exists()
    assert invoke("check", d / "link.parquet", "--against", link_report).exit_code == 0
    # The link's report removed, the target's own is taken: one report again.
    link_report.unlink()
    moved = invoke(*args, "--overwrite")
    assert moved.exit_code == 0, moved.output
    assert _vouches(target_report, d / "real" / "rel.parquet") and not link_report.exists()


def test_a_report_elsewhere_refuses_either_report_of_the_links_file(tmp_path):
    """A third report path leaves the link's report (or the target's, or both) describing a file no
    longer there: refused, naming each."""
    d = table3_through_link(tmp_path)
    link_report, target_report = d / "link.parquet.report.json", d / "real" / "rel.parquet.report.json"
    args = ("anonymize", d / "spec.toml", *OTHER_NODE, "-o", d / "link.parquet", "--report", d / "other.json",
            "--overwrite", "-q")
    refused = invoke(*args)
    assert refused.exit_code == 2 and f"--report {link_report}" in refused.output, refused.output
    target_report.write_bytes(link_report.read_bytes())  # a report at each name that stands for the file
    before = _files(d)
    both = invoke(*args)
    assert both.exit_code == 2, both.output
    assert (f"both {link_report} (beside the link) and {target_report} (beside that file) are sqlclose reports"
            in both.output), both.output
    assert _files(d) == before and not (d / "other.json").exists()


def test_a_run_through_the_link_keeps_the_targets_report_it_was_given(tmp_path):
    """The other direction, refused since the ninety-ninth round: the target's report given first, a
    run with the default report (beside the link) would leave it stale."""
    d = table3_project(tmp_path)
    (d / "real").mkdir()
    (d / "real" / "rel.parquet").write_bytes(b"old")
    (d / "link.parquet").symlink_to("real/rel.parquet")
    target_report = d / "real" / "rel.parquet.report.json"
    first = invoke("anonymize", d / "spec.toml", "-o", d / "link.parquet", "--report", target_report,
                   "--overwrite", "-q")
    assert first.exit_code == 0, first.output
    before = _files(d)
    refused = invoke("anonymize", d / "spec.toml", *OTHER_NODE, "-o", d / "link.parquet", "--overwrite", "-q")
    assert refused.exit_code == 2 and f"--report {target_report}" in refused.output, refused.output
    assert _files(d) == before


def test_a_report_path_that_is_a_link_is_written_through_it(tmp_path):
    """Renamed over, a report path's link was replaced by a file, and the file it named kept the
    previous report, vouching for a release no longer there. It is now written through as an output's
    link is: the link kept, the file it names the new report, no temporary left beside either."""
    d = table3_project(tmp_path)
    (d / "reports").mkdir()
    kept = d / "reports" / "o.json"
    first = invoke("anonymize", d / "spec.toml", "-o", d / "o.parquet", "--report", kept, "-q")
    assert first.exit_code == 0, first.output
    (d / "o.parquet.report.json").symlink_to("reports/o.json")  # relative, as `ln -s` makes one
    refused = invoke("anonymize", d / "spec.toml", *OTHER_NODE, "-o", d / "o.parquet", "-q")
    assert refused.exit_code == 2 and "already exists" in refused.output, refused.output
    done = invoke("anonymize", d / "spec.toml", *OTHER_NODE, "-o", d / "o.parquet", "--overwrite", "-q")
    assert done.exit_code == 0, done.output
    assert (d / "o.parquet.report.json").is_symlink() and str((d / "o.parquet.report.json").readlink()) == \
        "reports/o.json"
    assert _vouches(kept, d / "o.parquet") and json.loads(kept.read_text())["node"] == {"zip": 5, "age": 3}
    assert sorted(p.name for p in (d / "reports").iterdir()) == ["o.json"]
    assert [p.name for p in d.iterdir() if p.name.startswith(".")] == []
    assert invoke("check", d / "o.parquet", "--against", d / "o.parquet.report.json").exit_code == 0
