"""The demos' listening room in a real browser (Debian chromium driven by Playwright), shared by
the tiny demo tests (symbolic and audio): a dossier of one query and the report's per-query
view, opened offline. Checked: every player decodes (duration > 0, no media error), every
picture renders, the piano rolls (MIDI) or spectrogram panels (audio) are there, no console
error, no network request but the page itself (the report: and its own ``report_media/``
files, fetched only once a query's listening panel is opened).

One browser per test (:func:`chromium`); the pages are checked in it one after the other.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
#: the switches of tests/report/test_html.py (no background traffic), plus silent autoplay
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--autoplay-policy=no-user-gesture-required",
    "--mute-audio",
]
SHOTS = Path("/work/notes/shots")  # screenshots for the issue's closing note, when it exists


def _why_no_browser() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed"
    if not CHROMIUM.exists():
        return "Debian chromium (/usr/bin/chromium) is not installed"
    return None


#: why the browser checks cannot run here (``None``: they can), for ``pytest.mark.skipif``
NO_BROWSER = _why_no_browser()


@contextlib.contextmanager
def chromium(profile: Path) -> Iterator[object]:
    """A headless Chromium (persistent context in ``profile``), closed on exit."""
    from playwright import sync_api

    pw = sync_api.sync_playwright().start()
    try:
        ctx = pw.chromium.launch_persistent_context(
            str(profile), executable_path=str(CHROMIUM), headless=True, args=ARGS,
            viewport={"width": 1400, "height": 1000})
        try:
            yield ctx
        finally:
            ctx.close()
    finally:
        pw.stop()


class Page:
    """A page with its console messages, page errors, requests and dialogs recorded."""

    def __init__(self, ctx, path: Path):
        self.page = ctx.new_page()
        self.console: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", lambda m: self.console.append((m.type, m.text)))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.url = path.resolve().as_uri()
        self.media = path.resolve().parent.as_uri() + "/report_media/"
        self.page.goto(self.url)

    def clean(self, *, local_media: bool = False) -> None:
        """No console error or warning, no page error, no dialog; no request but the page
        (``local_media``: and files of its own ``report_media/`` folder)."""
        bad = [m for m in self.console if m[0] in ("error", "warning")]
        assert not bad and not self.errors and not self.dialogs, (bad, self.errors, self.dialogs)
        others = [u for u in self.requests
                  if u != self.url and not (local_media and u.startswith(self.media))]
        assert not others, others
        assert self.url in self.requests

    def close(self) -> None:
        self.page.close()


def _audio_state(pg, selector: str) -> list[dict]:
    return pg.eval_on_selector_all(
        selector,
        "els => els.map(e => ({label: e.getAttribute('aria-label'), "
        "src: (e.currentSrc || '').slice(0, 400), duration: e.duration, "
        "error: e.error ? e.error.code : null, ready: e.readyState}))")


def _decoded(pg, selector: str) -> list[dict]:
    """Wait for every player under ``selector`` to have its metadata (or an error)."""
    pg.wait_for_function(
        f"() => Array.from(document.querySelectorAll({selector!r})).every("
        "e => e.readyState >= 1 || e.error)", timeout=30000)
    audio = _audio_state(pg, selector)
    for a in audio:
        assert a["error"] is None and a["duration"] > 0, a
    return audio


def _rendered(pg, selector: str) -> list[dict]:
    """Load every picture under ``selector`` (lazy ones too), wait, and check each has a size."""
    pg.evaluate(f"() => document.querySelectorAll({selector!r}).forEach(i => {{ "
                f"i.loading = 'eager'; }})")
    pg.wait_for_function(
        f"() => Array.from(document.querySelectorAll({selector!r})).every(i => i.complete)",
        timeout=30000)
    imgs = pg.eval_on_selector_all(
        selector, "els => els.map(i => ({alt: i.alt, cls: i.className, w: i.naturalWidth, "
        "h: i.naturalHeight, src: i.getAttribute('src').slice(0, 40)}))")
    for i in imgs:
        assert i["w"] > 0 and i["h"] > 0, i
    return imgs


def _clips(requests: list[str]) -> list[str]:
    return [u for u in requests if u.lower().endswith((".ogg", ".opus", ".wav", ".mp3",
                                                        ".flac"))]


def _item_clips(requests: list[str]) -> list[str]:
    """The training items' clips requested (``t/`` assets; the query's are ``q/``)."""
    return [u for u in _clips(requests) if "/t/" in u]


def _shot(pg, name: str, fallback: Path) -> None:
    target = SHOTS / name if SHOTS.is_dir() else fallback / name
    pg.screenshot(path=str(target), full_page=True)
    assert target.stat().st_size > 20_000  # a page with pictures, not a blank one


def check_dossier(ctx, dossier: Path, *, kind: str, top: int, shot: str | None = None) -> dict:
    """Open a demo's dossier (query and ``top`` items, ``kind`` ``"midi"`` or ``"audio"``)
    offline and check its players, pictures, console and requests. Returns what was seen."""
    p = Page(ctx, dossier)
    pg = p.page
    # every clip of the demos exists: nothing is named missing among the players
    assert pg.locator("#query-section .missing-media, #items .missing-media").count() == 0, (
        pg.locator("#query-section, #items").all_inner_texts())
    assert pg.locator("li.item").count() == top
    audio = _decoded(pg, "audio")
    assert len(audio) == top + 1, audio  # the query and each item
    assert all(a["src"].startswith("data:audio/") for a in audio), audio
    imgs = _rendered(pg, "img")
    assert all(i["src"].startswith("data:image/") for i in imgs), imgs
    rolls = [i for i in imgs if "roll" in i["cls"].split()]
    aligned = [i for i in imgs if "aligned" in i["cls"].split()]
    spectra = [i for i in imgs if i["alt"].startswith("spectrogram")]
    # each item is drawn with the query on one axis from the matched position (an aligned
    # view), or beside it (a piano roll or its own panels) when that view could not be drawn
    if kind == "midi":  # SVG: the aligned roll, else the piano roll on the same scales
        assert len(rolls) + len(aligned) == top, imgs
        assert all(i["src"].startswith("data:image/svg+xml") for i in rolls + aligned)
    else:  # PNG: the query's panels, and each item's aligned view (or its own panels)
        assert len(spectra) + len(aligned) == top + 1 and all(
            i["src"].startswith("data:image/png") for i in spectra + aligned), imgs
    assert pg.locator("#item-list li.item img").count() >= top
    assert pg.locator("main > section").first.get_attribute("id") == "verdict"
    if shot:
        _shot(pg, shot, dossier.parent)
    p.clean()
    p.close()
    return {"audio": audio, "images": imgs, "rolls": rolls, "spectra": spectra,
            "aligned": aligned}


def check_report(ctx, report: Path, *, kind: str, queries: int, top: int,
                 shot: str | None = None) -> dict:
    """Open a demo's report offline and, for its first ``queries`` queries, open the per-query
    view: the players load lazily (``preload="none"``, nothing fetched before), then decode
    from ``report_media/``; the items' pictures (piano rolls for ``"midi"``, spectrogram panels
    for ``"audio"``) render. Returns the players seen per query."""
    assert (report.parent / "report_media").is_dir()
    p = Page(ctx, report)
    pg = p.page
    pg.wait_for_selector("#qv-topk tbody tr", timeout=30000)
    csp = pg.locator('meta[http-equiv="Content-Security-Policy"]').get_attribute("content")
    assert "default-src 'none'" in csp and "http" not in csp
    seen: dict[str, list[dict]] = {}
    # the queries the report kept media for (the strongest and weakest readings), in its order
    kept = pg.evaluate("() => Object.keys(JSON.parse(document.getElementById('aria-data')"
                       ".textContent).media.queries)")
    assert len(kept) >= queries, kept
    fetched = 0  # item clips requested so far: none when the page opens
    for i, q in enumerate(kept[:queries]):
        if i or pg.locator("#query-view").get_attribute("data-query") != q:
            fetched = len(_item_clips(p.requests))
            before = pg.locator("#query-view").get_attribute("data-query")
            pg.locator("#qv-list").select_option(q)  # the demos' query values are positions
            pg.wait_for_function(
                "b => document.getElementById('query-view').dataset.query !== b", arg=before,
                timeout=30000)
        pg.wait_for_selector("#qv-media audio", timeout=30000)
        # lazy: the items' players fetch nothing until asked to (preload="none"); the
        # query's loads its metadata (so a missing media folder is said at once)
        assert all(x == "none" for x in pg.eval_on_selector_all(
            "#query-view td.listen audio", "els => els.map(e => e.getAttribute('preload'))"))
        assert pg.locator("#qv-media audio").get_attribute("preload") == "metadata"
        assert pg.locator("#qv-media .missing-media").count() == 0, pg.locator(
            "#qv-media").inner_text()
        rows = pg.locator("#qv-topk tbody tr.qv-item")
        assert rows.count() >= top, pg.locator("#qv-topk").inner_text()
        assert pg.locator("#qv-topk tbody tr.qv-item .missing-media").count() == 0
        pg.locator("#qv-topk").scroll_into_view_if_needed()
        assert len(_item_clips(p.requests)) == fetched, _item_clips(p.requests)[fetched:]
        pg.evaluate("() => document.querySelectorAll('#query-view audio').forEach(a => { "
                    "a.preload = 'metadata'; a.load(); })")
        audio = _decoded(pg, "#query-view audio")
        assert len(audio) >= top + 1, audio  # the query and the items with a clip
        assert all(a["src"].startswith(p.media) for a in audio), audio
        imgs = _rendered(pg, "#query-view img")
        alts = [i["alt"] for i in imgs]
        if kind == "midi":
            assert sum(a.startswith("piano roll") for a in alts) >= top, alts
        else:
            assert sum(a.startswith("spectrogram") for a in alts) >= top + 1, alts  # + the query
        seen[pg.locator("#query-view").get_attribute("data-query")] = audio
    if shot:
        _shot(pg, shot, report.parent)
    p.clean(local_media=True)
    p.close()
    assert len(seen) == queries  # each opened view showed its own query
    return seen
