"""The report in a real headless browser (Debian chromium driven by Playwright).

One browser per module; each test opens the report in a fresh page and checks: no console
errors, no network request but the file itself, tables showing the numbers of the results
files, the per-query view switching queries, the collapsed banner, escaping of hostile labels.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from aria_tda.report import write_report

from .conftest import NASTY, build_results

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = [
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="Debian chromium (/usr/bin/chromium) is not installed"
    ),
    # ~10 s: building the report (plots) and starting chromium; the page checks take ~3 s
    pytest.mark.slow,
]
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is not installed"
)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    pw = sync_api.sync_playwright().start()
    ctx = pw.chromium.launch_persistent_context(
        str(tmp_path_factory.mktemp("chromium-profile")),
        executable_path=str(CHROMIUM),
        headless=True,
        args=ARGS,
        viewport={"width": 1400, "height": 1000},
    )
    yield ctx
    ctx.close()
    pw.stop()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """One full report for the module.

    Module scope: a fixed seed instead of the function-scoped rng.
    """
    root = tmp_path_factory.mktemp("browser") / "results"
    frames = build_results(root, np.random.default_rng(20261125))
    out = write_report(root, top_n=25, pairs_per_channel=5)
    return out.html, frames


def shows(pg, key, value):
    """Wait until the per-query view shows ``data-<key> == value``.

    No eval: the page's CSP forbids it.
    """
    sync_api.expect(pg.locator("#query-view")).to_have_attribute(
        f"data-{key}", value, timeout=10000
    )


class Page:
    """A page with its console messages, page errors and requests recorded."""

    def __init__(self, ctx, url):
        self.page = ctx.new_page()
        self.console, self.errors, self.requests, self.dialogs = [], [], [], []
        self.page.on("console", lambda m: self.console.append((m.type, m.text)))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.url = url
        self.page.goto(url)

    def clean(self):
        bad = [m for m in self.console if m[0] in ("error", "warning")]
        assert not bad and not self.errors and not self.dialogs, (bad, self.errors, self.dialogs)
        assert self.requests == [self.url], self.requests  # nothing but the file itself

    def close(self):
        self.page.close()


@pytest.fixture
def page(browser, report):
    html, _ = report
    p = Page(browser, html.as_uri())
    p.page.wait_for_selector("#qv-topk tbody tr", timeout=15000)
    yield p
    p.close()


def _topk_tracks(p):
    return p.page.eval_on_selector_all(
        "#qv-topk tbody td[data-track]", "els => els.map(e => e.dataset.track)"
    )


def _expected_topk(frames, setting, variant, q, n=25):
    t = frames["topk"]
    return list(
        t[(t.setting == setting) & (t.variant == variant) & (t["query"] == q)]
        .sort_values("rank")
        .track_id.head(n)
    )


def test_loads_offline_without_errors(page, report, tmp_path):
    page.clean()
    pg = page.page
    assert pg.title() == "Test study <b>bold</b>"  # escaped, shown literally
    assert pg.locator("header h1 b").count() == 0
    assert "default-src 'none'" in pg.locator(
        'meta[http-equiv="Content-Security-Policy"]'
    ).get_attribute("content")
    assert pg.locator("figure.plot svg").count() == 4
    pg.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    pg.locator("#query").screenshot(path=str(tmp_path / "query.png"))
    assert (tmp_path / "report.png").stat().st_size > 50_000
    page.clean()


def test_tables_show_the_numbers_of_the_results_files(page, report):
    _, frames = report
    pg = page.page
    h, rel, al = frames["homogeneity"], frames["reliability"], frames["alignment"]
    for table_id, variant in (
        ("#table-homogeneity", "original"),
        ("#table-homogeneity_residual", "residual"),
    ):
        rows = pg.locator(f"{table_id} tbody tr")
        assert rows.count() == 4
        for s in ("TRAK/semantic", "TRAK/coarse", "TRAK/fine", "MERT"):
            row = pg.locator(f'{table_id} tbody tr[data-setting="{s}"]')
            for c in ("rhythm", "harmony", "timbre"):
                src = h[
                    (h.setting == s) & (h.variant == variant) & (h.K == 300) & (h.channel == c)
                ].iloc[0]
                zcell = row.locator(f'td[data-col="{c}_zbar"]').inner_text()
                assert zcell.split("\n")[0] == f"{src.zbar:+.2f}"
                assert f"[{src.zbar_lo:+.2f}, {src.zbar_hi:+.2f}]" in zcell
                assert (
                    row.locator(f'td[data-col="{c}_pos"]').inner_text() == f"{100 * src.pos:.1f}%"
                )
                assert (
                    row.locator(f'td[data-col="{c}_sig"]').inner_text() == f"{100 * src.sig:.1f}%"
                )
    for _, r in rel.iterrows():
        row = pg.locator(f'#table-reliability tbody tr[data-setting="{r.setting}"]')
        assert row.locator('td[data-col="kappa"]').inner_text() == f"{r.kappa:.3f}"
        assert row.locator('td[data-col="verdict"]').inner_text() == r.verdict
    assert pg.locator("#table-reliability tr.collapsed").count() == 1
    for _, r in al.iterrows():
        cell = pg.locator(
            f'#table-alignment tbody tr[data-setting="{r.setting}"] '
            f'td[data-col="{r.channel}_alpha_reg"]'
        ).inner_text()
        assert cell.split("\n")[0] == f"{r.alpha_reg:.3f}" and r.alpha_reg_group in cell
    assert pg.locator("#table-confound-1 tbody tr").count() == 3
    assert pg.locator("#table-timings").inner_text().count("754.2 s") == 1
    # the distinctive reading's section: named shares and baselines of aspects.csv
    asp = frames["aspects"]
    for _, r in asp[asp.variant == "original"].iterrows():
        row = pg.locator(f'#table-aspects tbody tr[data-setting="{r.setting}"]'
                         '[data-variant="original"]')
        named = row.locator(f'td[data-col="{r.channel}_named_share"]').inner_text()
        assert named == f"{100 * r.named_share:.0f}%"
        base = row.locator(f'td[data-col="{r.channel}_baseline"]').inner_text()
        assert base.split()[0] == f"{r.baseline:+.2f}"
    assert pg.locator("#table-set_aspects tbody tr").count() == len(
        frames["set_aspects"].drop_duplicates(["setting", "variant", "variable", "value"]))


def test_query_view_switches_queries(page, report):
    _, frames = report
    pg = page.page
    root = pg.locator("#query-view")
    assert (
        root.get_attribute("data-setting") == "TRAK/semantic"
        and root.get_attribute("data-query") == "0"
    )
    first = _topk_tracks(page)
    assert first == _expected_topk(frames, "TRAK/semantic", "original", 0)
    # search by label and pick the match
    pg.fill("#qv-search", "bach & co")
    assert pg.locator("#qv-list option").count() == 1
    pg.select_option("#qv-list", "3")
    shows(pg, "query", "3")
    third = _topk_tracks(page)
    assert third == _expected_topk(frames, "TRAK/semantic", "original", 3) and third != first
    assert "generated piece 3 (Bach & Co)" in pg.locator("#qv-query").inner_text()
    qz = frames["query_z"]
    for c in ("rhythm", "harmony", "timbre"):
        z = qz[
            (qz.setting == "TRAK/semantic")
            & (qz.variant == "original")
            & (qz.K == 300)
            & (qz["query"] == 3)
            & (qz.channel == c)
        ].z.iloc[0]
        assert pg.locator(f'#qv-ztable td[data-channel="{c}"]').inner_text() == f"{z:+.2f}"
    assert pg.locator("#qv-zchart svg circle").count() == 3
    # pairs: the top 5 per channel by contribution
    pairs = frames["pairs"]
    want = pairs[
        (pairs.setting == "TRAK/semantic")
        & (pairs.variant == "original")
        & (pairs["query"] == 3)
        & (pairs.channel == "harmony")
    ]
    want = want.sort_values("contribution", ascending=False).head(5)
    got = pg.locator(
        '#qv-pairs table[data-channel="harmony"] tbody tr td:nth-child(4)'
    ).all_inner_texts()
    assert got == [f"{v:+.3f}" for v in want.contribution]
    # next / previous, variant switch
    pg.click("#qv-next")
    shows(pg, "query", "4")
    pg.select_option("#qv-variant", "residual")
    shows(pg, "variant", "residual")
    assert _topk_tracks(page) == _expected_topk(frames, "TRAK/semantic", "residual", 4)
    page.clean()


def test_query_view_leads_with_the_distinctive_reading(page, report):
    """The per-query view opens with the query's distinctive aspect (or none), its Δ per
    channel from query_aspects, and the paper's z below it."""
    _, frames = report
    pg = page.page
    qa = frames["query_aspects"]
    rows = qa[(qa.setting == "TRAK/semantic") & (qa.variant == "original")]
    for q in (0, 1, 2):
        pg.select_option("#qv-list", str(q))
        shows(pg, "query", str(q))
        mine = rows[rows["query"] == q]
        named = str(mine["named"].iloc[0])
        box = pg.locator("#qv-aspect")
        assert box.get_attribute("data-named") == named
        heading = box.locator("h3").inner_text()
        assert heading.endswith("no distinctive aspect" if named == "none" else named)
        lead = box.locator("p.lead").inner_text()
        assert lead.startswith("No distinctive aspect" if named == "none" else "Distinctive aspect")
        for c, d in zip(mine.channel, mine.delta, strict=True):
            cell = box.locator(f'tr[data-channel="{c}"] td:nth-child(2)')
            assert cell.inner_text() == f"{d:+.2f}"
    # the reading comes before the paper's z
    order = pg.evaluate("""() => {
      const a = document.getElementById('qv-aspect'), z = document.getElementById('qv-zchart');
      return !!(a.compareDocumentPosition(z) & Node.DOCUMENT_POSITION_FOLLOWING); }""")
    assert order
    page.clean()


