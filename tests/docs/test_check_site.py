"""scripts/check_site.py: a built site with a raw role or a resource from the network fails."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("_check_site", ROOT / "scripts" / "check_site.py")
assert _spec is not None and _spec.loader is not None
check_site = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = check_site
_spec.loader.exec_module(check_site)

CLEAN = """<!doctype html><html><head>
<link rel="stylesheet" href="../assets/stylesheets/main.css">
<link rel="canonical" href="https://example.org/aria/">
<script src="../assets/javascripts/bundle.js"></script></head>
<body><p>See <a href="https://distributed.dask.org">Dask</a> and
<code>:func:</code> in prose, <span class="arithmatex"><math><mi>x</mi></math></span>.</p>
</body></html>"""


def _site(tmp_path: Path, page: str, css: str = "") -> Path:
    (tmp_path / "index.html").write_text(CLEAN, encoding="utf-8")
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "index.html").write_text(page, encoding="utf-8")
    (tmp_path / "extra.css").write_text(css, encoding="utf-8")
    return tmp_path


def test_a_clean_site_passes(tmp_path):
    assert check_site.check_site(_site(tmp_path, CLEAN)) == []
    assert check_site.main([str(tmp_path)]) == 0


@pytest.mark.parametrize(
    ("snippet", "what"),
    [
        # how Markdown renders an unrewritten role in a docstring
        ("<p>uses :func:<code>diagnose</code> first</p>", "raw role ':func:<code>'"),
        ("<p>a :math:`\\kappa` here</p>", "raw role ':math:`'"),
        ("<p>.. math:: x</p>", "raw directive '.. math::'"),
        ('<div class="arithmatex">\\[x\\]</div>', "TeX not converted to MathML"),
        (
            '<script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"></script>',
            "<script src=https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js>",
        ),
        (
            '<link rel="preconnect" href="https://fonts.gstatic.com" crossorigin>',
            "<link href=https://fonts.gstatic.com>",
        ),
        ('<img src="//example.org/a.png">', "<img src=//example.org/a.png>"),
    ],
)
def test_each_problem_is_found_with_its_line(tmp_path, snippet, what):
    site = _site(tmp_path, f"<html>\n<body>\n{snippet}\n</body></html>")
    assert check_site.check_site(site) == [f"api/index.html:3: {what}"]
    assert check_site.main([str(site)]) == 1


def test_a_font_imported_by_a_style_sheet_is_found(tmp_path):
    css = "@import 'https://fonts.googleapis.com/css?family=Roboto';\nbody { color: red }"
    assert check_site.check_site(_site(tmp_path, CLEAN, css)) == [
        "extra.css:1: CSS url(https://fonts.googleapis.com/css?family=Roboto)"
    ]


def test_a_folder_that_is_not_a_site_is_refused(tmp_path, capsys):
    assert check_site.main([str(tmp_path)]) == 2
    assert "expected a built mkdocs site" in capsys.readouterr().err
    assert check_site.main([]) == 2
