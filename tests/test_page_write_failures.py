"""A sign-off page whose write fails (a full disk, a file-size limit): nothing of it stays beside the
page, and the error names it."""

from __future__ import annotations

import pytest
from forked_cli import run_cli

from tests.table3_project import invoke, table3_released


@pytest.mark.parametrize("command", ["report", "anonymize"])
def test_a_page_the_disk_cannot_hold_leaves_no_part_of_it_beside_the_page(tmp_path, command):
    """A page write that failed (a full disk; here the file-size limit, 64 KB against a page of
    ~150 KB) left its temporary, ``.page.html.tmp`` (64 KB of a page), beside the page for good: no
    run removes it, and on a full disk it kept the room the retry needed. It is removed now, and the
    error names the page whose write failed."""
    release, report = table3_released(tmp_path / "nightly")
    pages = tmp_path / "pages"
    pages.mkdir()
    page = pages / "page.html"
    if command == "report":
        args, told = ["report", report, "--html", page], f"the file grew beyond the size limit while writing {page};"
    else:  # the release placed first: its message says it stands
        args = ["anonymize", tmp_path / "nightly" / "spec.toml", "--no-progress", "--overwrite", "--html", page]
        told = f"are in place and verified, but its page {page} was not written (File too large)"
    done = run_cli(args, fsize=64 * 1024)
    assert done.returncode == 5, done.stderr
    assert told in done.stderr
    assert list(pages.iterdir()) == []
    assert run_cli(args).returncode == 0 and page.is_file()


@pytest.mark.parametrize("command, code", [("report", 2), ("anonymize", 5)])
def test_a_page_that_appeared_while_one_was_made_is_not_replaced_without_overwrite(tmp_path, monkeypatch, command,
                                                                                    code):
    """The page path is checked before the page is made (its audit takes a while); the page was then
    renamed over whatever stood there by then: another run's page, or a file of anyone's, replaced
    without --overwrite. It is refused now, and left as it is."""
    import sqlclose.audit.html

    release, report = table3_released(tmp_path / "nightly")
    page = tmp_path / "page.html"
    original = sqlclose.audit.html.render_html

    def then_written_by_another(*args, **kwargs):
        rendered = original(*args, **kwargs)
        page.write_text("another run's page\n")
        return rendered

    monkeypatch.setattr(sqlclose.audit.html, "render_html", then_written_by_another)
    args = (["report", report, "--html", page] if command == "report" else
            ["anonymize", tmp_path / "nightly" / "spec.toml", "--no-progress", "--html", page])
    if command == "anonymize":  # a new release: the spec's own is removed, overwrite = false
        release.unlink()
        report.unlink()
    done = invoke(*args)
    assert done.exit_code == code, done.output
    assert f"{page} appeared while the page was being made" in done.output
    assert page.read_text() == "another run's page\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nightly", "page.html"]  # no temporary left
