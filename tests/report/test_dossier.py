"""The evidence dossier (aria_tda.media.dossier, ``aria-tda evidence``) without a browser.

Fast tests use the report fixture (no media files: every clip is named missing, the numbers
stay); the slow one builds a user study with real MIDI and audio files.
"""

from __future__ import annotations

import html
import re

import numpy as np
import pytest

from aria_tda.cli import main
from aria_tda.errors import ParameterError
from aria_tda.media.dossier import gather_dossier, write_dossier
from aria_tda.media.selection import resolve_query
from aria_tda.report import words
from aria_tda.report.load import load_results

from .conftest import NASTY


def _text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_resolve_query_by_value_id_and_index(results):
    path, frames = results
    data = load_results(path)
    values = sorted(frames["topk"]["query"].unique())
    assert resolve_query(data, values[3]) == values[3]
    assert resolve_query(data, str(values[3])) == values[3]
    assert resolve_query(data, "generated piece 2") == 2  # the queries table's label
    with pytest.raises(ParameterError, match=r"query: expected a query id or a 0-based index "
                       r"below 14 \(e\.g\. 0, 1, 2, 3, 4\), got 'q-nope'"):
        resolve_query(data, "q-nope")
    with pytest.raises(ParameterError, match="below 14"):
        resolve_query(data, 99)


def test_gather_numbers_are_the_tables(results):
    path, frames = results
    data = load_results(path)
    d = gather_dossier(data, 4, top=3)
    assert d.setting == data.settings[0]
    qz = frames["query_z"]
    rows = qz[(qz.setting == d.setting) & (qz.variant == "original") & (qz.K == d.k)
              & (qz["query"] == 4)]
    for c, z in zip(rows.channel, rows.z, strict=True):
        assert d.z[c] == pytest.approx(z)
    finite = {c: z for c, z in d.z.items() if np.isfinite(z)}
    assert d.channel == max(finite, key=finite.get)  # default: the highest z
    t = frames["topk"]
    want = t[(t.setting == d.setting) & (t.variant == "original") & (t["query"] == 4)]
    assert [i["track_id"] for i in d.items] == list(want.sort_values("rank").track_id.head(3))
    p = frames["pairs"]
    for c, lst in d.pairs.items():
        got = [x["contribution"] for x in lst]
        assert got == sorted(got, reverse=True)
        sel = p[(p.setting == d.setting) & (p.variant == "original") & (p.K == d.pairs_k)
                & (p["query"] == 4) & (p.channel == c)]
        assert len(lst) == min(5, len(sel))


def test_unknown_setting_and_channel_are_named(results):
    path, _ = results
    data = load_results(path)
    with pytest.raises(ParameterError, match="setting: expected one of 'TRAK/semantic'"):
        gather_dossier(data, 0, setting="nope")
    with pytest.raises(ParameterError, match="channel: expected one of"):
        gather_dossier(data, 0, channel="nope")
    with pytest.raises(ParameterError, match="top"):
        gather_dossier(data, 0, top=0)


def test_dossier_without_media_files_keeps_numbers_and_names_what_is_missing(results, tmp_path):
    path, _ = results
    out = write_dossier(path, 2, out=tmp_path / "d.html", top=4)
    page = out.read_text(encoding="utf-8")
    assert page.index('id="verdict"') < page.index('id="query-section"')  # verdict first
    csp = html.unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"',
                                  page).group(1))
    assert "default-src 'none'" in csp and "media-src data:" in csp
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    text = _text(page)
    # every z of the query in words, with units
    d = gather_dossier(load_results(path), 2, top=4)
    for c, z in d.z.items():
        assert words.describe_z(c, z, k=d.k) in text
    assert "Not playable" in text or "No media" in text  # the fixture has no media column
    assert text.count("rank ") >= 4


def test_collapsed_setting_labelled_on_every_section(results, tmp_path):
    path, _ = results
    page = write_dossier(path, 0, setting="TRAK/coarse", out=tmp_path / "c.html",
                         media=False).read_text(encoding="utf-8")
    assert 'data-verdict="collapsed"' in page
    sections = re.findall(r'<section id="([^"]+)"[^>]*>(.*?)</section>', page, flags=re.S)
    assert [s for s, _ in sections] == ["verdict", "aspect", "query-section", "items",
                                        "channels", "evidence", "provenance", "units"]
    for sid, body in sections:
        if sid not in ("verdict", "provenance", "units"):
            assert 'class="collapsed-label"' in body, sid


