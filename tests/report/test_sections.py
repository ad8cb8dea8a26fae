"""The report's sections: the registry (ARIA's own, then those installed packages register
through entry points), a plugin's tables on the page, in the exports and in ``TABLES``, a broken
plugin as one warning, and the table of contents in section order."""

from __future__ import annotations

import importlib
import re
import textwrap
import warnings

import pandas as pd
import pytest

from aria_tda.errors import AriaWarning
from aria_tda.report import load_results, write_report
from aria_tda.report.sections import BaseSection, PageContext, Section, sections
from aria_tda.report.sections.registry import CORE_SECTIONS
from aria_tda.report.tables import build_tables
from aria_tda.results import CORE_TABLES, TABLES, write_table

_PLUGIN = '''
from aria_tda.report.report_table import ReportTable
from aria_tda.report.sections.base import BaseSection
from aria_tda.results import TableSpec

SPECS = (TableSpec("plugin_scores", "plugin_scores.csv", ("setting", "score"),
                   "A plugin's table: one score per setting."),)


class PluginSection(BaseSection):
    name = "plugin"
    title = "Plugin <scores>"
    order = 150
    specs = SPECS
    exports = ("plugin_scores",)

    def tables(self, data, k):
        df = data.table("plugin_scores")
        if df is None:
            return {}
        return {"plugin_scores": ReportTable("plugin_scores", "Plugin scores", "Scores.", df)}

    def latex(self, table):
        return "% plugin table\\n" if table.name == "plugin_scores" else None

    def validation(self, data, setting):
        return [f"plugin says {setting} is fine"]


def make():
    return PluginSection()
'''


def _install(root, name, entry_points):
    """A distribution ``name`` in folder ``root`` (a module and its dist-info)."""
    (root / f"{name}-0.1.dist-info").mkdir(parents=True)
    (root / f"{name}-0.1.dist-info" / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (root / f"{name}-0.1.dist-info" / "entry_points.txt").write_text(
        textwrap.dedent(entry_points))


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A package that adds a section (a factory) and its table through real entry points."""
    root = tmp_path / "site"
    root.mkdir()
    (root / "aria_test_plugin.py").write_text(_PLUGIN)
    _install(root, "aria_test_plugin", """
        [aria_tda.report_sections]
        plugin = aria_test_plugin:make

        [aria_tda.tables]
        plugin = aria_test_plugin:SPECS
    """)
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    TABLES.reload()
    yield root
    TABLES.reload()


def test_core_sections_are_sections_in_order():
    secs = sections()
    core = [s for s in secs if s in CORE_SECTIONS]
    assert core == sorted(CORE_SECTIONS, key=lambda s: s.order)
    assert len({s.name for s in secs}) == len(secs)
    for sec in CORE_SECTIONS:
        assert isinstance(sec, Section)
        assert all(spec.name in CORE_TABLES for spec in sec.specs)
    assert [s.order for s in secs] == sorted(s.order for s in secs)


def test_core_sections_give_no_validation_sentences(results):
    data = load_results(results[0])
    for sec in CORE_SECTIONS:
        assert sec.validation(data, data.settings[0]) == []


def test_a_plugin_section_is_on_the_page_in_the_tables_and_exports(plugin, results, tmp_path):
    path, _ = results
    assert "plugin_scores" in TABLES and "plugin_scores" not in CORE_TABLES
    df = pd.DataFrame({"setting": ["TRAK/semantic", "MERT"], "score": [0.25, 0.5]})
    write_table(path, "plugin_scores", df)
    names = [s.name for s in sections()]
    assert names.index("reliability") < names.index("plugin") < names.index("aspects")
    data = load_results(path)
    assert not any("not installed" in m for m in data.missing)
    tables = build_tables(data, k=300)
    assert list(tables["plugin_scores"].df["score"]) == [0.25, 0.5]
    from aria_tda.media._sections import section_validation  # what a dossier shows

    assert section_validation(data, "MERT") == ["plugin says MERT is fine"]
    out = write_report(path, latex=True, tables_dir=tmp_path / "t", plots=False, media=False,
                       quiet=True)
    assert "plugin_scores" in out.tables
    assert (out.exports / "plugin_scores.tex").read_text() == "% plugin table\n"
    assert pd.read_csv(out.exports / "plugin_scores.csv")["score"].tolist() == [0.25, 0.5]
    page = out.html.read_text()
    # the default HTML: the CSV's columns, the title escaped, a link in the table of contents
    section = re.search(r'<section id="plugin">.*?</section>', page, re.S)
    assert section is not None and 'id="table-plugin_scores"' in section.group(0)
    assert "Plugin &lt;scores&gt;" in page
    nav = re.search(r'<nav class="toc"[^>]*>(.*?)</nav>', page, re.S)
    assert nav is not None
    links = re.findall(r'href="#([^"]+)"', nav.group(1))
    # the table of contents follows the sections' order: summary, reliability (100), the
    # plugin (150), which aspect (200), homogeneity (300), ...; the page's own last
    assert links[:4] == ["summary", "reliability", "plugin", "aspects"]
    assert links[-2:] == ["query", "run"]
    body_ids = re.findall(r'<section id="([^"]+)"', page)
    assert [i for i in body_ids if i in links] == [i for i in links if i in body_ids]


def test_a_broken_plugin_is_one_warning(tmp_path, monkeypatch, results):
    root = tmp_path / "site"
    root.mkdir()
    _install(root, "aria_broken_plugin", """
        [aria_tda.report_sections]
        broken = aria_no_such_module:SECTION

        [aria_tda.tables]
        broken = aria_no_such_module:SPECS
    """)
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    with pytest.warns(AriaWarning) as caught:
        secs = sections()
    got = [w for w in caught if "broken" in str(w.message)]
    assert len(got) == 1 and "aria_no_such_module" in str(got[0].message)
    assert set(CORE_SECTIONS) <= set(secs)
    TABLES.reload()
    try:
        with pytest.warns(AriaWarning, match="tables 'broken'"):
            assert "reliability" in TABLES and "no_such_table" not in TABLES
    finally:
        TABLES.reload()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AriaWarning)
        out = write_report(results[0], plots=False, media=False, quiet=True)
    assert out.html.is_file()


def test_tables_of_a_package_not_installed_are_one_note(results):
    path, _ = results
    (path / "other_tool_scores.csv").write_text("setting,score\nMERT,1\n")
    (path / "other_tool_queries.parquet").write_bytes(b"")
    data = load_results(path)
    notes = [m for m in data.missing if "not installed" in m]
    assert notes == ["tables of a package that is not installed: other_tool_queries.parquet, "
                     "other_tool_scores.csv (install the package that wrote them to see them "
                     "in this report)"]


def test_base_section_defaults(results):
    class Empty(BaseSection):
        name, title, order = "empty", "Empty", 5

    data = load_results(results[0])
    sec = Empty()
    ctx = PageContext(k=300)
    assert sec.tables(data, 300) == {}
    assert sec.html(data, {}, ctx) is None and ctx.toc == []
    assert sec.validation(data, "MERT") == [] and sec.latex(build_tables(data, k=300)[
        "reliability"]) is None
    assert ctx.section("x", "X", "Title", "<p>b</p>", "a & b") == (
        '<section id="x"><h2>Title</h2><p class="caption">a &amp; b</p><p>b</p></section>')
    assert ctx.toc == [("x", "X")]
