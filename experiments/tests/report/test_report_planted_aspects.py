"""The planted-aspect tables of ``aria-tda demo planted`` in the report: tables, right/wrong
markers, K-sweep panels of the plant queries, LaTeX/CSV exports, and a folder without them."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pandas as pd
import pytest
from _experiment_tables import NEW_TABLES, SETTINGS, write_planted_aspects

from aria_tda.report import load_results, write_report
from aria_tda.report.tables import build_tables
from aria_tda.results import TABLES, write_table
from aria_tda_experiments.report.planted_aspects import (
    CONTROL,
    above_chance,
    flag,
    planted_aspect_tables,
    planted_sweep_panels,
)


def _table_html(page: str, table_id: str) -> str:
    m = re.search(rf'<table[^>]*id="{table_id}".*?</table>', page, re.S)
    assert m, table_id
    return m.group(0)


def _rows(page: str, table_id: str) -> list[str]:
    body = _table_html(page, table_id).split("<tbody>")[1]
    return re.findall(r"<tr[^>]*>.*?</tr>", body, re.S)


def _cell(tr: str, col: str) -> str:
    m = re.search(rf'<td[^>]*data-col="{col}"[^>]*>(.*?)</td>', tr, re.S)
    assert m, (col, tr)
    return m.group(1)


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", fragment))


# ---------------------------------------------------------------- helpers


@pytest.mark.parametrize(("x", "want"), [(True, True), ("False", False), ("yes", True), (0, False),
                                         (None, None), (float("nan"), None), ("", None)])
def test_flag_reads_csv_booleans(x, want):
    assert flag(x) is want


def test_above_chance():
    assert above_chance(0.2, 0.1) and not above_chance(0.1, 0.1)
    assert not above_chance(float("nan"), 0.1) and not above_chance(None, 0.1)


# ---------------------------------------------------------------- tables


def test_tables_are_built_in_order_with_the_folder_numbers(planted):
    path, frames = planted
    data = load_results(path)
    assert not any(n in m for m in data.missing for n in NEW_TABLES)
    tables = {t.name: t for t in planted_aspect_tables(data)}
    assert list(tables) == list(NEW_TABLES[:-1])
    main = tables["planted_aspects"]
    assert main.layout == {"k": 16, "residual": True, "multi_modality": False}
    # rows: settings in results order, aspects in channel order, control last
    order = [(s, a) for s, *_ in SETTINGS for a in (*data.channels, CONTROL)]
    assert list(zip(main.df["setting"], main.df["aspect"], strict=True)) == order
    src = frames["planted_aspects"].set_index(["setting", "aspect"])
    for _, r in main.df.iterrows():
        want = src.loc[(r["setting"], r["aspect"])]
        assert r["recall_at_k"] == pytest.approx(want["recall_at_k"])
        assert r["top_channel"] == want["top_channel"]
        named = None if r["aspect"] == CONTROL else want["top_channel"] == r["aspect"]
        assert r["right"] is named
    assert "nats/token" in main.caption and "chance = k / n_train" in main.caption
    # confusion: wide, zero-filled, rows summing to the plant queries
    conf = tables["planted_confusion"].df
    assert tables["planted_confusion"].layout["channels"] == data.channels
    assert len(conf) == len(SETTINGS) * 2 * len(data.channels)
    for _, r in conf.iterrows():
        counts = [r[f"{c}_n"] for c in data.channels]
        assert sum(counts) == r["n_queries"] == 8 and sorted(counts) == [0, 3, 5]
        assert r["right_n"] == r[f"{r['aspect']}_n"]
        assert r["right_share"] == pytest.approx(r["right_n"] / 8)
    eff = tables["planted_effects"].df
    assert list(eff["kind"]) == ["learned"] * 6 + ["counterfactual"] * 3
    assert list(eff["seed"][:2].astype(int)) == [0, 1]  # seeds ascending within an aspect
    assert list(tables["planted_agreement"].df["diagnostic"]) == ["r1", "p", "kappa"]


def test_right_is_filled_where_the_folder_leaves_it_blank(planted):
    path, frames = planted
    pa = frames["planted_aspects"].drop(columns=["right", "right_residual"])
    pa.loc[pa.index[0], "top_channel"] = None
    write_table(path, "planted_aspects", pa)
    main = planted_aspect_tables(load_results(path))[0].df
    for _, r in main.iterrows():
        if r["aspect"] == CONTROL or not isinstance(r["top_channel"], str):
            assert r["right"] is None
        else:
            assert r["right"] is (r["top_channel"] == r["aspect"])
        if r["aspect"] != CONTROL:
            assert r["right_residual"] is (r["top_channel_residual"] == r["aspect"])


def test_only_the_required_columns(make_results, rng, tmp_path):
    """The schema's required columns alone: rows named by method, no residual column."""
    path, _ = make_results()
    frames = write_planted_aspects(path, rng)
    for name in NEW_TABLES[1:]:
        (path / TABLES[name].filename).unlink()
    write_table(path, "planted_aspects",
                frames["planted_aspects"][list(TABLES["planted_aspects"].columns)])
    out = write_report(path, latex=True, tables_dir=tmp_path / "t", plots=False)
    assert [t for t in out.tables if t in NEW_TABLES] == ["planted_aspects"]
    page = out.html.read_text()
    rows = _rows(page, "table-planted_aspects")
    assert len(rows) == len(frames["planted_aspects"])
    assert {re.search(r'data-setting="([^"]*)"', tr).group(1) for tr in rows} == {"TRAK", "MERT"}
    assert "top_channel_residual" not in page and "K-sweeps of the plant queries" not in page
    tex = (out.exports / "planted_aspects.tex").read_text()
    assert tex.count(r"\begin{") == tex.count(r"\end{") and "resid." not in tex