def test_musical_reasons_provenance_and_validation_in_words(results, tmp_path):
    """Each item leads with how like the query it is against the pool (the study's
    ``item_alignment`` numbers), a channel that cannot tell tracks apart says so instead of a
    percentile; the dossier says what produced the scores and what validates the method, and
    what its verdict does and does not say."""
    from aria_tda.media.pdf import TITLE_MARK
    from aria_tda.media.provenance import VERDICT_MEANING

    path, frames = results
    data = load_results(path)
    for q in (2, 3):  # the fixture's first channel ties for odd queries
        d = gather_dossier(data, q, setting="TRAK/semantic", top=3)
        page = write_dossier(path, q, setting="TRAK/semantic", top=3,
                             out=tmp_path / f"q{q}.html", media=False).read_text("utf-8")
        text = _text(page)
        ia = frames["item_alignment"]
        first = d.channels[0]
        for it in d.items:
            row = ia[(ia["setting"] == "TRAK/semantic") & (ia["variant"] == "original")
                     & (ia["query"] == q) & (ia["track_id"] == it["track_id"])]
            assert set(it["likeness"]) == set(row["channel"])
            for ch, x in it["likeness"].items():
                assert words.describe_likeness(ch, **x) in text
            assert it["likeness"][first]["informative"] is (q % 2 == 0)
        flat = words.describe_likeness(first, **d.items[0]["likeness"][first])
        assert ("cannot tell" in flat) is (q % 2 == 1)
        # provenance and validation
        assert '<section id="provenance">' in page
        lds = frames["lds"]
        assert "linear datamodeling score" in text
        trak = float(lds[lds["method"] == "TRAK"]["lds"].iloc[0])
        assert f"rank {int((lds['lds'] > trak).sum()) + 1} of {len(lds)} methods" in text
        says, not_says = VERDICT_MEANING["ok"]
        assert says in text and not_says in text
        assert "the score file carries no manifest" in text or "not recorded" in text
        # print, keyboard and screen readers
        assert f"{TITLE_MARK}</title>" in page
        assert page.count('class="item" data-index=') == 3 and 'tabindex="0"' in page
        assert 'id="announce"' in page and 'aria-live="polite"' in page
        assert 'id="shortcuts"' in page


def test_hostile_ids_and_labels_are_escaped(make_results, tmp_path):
    path, frames = make_results()
    hostile = str(frames["tracks"]["track_id"][0])  # labelled NASTY by the fixture
    t = frames["topk"]
    rows = t[(t.track_id == hostile) & (t.variant == "original")]
    q, setting = int(rows["query"].iloc[0]), str(rows.setting.iloc[0])
    data = load_results(path)
    d = gather_dossier(data, q, setting=setting, top=40)
    assert NASTY in [i["label"] for i in d.items]
    page = write_dossier(path, q, setting=setting, top=40, out=tmp_path / "x.html",
                         media=False).read_text(encoding="utf-8")
    assert "<script>alert" not in page
    assert page.count("<script>") == 1  # the page's own script only
    assert html.escape(NASTY, quote=True) in page


def test_cli_evidence_writes_and_reports_on_stderr(results, tmp_path, capsys):
    path, _ = results
    out = tmp_path / "cli.html"
    assert main(["evidence", str(path), "--query", "1", "--top", "2", "--no-media",
                 "--out", str(out)]) == 0
    cap = capsys.readouterr()
    assert cap.out.strip() == f"wrote {out}"
    assert "[aria-tda evidence" in cap.err and "setting" in cap.err and " s]" in cap.err
    assert out.is_file()
    assert main(["evidence", str(path), "--query", "zz", "--out", str(tmp_path / "e.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("aria-tda evidence: error: ") and "query: expected a query id" in err
    assert "e.g. 0, 1, 2" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "e.html").exists()


@pytest.mark.slow
def test_user_study_dossier_embeds_playable_media(tmp_path_factory):
    from ._listening import HOSTILE, make_user_study

    root = tmp_path_factory.mktemp("user-study")
    res = make_user_study(root)
    out = write_dossier(res, "gen02", top=5, out=root / "q2.html")
    page = out.read_text(encoding="utf-8")
    text = _text(page)
    # query 2's file is missing: named, numbers kept
    assert "query_2_missing.mid" in text and "Not playable" in text
    assert "z = " in text
    # query 1: an audio query (FluidSynth-rendered wav), an audio item and the hostile id
    page1 = write_dossier(res, "gen01", top=5, out=root / "q1.html").read_text(encoding="utf-8")
    assert page1.count('<audio id="player-') == 6
    assert 'src="data:audio/ogg;base64,' in page1
    assert 'src="data:image/svg+xml;base64,' in page1  # drawn evidence
    assert 'src="data:image/png;base64,' in page1  # audio: spectrogram panels
    assert html.escape(HOSTILE) in page1 and "<script>alert" not in page1
    # query 3: its best track's file is gone; named, its numbers kept
    page3 = write_dossier(res, 3, top=1, out=root / "q3.html").read_text(encoding="utf-8")
    assert "train_003.mid" in _text(page3) and "does not exist" in _text(page3)
    assert "rank 1: attribution score" in _text(page3)