def test_collapsed_banner(page, report):
    _, frames = report
    pg = page.page
    banner = pg.locator("#qv-banner")
    assert banner.is_hidden()
    pg.select_option("#qv-setting", "TRAK/coarse")
    shows(pg, "setting", "TRAK/coarse")
    assert banner.is_visible() and banner.get_attribute("role") == "alert"
    assert (
        "collapsed" in banner.inner_text() and "fixed group, not this query" in banner.inner_text()
    )
    fixed = _topk_tracks(page)
    pg.select_option("#qv-list", "9")
    shows(pg, "query", "9")
    assert _topk_tracks(page) == fixed == _expected_topk(frames, "TRAK/coarse", "original", 9)
    pg.select_option("#qv-setting", "TRAK/fine")
    shows(pg, "setting", "TRAK/fine")
    assert "suspect" in banner.inner_text() and banner.get_attribute("role") is None
    pg.select_option("#qv-setting", "MERT")
    shows(pg, "setting", "MERT")
    assert banner.is_hidden()
    page.clean()


def test_hostile_labels_are_text(page, report):
    pg = page.page
    pg.select_option(
        "#qv-setting", "TRAK/coarse"
    )  # its fixed group is searched for the nasty track
    shows(pg, "setting", "TRAK/coarse")
    texts = pg.locator("#query-view").inner_text()
    found = NASTY in texts or NASTY in pg.locator("body").inner_text()
    for q in range(1, 14):
        if found:
            break
        pg.select_option("#qv-list", str(q))
        shows(pg, "query", str(q))
        found = NASTY in pg.locator("#query-view").inner_text()
    assert found, "the hostile track label should appear somewhere as text"
    assert pg.evaluate("document.querySelectorAll('#query-view script').length") == 0
    page.clean()


def test_partial_folder_in_browser(browser, tmp_path):
    root = tmp_path / "results"
    build_results(
        root,
        np.random.default_rng(3),
        channels=("melody", "harmony", "rhythm", "dynamic", "texture"),
        modality="symbolic",
    )
    for f in ("topk.parquet", "pairs.parquet", "alignment.csv"):
        (root / f).unlink()
    shutil.rmtree(root / "nothing", ignore_errors=True)
    with pytest.warns(Warning):
        out = write_report(root, plots=False)
    p = Page(browser, out.html.as_uri())
    try:
        p.page.wait_for_selector("#qv-zchart svg", timeout=15000)
        assert p.page.locator("#qv-zchart svg circle").count() == 5
        assert "No top-K table" in p.page.locator("#qv-topk").inner_text()
        missing = p.page.locator("#missing").inner_text()
        assert (
            "topk.parquet" in missing and "pairs.parquet" in missing and "alignment.csv" in missing
        )
        assert p.page.locator("#table-homogeneity thead").inner_text().count("Melody") == 1
        p.clean()
    finally:
        p.close()
