"""A dossier printed to PDF by a headless Chromium (``aria-tda evidence --pdf``): what may be
written over, and a real print."""

from __future__ import annotations

import shutil

import pytest

from aria_tda.errors import MissingDependencyError, ParameterError
from aria_tda.media.pdf import TITLE_MARK, check_pdf_output, find_browser, print_pdf


def _page(tmp_path, title):
    html = tmp_path / "d.html"
    html.write_text(f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title>'
                    "<style>@media print { [hidden] { display: block !important; } }</style>"
                    "</head><body><h1>Query 3</h1><p hidden>printed only</p></body></html>",
                    encoding="utf-8")
    return html


def test_only_a_new_path_or_aria_s_own_pdf_may_be_written(tmp_path):
    assert check_pdf_output(tmp_path / "new.pdf") == tmp_path / "new.pdf"
    theirs = tmp_path / "theirs.pdf"
    theirs.write_bytes(b"%PDF-1.4\n<</Title (My thesis)>>\n%%EOF\n")
    with pytest.raises(ParameterError, match="not a dossier PDF ARIA printed"):
        check_pdf_output(theirs)
    notes = tmp_path / "notes.pdf"
    notes.write_text("not a pdf at all")
    with pytest.raises(ParameterError, match="not a dossier PDF"):
        check_pdf_output(notes)
    assert notes.read_text() == "not a pdf at all" and theirs.read_bytes().startswith(b"%PDF")
    with pytest.raises(ParameterError, match=r"\.pdf"):
        check_pdf_output(tmp_path / "out.html")
    with pytest.raises(ParameterError, match="existing folder"):
        check_pdf_output(tmp_path / "nowhere" / "x.pdf")
    (tmp_path / "dir.pdf").mkdir()
    with pytest.raises(ParameterError, match="a folder"):
        check_pdf_output(tmp_path / "dir.pdf")


def test_no_browser_is_one_error_naming_how_to_get_one(monkeypatch):
    monkeypatch.setenv("ARIA_BROWSER", "no-such-browser-here")
    with pytest.raises(MissingDependencyError, match="ARIA_BROWSER"):
        find_browser()
    monkeypatch.delenv("ARIA_BROWSER")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(MissingDependencyError, match="apt install chromium"):
        find_browser()


@pytest.mark.skipif(not any(shutil.which(b) for b in ("chromium", "google-chrome")),
                    reason="needs a Chromium-family browser")
def test_a_real_print_and_a_reprint_over_it(tmp_path):
    html = _page(tmp_path, f"Evidence dossier: query 3 \u2014 \u00e9t\u00fcde \u00b7 {TITLE_MARK}")
    out = print_pdf(html, tmp_path / "d.pdf")
    first = out.read_bytes()
    assert first.startswith(b"%PDF") and len(first) > 1000
    assert check_pdf_output(out) == out  # recognised as ARIA's by its title
    assert print_pdf(html, out).read_bytes().startswith(b"%PDF")  # replaced atomically
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_never_the_dossier_itself_nor_what_the_results_folder_keeps(tmp_path):
    """``--out d.pdf --pdf`` would print the dossier over itself; a PDF in the results
    folder's cache would write into what ARIA keeps for another purpose: both refused."""
    from aria_tda._outputs import RESULTS_CACHE, results_keeps

    html = tmp_path / "d.pdf"
    with pytest.raises(ParameterError, match=r"dossier's own HTML \(--out\)"):
        check_pdf_output(html, html=html)
    res = tmp_path / "results"
    (res / RESULTS_CACHE).mkdir(parents=True)
    keeps = results_keeps(res, {})
    with pytest.raises(ParameterError, match="lies inside the results folder's cache"):
        check_pdf_output(res / RESULTS_CACHE / "x.pdf", keeps=keeps)
    assert check_pdf_output(res / "dossier.pdf", html=res / "dossier.html", keeps=keeps) == \
        res / "dossier.pdf"
    assert not any((res / RESULTS_CACHE).iterdir())
