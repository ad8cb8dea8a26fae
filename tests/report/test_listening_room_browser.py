"""The listening room in a real browser (Debian chromium driven by Playwright).

A hand-built user study with real media (MIDI files, FluidSynth-rendered audio, a feature
store whose metadata names each track's file, a queries file with a ``media`` column) is run
with the library API; then its report (with ``report_media/``) and dossiers are opened offline.
Checked: every player decodes (duration > 0, no media error), every picture renders, A/B plays
the query then the item, the keys move the selection (dossier and report), no console error, no
network request, hostile ids stay text, a collapsed setting is labelled. Without a browser: the
report's media build prints its progress lines (and ``--quiet`` silences them).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

#: How long a wait for the page or a player may take: generous, as a loaded CI machine starts
#: Chromium's audio and decodes slowly (a passing test never waits this long).
WAIT_MS = 30_000
CHROMIUM = Path("/usr/bin/chromium")  # as in test_html (imported there only with playwright)
try:
    from playwright import sync_api
except ImportError:  # the browser tests skip; the progress tests still run
    sync_api = None
_NO_BROWSER = (
    "the playwright package is not installed" if sync_api is None
    else "Debian chromium (/usr/bin/chromium) is not installed" if not CHROMIUM.exists()
    else None
)


def _in_browser(test):
    """A test that opens Chromium: slow (~40 s for the study, its report's media and two
    dossiers), skipped without chromium or playwright."""
    test = pytest.mark.slow(test)
    return pytest.mark.skipif(_NO_BROWSER is not None, reason=_NO_BROWSER or "")(test)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """The user study, its report (media for every query, top 3) and two dossiers."""
    from aria_tda.media.dossier import write_dossier
    from aria_tda.report import write_report

    from ._listening import make_user_study

    root = tmp_path_factory.mktemp("listening")
    res = make_user_study(root)
    lines: list[str] = []
    rep = write_report(res, media_queries=20, media_top=3, log=lines.append)
    ok = write_dossier(res, 0, top=5, out=root / "dossier-q0.html")
    flat = write_dossier(res, "gen01", setting="Flat", top=3, out=root / "dossier-flat.html")
    return {"results": res, "report": rep, "dossier": ok, "collapsed": flat, "lines": lines}


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from .test_html import ARGS

    pw = sync_api.sync_playwright().start()
    ctx = pw.chromium.launch_persistent_context(
        str(tmp_path_factory.mktemp("chromium-profile")),
        executable_path=str(CHROMIUM),
        headless=True,
        args=[*ARGS, "--autoplay-policy=no-user-gesture-required", "--mute-audio"],
        viewport={"width": 1400, "height": 1000},
    )
    yield ctx
    ctx.close()
    pw.stop()


class Page:
    """A page with its console messages, page errors, requests and dialogs recorded."""

    def __init__(self, ctx, path: Path):
        self.page = ctx.new_page()
        self.console, self.errors, self.requests, self.dialogs = [], [], [], []
        self.page.on("console", lambda m: self.console.append((m.type, m.text)))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.url = path.as_uri()
        self.folder = path.parent.as_uri() + "/"
        self.page.goto(self.url)

    def clean(self, *, local_media: bool = False):
        bad = [m for m in self.console if m[0] in ("error", "warning")]
        assert not bad and not self.errors and not self.dialogs, (bad, self.errors, self.dialogs)
        if local_media:  # the report: the page and files of its own media folder, nothing else
            others = [u for u in self.requests if u != self.url
                      and not u.startswith(self.folder + "report_media/")]
            assert not others, others
        else:
            assert self.requests == [self.url], self.requests

    def close(self):
        self.page.close()


def _audio_state(pg, selector="audio"):
    return pg.eval_on_selector_all(
        selector,
        "els => els.map(e => ({id: e.id, src: (e.currentSrc || '').slice(0, 40), "
        "duration: e.duration, error: e.error ? e.error.code : null, ready: e.readyState}))",
    )


def _wait_metadata(pg, selector="audio"):
    pg.wait_for_function(
        f"() => Array.from(document.querySelectorAll('{selector}')).every("
        "e => e.readyState >= 1 || e.error)", timeout=WAIT_MS)


def _images(pg, selector="img"):
    pg.wait_for_function(
        f"() => Array.from(document.querySelectorAll('{selector}')).every(i => i.complete)",
        timeout=WAIT_MS)
    return pg.eval_on_selector_all(
        selector, "els => els.map(i => ({alt: i.alt, w: i.naturalWidth, src: i.src.slice(0, 30)}))")


@_in_browser
def test_dossier_players_decode_and_pictures_render(browser, study, tmp_path):
    p = Page(browser, study["dossier"])
    pg = p.page
    _wait_metadata(pg)
    audio = _audio_state(pg)
    assert len(audio) == 6  # the query and its 5 items
    for a in audio:
        assert a["error"] is None and a["duration"] > 0, a
    assert pg.locator("audio[preload=metadata]").count() == 6
    imgs = _images(pg)
    assert imgs and all(i["w"] > 0 for i in imgs), imgs
    assert any(i["src"].startswith("data:image/svg+xml") for i in imgs)
    # verdict first, in words
    assert pg.locator("main > section").first.get_attribute("id") == "verdict"
    assert "query-dependent" in pg.locator("#verdict").inner_text()
    shots = Path("/work/notes/shots")
    target = shots / "dossier-user-study.png" if shots.is_dir() else tmp_path / "dossier.png"
    pg.screenshot(path=str(target), full_page=True)
    assert target.stat().st_size > 50_000
    p.clean()
    p.close()


@_in_browser
def test_dossier_ab_plays_query_then_item(browser, study):
    p = Page(browser, study["dossier"])
    pg = p.page
    _wait_metadata(pg)
    pg.locator("button.ab[data-index='1']").click()
    pg.wait_for_function("() => { const q = document.getElementById('player-query'); "
                         "return !q.paused && isFinite(q.duration) && q.duration > 0; }",
                         timeout=WAIT_MS)
    # skip to the end of the query: the item must follow on its own
    pg.evaluate("() => { const q = document.getElementById('player-query'); "
                "q.currentTime = Math.max(0, q.duration - 0.3); }")
    pg.wait_for_function("() => document.body.dataset.played === 'query,item-1'", timeout=WAIT_MS)
    pg.wait_for_function("() => !document.getElementById('player-1').paused", timeout=WAIT_MS)
    assert pg.evaluate("() => document.getElementById('player-query').paused")
    assert pg.locator("body").get_attribute("data-selected") == "1"
    p.clean()
    p.close()


@_in_browser
def test_dossier_keyboard_moves_selection_and_channel(browser, study):
    p = Page(browser, study["dossier"])
    pg = p.page
    body = pg.locator("body")
    assert body.get_attribute("data-selected") == "0"
    pg.keyboard.press("j")
    pg.keyboard.press("j")
    assert body.get_attribute("data-selected") == "2"
    pg.keyboard.press("k")
    assert body.get_attribute("data-selected") == "1"
    assert pg.locator("li.item.selected").get_attribute("data-index") == "1"
    pg.keyboard.press("2")
    channels = pg.eval_on_selector_all("#channel option", "os => os.map(o => o.value)")
    assert body.get_attribute("data-channel") == channels[1]
    shown = pg.locator("#evidence .aspect:not([hidden])")
    assert shown.count() == 1
    assert shown.get_attribute("data-index") == "1"
    assert shown.get_attribute("data-channel") == channels[1]
    assert pg.locator("#evidence .aspect:not([hidden]) img").evaluate("i => i.naturalWidth") > 0
    pg.keyboard.press("a")  # A/B of the selected item starts the query
    pg.wait_for_function("() => (document.body.dataset.played || '').startsWith('query')",
                         timeout=WAIT_MS)
    pg.keyboard.press(" ")  # pauses what plays
    pg.wait_for_function("() => Array.from(document.querySelectorAll('audio'))"
                         ".every(a => a.paused)", timeout=WAIT_MS)
    # a screen reader hears what changed
    assert "item 2 of" in pg.locator("#announce").inner_text()
    # Tab reaches the items, Enter selects one
    pg.locator("li.item").nth(2).focus()
    pg.keyboard.press("Enter")
    assert body.get_attribute("data-selected") == "2"
    # the single-key shortcuts can be turned off (and are remembered as off)
    pg.locator("#shortcuts").uncheck()
    pg.evaluate("() => document.activeElement.blur()")
    pg.keyboard.press("k")
    assert body.get_attribute("data-selected") == "2" and body.get_attribute("data-keys") == "off"
    pg.locator("#shortcuts").check()
    # a picture opens full size and closes with Escape
    zoom = pg.locator("#items button.zoom").first
    zoom.click()
    assert zoom.get_attribute("aria-expanded") == "true"
    pg.keyboard.press("Escape")
    assert zoom.get_attribute("aria-expanded") == "false"
    p.clean()
    p.close()


@_in_browser
def test_dossier_prints_every_panel(browser, study):
    """Print media: every item's evidence for every channel and every pairs table shows (the
    selector hides them on screen), the players and controls do not."""
    p = Page(browser, study["dossier"])
    pg = p.page
    pg.emulate_media(media="print")
    n_blocks = pg.locator("#evidence div.aspect").count()
    assert n_blocks == pg.locator("li.item").count() * pg.locator("#channel option").count()
    shown = pg.eval_on_selector_all(
        "#evidence div.aspect, #evidence div.pairs", "els => els.filter(e => "
        "getComputedStyle(e).display !== 'none').length")
    assert shown == n_blocks + pg.locator("#evidence div.pairs").count()
    assert pg.eval_on_selector_all("audio, .buttons, #shortcuts", "els => els.every(e => "
                                   "getComputedStyle(e).display === 'none' || "
                                   "getComputedStyle(e.closest('.shortcuts') || e).display "
                                   "=== 'none')")
    assert pg.locator("#provenance").is_visible()
    p.clean()
    p.close()


@_in_browser
def test_collapsed_dossier_labels_every_section(browser, study):
    p = Page(browser, study["collapsed"])
    pg = p.page
    assert pg.locator("#verdict").get_attribute("data-verdict") == "collapsed"
    for sid in ("query-section", "channels", "items", "evidence"):
        label = pg.locator(f"#{sid} .collapsed-label")
        assert label.count() == 1 and label.is_visible(), sid
        assert "fixed group" in label.inner_text()
    _wait_metadata(pg)
    assert all(a["duration"] > 0 for a in _audio_state(pg))  # an audio query (FluidSynth wav)
    p.clean()
    p.close()


@_in_browser
def test_report_listening_room_loads_local_media_only(browser, study):
    rep = study["report"]
    assert rep.media is not None and rep.media.files > 0
    assert rep.media.folder == rep.html.parent / "report_media"
    p = Page(browser, rep.html)
    pg = p.page
    pg.wait_for_selector("#qv-topk tbody tr", timeout=WAIT_MS)
    csp = pg.locator('meta[http-equiv="Content-Security-Policy"]').get_attribute("content")
    assert "default-src 'none'" in csp and "media-src 'self' file:" in csp
    assert "http" not in csp
    # lazy: the items load nothing before play; the query its metadata only (a media folder
    # that did not travel with the page is then said at once)
    assert pg.locator("#qv-media audio").get_attribute("preload") == "metadata"
    assert {pg.locator("td.listen audio").nth(i).get_attribute("preload")
            for i in range(pg.locator("td.listen audio").count())} == {"none"}
    # load every player of the view (the page itself loads none before play)
    pg.evaluate("() => document.querySelectorAll('#query-view audio').forEach(a => { "
                "a.preload = 'metadata'; a.load(); })")
    _wait_metadata(pg, "#query-view audio")
    audio = _audio_state(pg, "#query-view audio")
    assert len(audio) >= 4  # query 0 and its top 3 items (every setting's, deduplicated)
    for a in audio:
        assert a["error"] is None and a["duration"] > 0, a
    pg.locator("#qv-topk").scroll_into_view_if_needed()
    imgs = _images(pg, "#query-view img")
    assert imgs and all(i["w"] > 0 for i in imgs), imgs
    # the pairs say what the contribution is, with its unit
    words = pg.locator("#qv-pairs td.words").first.inner_text()
    assert "for a random pair; standardised" in words and "SD units" in words
    head = pg.locator("#qv-pairs thead").first.inner_text()
    assert "Standardised (SD of a random group-of-5 mean)" in head
    p.clean(local_media=True)
    p.close()


@_in_browser
def test_report_ab_and_missing_media(browser, study):
    p = Page(browser, study["report"].html)
    pg = p.page
    pg.wait_for_selector("#qv-topk tbody tr", timeout=WAIT_MS)
    pg.locator("#qv-topk button.qv-ab").first.click()
    # playing, and its metadata loaded (play() unpauses before the duration is known)
    pg.wait_for_function("() => { const q = document.getElementById('qv-query-audio'); "
                         "return !q.paused && isFinite(q.duration) && q.duration > 0; }",
                         timeout=WAIT_MS)
    pg.evaluate("() => { const q = document.getElementById('qv-query-audio'); "
                "q.currentTime = Math.max(0, q.duration - 0.3); }")
    pg.wait_for_function("() => document.getElementById('query-view').dataset.played "
                         "=== 'query,item,'", timeout=WAIT_MS)
    # query 2's file does not exist: the view says so and keeps the numbers
    pg.locator("#qv-list").select_option("2")
    sync_api.expect(pg.locator("#query-view")).to_have_attribute("data-query", "2")
    assert "query_2_missing.mid" in pg.locator("#qv-media").inner_text()
    assert pg.locator("#qv-ztable tbody tr").count() == 5
    # the hostile track id is text, never markup
    assert pg.locator("#query-view script").count() == 0
    p.clean(local_media=True)
    p.close()


@_in_browser
def test_a_report_opened_without_its_media_folder_says_so(browser, study, tmp_path):
    """Before: the players showed 0:00 and nothing else. The page names the folder it needs."""
    import shutil

    away = tmp_path / "elsewhere"
    away.mkdir()
    shutil.copy2(study["report"].html, away / "report.html")
    p = Page(browser, away / "report.html")
    pg = p.page
    pg.wait_for_selector("#qv-topk tbody tr", timeout=WAIT_MS)
    pg.wait_for_selector("#qv-media-missing", timeout=WAIT_MS)
    msg = pg.locator("#qv-media-missing").inner_text()
    assert "report_media/" in msg and "Keep that folder next to the page" in msg
    assert pg.locator("#qv-media-missing").get_attribute("role") == "alert"
    p.close()


def _selected(pg):
    return pg.locator("#query-view").get_attribute("data-selected")


@_in_browser
def test_report_keyboard_moves_selection_and_ab(browser, study, tmp_path):
    p = Page(browser, study["report"].html)
    pg = p.page
    pg.wait_for_selector("#qv-topk tbody tr.qv-item", timeout=WAIT_MS)
    view = pg.locator("#query-view")
    assert _selected(pg) == "0"
    assert pg.locator("#qv-topk tbody tr.qv-selected").count() == 1
    pg.keyboard.press("j")  # the view is off screen (the top of the page): keys do nothing
    assert _selected(pg) == "0"
    pg.locator("#qv-topk").scroll_into_view_if_needed()
    hint = pg.locator("#qv-keys")
    assert hint.is_visible() and "A/B" in hint.inner_text()
    items = pg.locator("#qv-topk tbody tr.qv-item")
    n = items.count()
    assert n >= 3  # query 0's items with media in this setting
    pg.keyboard.press("j")
    pg.keyboard.press("j")
    assert _selected(pg) == "2"
    pg.keyboard.press("k")
    assert _selected(pg) == "1"
    chosen = pg.locator("#qv-topk tbody tr.qv-selected")
    assert chosen.count() == 1
    assert chosen.get_attribute("data-rank") == items.nth(1).get_attribute("data-rank")
    assert view.get_attribute("data-selected-track") == items.nth(1).get_attribute("data-track")
    assert chosen.evaluate("tr => getComputedStyle(tr.cells[0]).backgroundColor") != \
        items.nth(0).evaluate("tr => getComputedStyle(tr.cells[0]).backgroundColor")  # visible
    shots = Path("/work/notes/shots")
    target = shots / "report-listening-keys.png" if shots.is_dir() else tmp_path / "keys.png"
    view.screenshot(path=str(target))
    assert target.stat().st_size > 20_000
    for _ in range(n + 2):  # past the end: stays on the last item
        pg.keyboard.press("j")
    assert _selected(pg) == str(n - 1)
    # keys typed into a field are text, not commands
    pg.locator("#qv-search").focus()
    pg.keyboard.type("kk")
    assert _selected(pg) == str(n - 1)
    assert pg.locator("#qv-search").input_value() == "kk"
    pg.locator("#qv-search").fill("")
    pg.locator("#qv-variant").focus()
    pg.keyboard.press("k")
    assert _selected(pg) == str(n - 1)
    pg.evaluate("() => document.activeElement.blur()")
    # the shortcuts can be turned off (for a screen reader's own keys), and on again
    pg.locator("#qv-shortcuts").uncheck()
    pg.keyboard.press("k")
    assert _selected(pg) == str(n - 1)
    pg.locator("#qv-shortcuts").check()
    pg.evaluate("() => document.activeElement.blur()")
    # Tab reaches the rows; Enter selects the focused one
    pg.locator("#qv-topk tbody tr").first.focus()
    pg.keyboard.press("Enter")
    assert _selected(pg) == "0"
    pg.locator("#qv-topk tbody tr.qv-item").nth(n - 1).focus()
    pg.keyboard.press("Enter")
    assert _selected(pg) == str(n - 1)
    pg.evaluate("() => document.activeElement.blur()")
    # to the first item with a clip (one of them is missing on purpose), then A/B
    for _ in range(n + 2):
        pg.keyboard.press("k")
    assert _selected(pg) == "0"
    for _ in range(n):
        if pg.locator("#qv-topk tbody tr.qv-selected audio").count():
            break
        pg.keyboard.press("j")
    assert pg.locator("#qv-topk tbody tr.qv-selected audio").count() == 1
    pg.keyboard.press("a")  # A/B starts with the query
    pg.wait_for_function("() => document.getElementById('query-view').dataset.played "
                         "=== 'query,'", timeout=WAIT_MS)
    pg.wait_for_function("() => { const q = document.getElementById('qv-query-audio'); "
                         "return !q.paused && isFinite(q.duration) && q.duration > 0; }",
                         timeout=WAIT_MS)
    pg.evaluate("() => { const q = document.getElementById('qv-query-audio'); "
                "q.currentTime = Math.max(0, q.duration - 0.3); }")
    pg.wait_for_function("() => document.getElementById('query-view').dataset.played "
                         "=== 'query,item,'", timeout=WAIT_MS)
    pg.wait_for_function("() => !document.querySelector('#qv-topk tr.qv-selected audio').paused",
                         timeout=WAIT_MS)
    pg.keyboard.press(" ")  # pauses what plays
    pg.wait_for_function("() => Array.from(document.querySelectorAll('#query-view audio'))"
                         ".every(a => a.paused)", timeout=WAIT_MS)
    pg.keyboard.press("t")  # toggle: the query, at the item's point of the window
    pg.wait_for_function("() => !document.getElementById('qv-query-audio').paused",
                         timeout=WAIT_MS)
    pg.keyboard.press(" ")
    pg.keyboard.press("n")  # the next query; the selection starts again at its first item
    sync_api.expect(view).to_have_attribute("data-query", "1")
    assert _selected(pg) == "0"
    pg.keyboard.press("p")
    sync_api.expect(view).to_have_attribute("data-query", "0")
    p.clean(local_media=True)
    p.close()


_LINE = re.compile(r"^media: query (\d+)/(\d+) \((.+?)\), (\d+) clips(, \d+ not playable)?, "
                   r"\d+\.\d s$")
_END = re.compile(r"^media: (\d+) files, (\d+\.\d) MB for (\d+) queries \(.*\) in "
                  r"(\d+\.\d) s( -> .+| \(nothing to write\))$")


def _check_lines(lines, n_queries):
    """A start line, one line per query in order, the closing line; returns the last match."""
    assert lines[0].startswith(f"media: clips and pictures of {n_queries} queries"), lines
    per_query = [_LINE.match(x) for x in lines[1:-1]]
    assert all(per_query), lines
    assert [int(m.group(1)) for m in per_query] == list(range(1, n_queries + 1))
    assert {int(m.group(2)) for m in per_query} == {n_queries}
    end = _END.match(lines[-1])
    assert end, lines[-1]
    return per_query, end


@pytest.mark.slow
def test_report_media_progress_lines_with_real_media(study):
    rep = study["report"]
    per_query, end = _check_lines(study["lines"], rep.media.queries)
    names = [m.group(3) for m in per_query]  # index and query id, strongest reading first
    assert all(re.fullmatch(r"(\d+) gen0\1", n) for n in names), names
    assert sum(int(m.group(4)) for m in per_query) > 0
    assert per_query[names.index("2 gen02")].group(5)  # its file is missing: said on its line
    assert int(end.group(1)) == rep.media.files
    assert float(end.group(2)) == pytest.approx(rep.media.bytes / 1e6, abs=0.051)
    assert float(end.group(4)) == pytest.approx(rep.media.seconds, abs=0.051)
    assert end.group(5) == f" -> {rep.media.folder}"


def test_report_cli_prints_media_progress_and_quiet_silences_it(results, tmp_path, capsys,
                                                                 monkeypatch):
    from aria_tda.cli import main

    path, _ = results  # no media files: every clip is named missing, the lines still come
    monkeypatch.delenv("TQDM_DISABLE", raising=False)  # (the tests' quiet environment)
    monkeypatch.setenv("ARIA_PROGRESS", "1")  # the library's convention: draw the bar too
    assert main(["report", str(path), "--out", str(tmp_path / "a.html"), "--no-plots"]) == 0
    cap = capsys.readouterr()
    err = [x for x in re.split(r"[\r\n]+", cap.err) if x.startswith("media: ")]
    lines = [x for x in err if _LINE.match(x) or _END.match(x) or "clips and pictures" in x]
    per_query, end = _check_lines(lines, 14)
    assert all(m.group(5) for m in per_query) and int(end.group(1)) == 0
    assert re.search(r"media: +\d+%\|", cap.err), cap.err  # the tqdm bar
    assert "media: query" not in cap.out and "wrote" in cap.out  # progress on stderr only

    assert main(["report", str(path), "--out", str(tmp_path / "b.html"), "--no-plots",
                 "--quiet"]) == 0
    cap = capsys.readouterr()
    assert "media" not in cap.err and f"wrote {tmp_path / 'b.html'}" in cap.out

