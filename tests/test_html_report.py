"""The sign-off page, opened in a real headless browser (Chromium from the system packages, driven
by Playwright): no console errors, the chosen node and the report's privacy values on the page,
and every chart image loaded."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sqlclose.cli import main

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("SQLCLOSE_CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
BROWSER_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def page_and_report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("html")
    result = CliRunner().invoke(main, ["demo", "--folder", str(folder)])
    assert result.exit_code == 0, result.output
    report = folder / "out" / "release.parquet.report.json"
    out = folder / "release.html"
    args = ["report", str(report), "--html", str(out), "--spec", str(folder / "table3.toml")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return out, json.loads(report.read_text())


def test_the_page_is_self_contained(page_and_report):
    page = page_and_report[0].read_text()
    assert "http://" not in page and "https://" not in page
    assert page.count("<img") >= 5 and "data:image/png;base64," in page


def test_the_page_in_a_headless_browser(page_and_report):
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), f"Chromium not found at {CHROMIUM} (apt-get install chromium)"
    page_path, doc = page_and_report
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_FLAGS)
        page = browser.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(page_path.as_uri())
        chosen = page.inner_text("#chosen-node")
        values = page.eval_on_selector_all(".privacy-value", "els => els.map(e => e.textContent)")
        images = page.eval_on_selector_all("img", "imgs => imgs.map(i => [i.complete, i.naturalWidth])")
        browser.close()
    assert errors == []
    assert chosen == ", ".join(f"{k} = {v}" for k, v in doc["node"].items())
    expected = [f"{s['max_emd']:.4f}" for s in doc["privacy"]["sensitive"].values()]
    assert values == expected
    assert images and all(complete and width > 0 for complete, width in images)


def test_a_reports_words_reach_the_page_escaped():
    """Review h4 of the eighty-fifth round: a model's fields were joined into the page as the report
    gave them, so a field added to a report (a script tag) reached the sign-off page verbatim."""
    from sqlclose.audit.html import _sensitive_text

    text = _sensitive_text("d", {"entropy_l": {"l": 2, "note": "<script>alert(1)</script>", "reached": 2.5}}, {})
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