# ---------------------------------------------------------------- HTML


def test_html_section_shows_the_numbers_and_right_or_wrong_in_words(planted):
    path, frames = planted
    out = write_report(path, plots=False)
    page = out.html.read_text()
    assert '<section id="planted-aspects">' in page
    assert 'href="#planted-aspects">Planted aspects</a>' in page
    where = [page.index(f'id="{s}"') for s in ("planted", "planted-aspects", "query")]
    assert where == sorted(where)
    src = frames["planted_aspects"].set_index(["setting", "aspect"])
    rows = _rows(page, "table-planted_aspects")
    assert len(rows) == len(src)
    n_right = n_wrong = 0
    for tr in rows:
        s = html.unescape(re.search(r'data-setting="([^"]*)"', tr).group(1))
        a = re.search(r'data-aspect="([^"]*)"', tr).group(1)
        want = src.loc[(s, a)]
        rec = _text(_cell(tr, "recall_at_k"))
        assert rec.split()[0] == f"{want.recall_at_k:.3f}"
        assert f"[{want.ci_low:.3f}, {want.ci_high:.3f}]" in rec and f"chance {16 / 400:.3f}" in rec
        assert ('class="num best" data-col="recall_at_k"' in tr) is bool(want.ci_low > 16 / 400)
        cf = _text(_cell(tr, "counterfactual_effect"))
        assert cf.split()[0] == f"{want.counterfactual_effect:+.3f}"
        lead = _text(_cell(tr, "top_channel"))
        assert want.top_channel in lead and f"z̄ {want.top_channel_z:+.2f}" in lead
        if a == CONTROL:
            assert "right" not in lead and "wrong" not in lead and "data-verdict" not in tr
            continue
        if want.top_channel == a:
            assert lead.startswith("✓ right: ") and 'data-verdict="right"' in tr
            n_right += 1
        else:
            assert lead.startswith("✗ wrong: ") and f"{a} z̄ {want.aspect_z:+.2f}" in lead
            n_wrong += 1
        res = _text(_cell(tr, "top_channel_residual"))
        assert res.startswith("✓ right" if want.top_channel_residual == a else "✗ wrong")
        vs = _text(_cell(tr, "top_channel_vs_control"))
        assert vs.startswith("✓ right" if want.top_channel_vs_control == a else "✗ wrong")
        assert f"Δz̄ {want.top_channel_vs_control_dz:+.2f}" in vs
    assert n_right and n_wrong
    # confusion: one row per (setting, aspect), the variants side by side, diagonal in bold
    conf = _rows(page, "table-planted_confusion")
    assert len(conf) == len(SETTINGS) * 3
    cf = frames["planted_confusion"]
    for tr in conf:
        s = html.unescape(re.search(r'data-setting="([^"]*)"', tr).group(1))
        a = re.search(r'data-aspect="([^"]*)"', tr).group(1)
        for v in ("original", "residual"):
            bold = re.findall(rf'<td class="num[^"]*best[^"]*" data-col="{v}:([^"]*)"', tr)
            assert bold == [a], tr
            src = cf[(cf.setting == s) & (cf.variant == v) & (cf.aspect == a)]
            for c in ("rhythm", "harmony", "timbre"):
                want = int(src[src.channel == c]["n_queries"].sum())  # 0 where not written
                assert _text(_cell(tr, f"{v}:{c}")).strip() == str(want)
            right = int(src[src.channel == a]["n_queries"].sum())
            assert _text(_cell(tr, f"{v}:right_share")).strip() == f"{100 * right / 8:.0f}%"
    naming = _rows(page, "table-planted_naming")
    nm = frames["planted_naming"]
    assert len(naming) == len(nm)
    assert _text(_cell(naming[0], "right_when_found")).split() == ["40%", "4", "of", "10"]
    eff = _rows(page, "table-planted_effects")
    assert len(eff) == len(frames["planted_effects"])
    assert "Learned and counterfactual effects of the plants (nats/token)" in page
    agr = _rows(page, "table-planted_agreement")
    ag = frames["planted_agreement"].set_index("diagnostic")
    assert [re.search(r'data-diagnostic="([^"]*)"', tr).group(1) for tr in agr] == ["r1", "p",
                                                                                    "kappa"]
    assert _text(_cell(agr[0], "spearman")).strip() == f"{ag.loc['r1', 'spearman']:+.3f}"
    # the existing planted-influence section is untouched by the new tables
    assert len(_rows(page, "table-planted")) == len(SETTINGS)


