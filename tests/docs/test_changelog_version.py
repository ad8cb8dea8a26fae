"""One version everywhere: the changelog's first heading names the version ARIA reports."""

from __future__ import annotations

import re
from pathlib import Path

from aria_tda import __version__

ROOT = Path(__file__).resolve().parents[2]


def test_changelog_top_heading_is_the_installed_version():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", text, flags=re.MULTILINE)
    assert headings, "CHANGELOG.md has no '## ' release heading"
    versions = re.findall(r"\d+\.\d+\.\d+\S*", headings[0])
    assert versions == [__version__], (headings[0], __version__)


def test_the_docs_changelog_page_is_the_changelog():
    page = (ROOT / "docs" / "changelog.md").read_text(encoding="utf-8")
    assert page.strip() == '--8<-- "CHANGELOG.md"'
