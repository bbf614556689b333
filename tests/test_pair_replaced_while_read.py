"""A nightly run placing a new pair while ``check --against`` or ``report --html`` reads the previous
one. The placing renames the data, then the report, into place: a reader that took the old report and
the new file compared claims of one release with the digest and figures of another, and said the good
release did not match (exit 4; in a live race, also that it held a sensitive value outside its domain,
exit 2). Both now tell the pair replaced, exit 2, and say to run again."""

from __future__ import annotations

import json
import os
from pathlib import Path

import sqlclose.audit.claims
from tests.table3_project import invoke, table3_released


def _placed_once(monkeypatch, module: object, name: str, new: tuple[Path, Path], old: tuple[Path, Path]) -> list[str]:
    """``module.name`` wrapped so that, as its first call returns, another run places the ``new`` pair
    over ``old`` as placing does: the data renamed into place, then the report."""
    original, placed = getattr(module, name), []

    def then_placed(*args, **kwargs):
        found = original(*args, **kwargs)
        if not placed:
            for tmp, target in zip(new, old):
                os.replace(tmp, target)
            placed.append(name)
        return found

    monkeypatch.setattr(module, name, then_placed)
    return placed


def test_check_against_a_pair_replaced_while_it_reads_it_says_so(tmp_path, monkeypatch):
    """Placed after the report was read, before the file was: the old claims were judged against the
    new file, whose digest differed (exit 4, "does not match"). Told now as a pair replaced."""
    release, report = table3_released(tmp_path / "nightly")
    new = table3_released(tmp_path / "next", salary="3100")  # the next night's input: one salary changed
    assert new[0].read_bytes() != release.read_bytes()
    placed = _placed_once(monkeypatch, sqlclose.audit.claims, "read_report", new, (release, report))
    result = invoke("check", "--against", report, release, "--json")
    assert placed
    told = json.loads(result.stdout)
    assert result.exit_code == 2, told
    assert told["exit_code"] == 2
    assert "changed while it was checked against its report" in told["error"]
    assert "check it again once no run is placing a release there" in told["error"]
    assert "does not match" not in told["error"] and "domain" not in told["error"]
    assert "3100" not in result.output and "3000" not in result.output  # no salary told
    monkeypatch.undo()
    # The pair that now stands is the next night's, whole: checked again, it matches.
    assert invoke("check", "--against", report, release).exit_code == 0


def test_report_html_of_a_pair_replaced_while_it_reads_it_says_so_and_writes_no_page(tmp_path, monkeypatch):
    """``report --html`` reads the report, then digests the release against it: a pair placed between
    was told "does not match its report" (exit 4). Told now as a pair replaced; no page is written."""
    release, report = table3_released(tmp_path / "nightly")
    new = table3_released(tmp_path / "next", salary="3100")
    page = tmp_path / "page.html"
    placed = _placed_once(monkeypatch, sqlclose.audit.claims, "read_report", new, (release, report))
    result = invoke("report", report, "--html", page)
    assert placed
    assert result.exit_code == 2, result.output
    assert "changed while its page was made" in result.output
    assert "write the page again once no run is placing a release there" in result.output
    assert "does not match" not in result.output
    assert not page.exists() and [p.name for p in tmp_path.iterdir() if p.is_file()] == []
    monkeypatch.undo()
    again = invoke("report", report, "--html", page, "--release", release)  # moved here from next/
    assert again.exit_code == 0, again.output  # the next night's pair, whole