def test_sweep_panels_name_the_planted_aspect(planted, monkeypatch):
    pytest.importorskip("matplotlib")
    path, frames = planted
    data = load_results(path)
    panels, left = planted_sweep_panels(data)
    assert left == 0 and len(panels) == len(SETTINGS) * 4
    p = panels[1]
    assert p.title == "TRAK/semantic — harmony plant queries" and p.k == 16
    assert panels[3].title == "TRAK/semantic — control queries"
    sw = frames["planted_sweep"]
    want = sw[(sw.setting == p.setting) & (sw.aspect == "harmony")]
    assert len(p.rows) == len(want) and set(p.rows["variant"]) == {"original", "residual"}
    out = write_report(path)
    page = out.html.read_text()
    sec = page[page.index('<section id="planted-aspects">'):page.index('<section id="query"')]
    figs = re.findall(r'<figure class="plot" data-setting="([^"]*)" data-aspect="([^"]*)"', sec)
    assert len(figs) == len(panels)
    assert sec.count('<details class="planted-sweep"') == len(SETTINGS)
    assert sec.count('<details class="planted-sweep" open') == 1
    assert "TRAK/semantic — harmony plant queries" in sec and "harmony (planted)" in sec
    assert "http://" not in sec.replace("http://www.w3.org/", "")  # offline
    ids = re.findall(r'\bid="([^"]+)"', page.split("<footer>")[0])
    assert len(ids) == len(set(ids))  # unique ids across all plots
    # a cap keeps the page bounded, with a note
    import aria_tda_experiments.report.planted_aspects as pa

    monkeypatch.setattr(pa, "MAX_SWEEP_PANELS", 5)
    out = write_report(path)
    sec = out.html.read_text().split('<section id="planted-aspects">')[1]
    assert len(re.findall(r'<figure class="plot"', sec.split('<section id="query"')[0])) == 5
    assert f"{len(panels) - 5} further panel(s) left out" in sec


# ---------------------------------------------------------------- LaTeX / CSV


def test_latex_and_csv_exports(planted, tmp_path):
    path, frames = planted
    out = write_report(path, latex=True, tables_dir=tmp_path / "tables", plots=False)
    for name in NEW_TABLES[:-1]:
        tex = (out.exports / f"{name}.tex").read_text()
        assert tex.count(r"\begin{") == tex.count(r"\end{"), name
        assert r"\toprule" in tex and r"\bottomrule" in tex
        csv = pd.read_csv(out.exports / f"{name}.csv")
        assert len(csv), name
    tex = (out.exports / "planted_aspects.tex").read_text()
    pa = frames["planted_aspects"]
    n_right = int((pa["right"].map(flag) == True).sum())  # noqa: E712
    n_wrong = int((pa["right"].map(flag) == False).sum())  # noqa: E712
    assert tex.count(r"(\textbf{right})") == n_right + int(
        (pa["right_residual"].map(flag) == True).sum())  # noqa: E712
    assert tex.count("(wrong)") == n_wrong + int((pa["right_residual"].map(flag) == False).sum())  # noqa: E712
    assert "nats/token" in tex and r"\emph{control}" in tex and r"$R@16$" in tex
    first = pa.sort_values(["setting", "aspect"]).iloc[0]
    assert f"{first.recall_at_k:.3f}" in tex
    conf = (out.exports / "planted_confusion.tex").read_text()
    assert conf.count(r"\textbf{") == len(SETTINGS) * 2 * 3  # one bold diagonal cell per row
    csv = pd.read_csv(out.exports / "planted_aspects.csv")
    assert list(csv.columns[:4]) == ["modality", "setting", "method", "aspect"]
    assert not (out.exports / "planted_sweep.csv").exists()  # panels only; data in the folder


# ---------------------------------------------------------------- without the tables


def test_a_folder_without_the_tables_is_unchanged(make_results, rng, tmp_path):
    path, _ = make_results()
    before = write_report(path, latex=True, tables_dir=tmp_path / "a")
    page_before = before.html.read_text()
    assert not any(t in NEW_TABLES for t in before.tables)
    assert "planted-aspects" not in page_before and "Planted aspects" not in page_before
    assert not any("planted_" in m for m in before.missing)  # optional, not missing
    frames = write_planted_aspects(path, rng)
    with_tables = write_report(path, plots=False)
    assert "planted-aspects" in with_tables.html.read_text()
    for name in frames:
        (path / TABLES[name].filename).unlink()
    after = write_report(path, latex=True, tables_dir=tmp_path / "b")
    assert after.html.read_text() == page_before
    assert after.tables == before.tables
    names = sorted(p.name for p in (tmp_path / "a").rglob("*"))
    assert names == sorted(p.name for p in (tmp_path / "b").rglob("*"))
    tables = build_tables(load_results(path), k=300)
    assert not set(tables) & set(NEW_TABLES)


# ---------------------------------------------------------------- in a browser

CHROMIUM = Path("/usr/bin/chromium")


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed")
def test_section_in_a_browser_offline(planted):
    """The page with the section and its panels opens offline, without console errors."""
    pytest.importorskip("matplotlib")
    sync_api = pytest.importorskip("playwright.sync_api")
    path, frames = planted
    out = write_report(path)
    url = out.html.as_uri()
    pw = sync_api.sync_playwright().start()
    try:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update"])
        pg = browser.new_page(viewport={"width": 1400, "height": 1000})
        console, errors, requests = [], [], []
        pg.on("console", lambda m: console.append((m.type, m.text)))
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.on("request", lambda r: requests.append(r.url))
        pg.goto(url)
        pg.wait_for_selector("#qv-topk tbody tr", timeout=15000)
        pg.locator('nav.toc a[href="#planted-aspects"]').click()
        table = pg.locator("#table-planted_aspects")
        sync_api.expect(table).to_be_visible()
        pa = frames["planted_aspects"]
        row = pa[(pa.setting == "TRAK/semantic") & (pa.aspect == "rhythm")].iloc[0]
        cell = table.locator('tr[data-setting="TRAK/semantic"][data-aspect="rhythm"] '
                             'td[data-col="top_channel"]').inner_text()
        word = "✓ right" if row.top_channel == "rhythm" else "✗ wrong"
        assert cell.startswith(f"{word}: {row.top_channel}")
        # the first setting's panels are open, the others fold out on a click
        figs = pg.locator('#planted-aspects figure.plot[data-setting="MERT"] svg')
        assert figs.count() == 4 and not figs.first.is_visible()
        pg.locator('details.planted-sweep[data-setting="MERT"] summary').click()
        sync_api.expect(figs.first).to_be_visible()
        bad = [m for m in console if m[0] in ("error", "warning")]
        assert not bad and not errors, (bad, errors)
        assert requests == [url], requests  # nothing but the file itself
        browser.close()
    finally:
        pw.stop()
