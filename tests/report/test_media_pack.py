"""Which items the report keeps media for: bounded per query and in all."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pandas as pd
import pytest

from aria_tda.media.selection import select_media_items


def _data():
    rows = []
    for s in ("A", "B"):
        for v in ("original", "residual"):
            for q in (0, 1):
                for r in range(4):
                    rows.append({"setting": s, "variant": v, "query": q, "rank": r,
                                 "track_id": f"{s}{v[0]}{q}-{r}", "score": 1.0 - r})
    topk = pd.DataFrame(rows)
    return SimpleNamespace(table=lambda name: topk if name == "topk" else None,
                           settings=["A", "B"], variants=["original", "residual"])


def test_top_items_of_every_setting_original_first_and_the_setting_that_listed_them():
    first: dict = {}
    out = select_media_items(_data(), [0, 1], top=2, first_setting=first)
    assert out["0"] == ["Ao0-0", "Ao0-1", "Bo0-0", "Bo0-1", "Ar0-0", "Ar0-1", "Br0-0", "Br0-1"]
    assert first[("0", "Bo0-1")] == "B" and first[("1", "Ar1-0")] == "A"


def test_the_cap_keeps_the_first_settings_best_items_across_queries():
    out = select_media_items(_data(), [0, 1], top=2, max_items=5)
    kept = {t for lst in out.values() for t in lst}
    assert len(kept) == 5
    # original scores first, setting A before B, best ranks first, queries in turn
    assert out["0"] == ["Ao0-0", "Ao0-1", "Bo0-0"] and out["1"] == ["Ao1-0", "Ao1-1"]
    assert select_media_items(_data(), [0], top=2, max_items=0) == {"0": []}


@pytest.mark.slow
def test_a_rebuilt_report_reuses_its_clips_and_rebuilds_what_changed(tmp_path, monkeypatch):
    """The second build of the same results loads and renders no clip (the disk cache) and
    writes the same bytes; a training file whose content changed is built again, alone."""
    import soundfile as sf

    from aria_tda.media import pack as media_pack
    from aria_tda.media.report_media import write_report_media
    from aria_tda.report.load import load_results

    from ._listening import make_user_study

    monkeypatch.setenv("ARIA_CACHE_DIR", str(tmp_path / "cache"))
    res = make_user_study(tmp_path / "study")
    loads: list[str] = []
    real_load = media_pack.load_view

    def counting_load(ref, view, **kw):
        if not ref.missing:  # a missing file is looked for again each time (not cached)
            loads.append(str(ref.path))
        return real_load(ref, view, **kw)

    monkeypatch.setattr(media_pack, "load_view", counting_load)

    def build(name):  # the same folder each time, as a rebuilt report replaces it
        folder = tmp_path / "report_media"
        manifest, _ = write_report_media(load_results(res), folder, queries=6, top=3)
        files = {p.relative_to(folder).as_posix(): p.read_bytes()
                 for p in folder.rglob("*") if p.is_file()}
        return manifest, files

    m1, first = build("m1")
    n_first = len(loads)
    assert n_first > 6 and any(n.endswith(".ogg") for n in first)
    assert any(n.endswith(".png") for n in first) and any(n.endswith(".svg") for n in first)
    m2, second = build("m2")
    assert len(loads) == n_first  # nothing loaded, rendered or encoded again
    assert second == first and m2 == m1
    wav = tmp_path / "study" / "media" / "train_001.wav"
    y, sr = sf.read(wav)
    sf.write(wav, 0.5 * y[::-1], sr)  # other music in the same file
    # the run recorded the file: other music is refused, not played (aria_tda.media.recorded)
    m3, third = build("m3")
    assert loads[n_first:] == [] and not any(n.startswith("t/t001_") for n in third)
    assert "changed since the results were made" in json.dumps(m3)
    # a results folder without that record (an older one): the file's new clip is built, alone
    meta = json.loads((res / "results.json").read_text())
    del meta["media"]
    (res / "results.json").write_text(json.dumps(meta))
    _, fourth = build("m4")
    rebuilt = loads[n_first:]
    assert rebuilt and set(rebuilt) == {str(wav)}
    changed = {n for n in fourth if fourth[n] != first.get(n)}
    assert changed == {n for n in first if n.startswith("t/t001_")}, changed  # track t001's


def test_with_a_segment_map_each_query_s_segment_counts_toward_the_cap():
    """A segment-level setting plays each query's own best segment of a track: the cap counts
    those clips, not distinct tracks (the audio demo's 15 settings made 499 clips of 120)."""
    rows = [{"setting": "S", "variant": "original", "query": q, "rank": r, "track_id": f"t{r}",
             "score": 1.0 - r} for q in range(3) for r in range(3)]
    topk = pd.DataFrame(rows)
    data = SimpleNamespace(table=lambda name: topk if name == "topk" else None,
                           settings=["S"], variants=["original"])
    tracks = select_media_items(data, [0, 1, 2], top=3, max_items=4)
    assert tracks == {"0": ["t0", "t1", "t2"], "1": ["t0", "t1", "t2"], "2": ["t0", "t1", "t2"]}
    segments = select_media_items(data, [0, 1, 2], top=3, max_items=4, per_query={"S"})
    # best ranks first, queries in turn: every query's best segment, then the next rank
    assert segments == {"0": ["t0", "t1"], "1": ["t0"], "2": ["t0"]}


def test_captions_name_the_file_without_dot_dot_parts(tmp_path):
    from aria_tda.media.clip_views import ClipView, load_view

    def caption(path):
        view = ClipView("t0", "train")
        ref = SimpleNamespace(path=path, start=None, end=None, unit="s", missing="not loaded here")
        load_view(ref, view, context=0.0, max_seconds=1.0, sr=8000, soundfont=None)
        return view.source

    (tmp_path / "corpus").mkdir()
    (tmp_path / "features").mkdir()
    wav = tmp_path / "corpus" / "a.wav"
    wav.write_bytes(b"RIFF")
    assert caption(tmp_path / "features" / ".." / "corpus" / "a.wav") == f"{wav} (whole file)"
    gone = tmp_path / "features" / ".." / "gone.wav"  # not there: shown as named
    assert caption(gone) == f"{gone} (whole file)"


def _read(n_queries=10, with_reading=True):
    """A results stub whose queries read with increasing strength: query q's largest delta
    is q (query 3's is NaN)."""
    qa = pd.DataFrame([{"setting": "S", "variant": "original", "query": q, "channel": c,
                        "delta": (float(q) if q != 3 else float("nan")) - (c == "b")}
                       for q in range(n_queries) for c in ("a", "b")])
    tables = {"query_aspects": qa if with_reading else None,
              "queries": pd.DataFrame({"query": range(n_queries),
                                       "query_id": [f"g{q:02d}" for q in range(n_queries)]})}
    return SimpleNamespace(table=lambda name: tables.get(name), settings=["S"],
                           variants=["original"])


def test_media_go_to_the_strongest_and_weakest_readings_not_the_first():
    from aria_tda.media.selection import pick_media_queries

    ids, why = pick_media_queries(_read(), 4)
    assert ids == [9, 8, 3, 0]  # two strongest, then the two weakest (NaN weakest of all)
    assert why["9"] == why["8"] == "strongest" and why["3"] == why["0"] == "weakest"
    assert "strongest and the weakest" in why["_rule"] and "S" in why["_rule"]
    assert pick_media_queries(_read(), 3)[0] == [9, 8, 3]
    assert pick_media_queries(_read(), 0)[0] == []
    first, w = pick_media_queries(_read(), 3, "first")
    assert first == [0, 1, 2] and w["0"] == "first"
    # without a reading (or query z): the first ones
    assert pick_media_queries(_read(with_reading=False), 2)[0] == [0, 1]
    # named: by query value, query_id or index, each once
    named, w = pick_media_queries(_read(), 99, ["g05", 7, "g05"])
    assert named == [5, 7] and w["5"] == "named"


def test_an_unknown_rule_or_query_is_one_error():
    from aria_tda.errors import ParameterError
    from aria_tda.media.selection import pick_media_queries

    with pytest.raises(ParameterError, match="media_pick"):
        pick_media_queries(_read(), 3, "loudest")
    with pytest.raises(ParameterError, match="query"):
        pick_media_queries(_read(), 3, ["nope"])


@pytest.mark.slow
def test_the_report_and_the_dossier_play_the_same_segment_and_say_its_range(tmp_path,
                                                                             monkeypatch):
    """Before: for one audio query and setting the report played 0-10 s of an item and the
    dossier 20-30 s, and the report showed no range. Now, for every setting, the report's clip
    of an item is the one that setting's dossier plays, with the same file, range and words."""
    import html
    import re

    from aria_tda.media.dossier import write_dossier
    from aria_tda.media.report_media import write_report_media
    from aria_tda.report import words
    from aria_tda.report.load import load_results

    from ._listening import make_user_study

    monkeypatch.setenv("ARIA_CACHE_DIR", str(tmp_path / "cache"))
    res = make_user_study(tmp_path / "study")
    data = load_results(res)
    manifest, _ = write_report_media(data, tmp_path / "report_media", queries=2, pick=["gen00"],
                                     top=2)
    entry = manifest["queries"]["0"]
    assert manifest["pick"]["0"] == "named"
    for setting in data.settings:
        clips = entry["clips"].get(setting) or {}
        out = write_dossier(res, "gen00", setting=setting, top=2,
                            out=tmp_path / f"{setting}.html")
        page = out.read_text(encoding="utf-8")
        captions = [html.unescape(c) for c in re.findall(r'<p class="note clip-source">(.*?)</p>',
                                                         page)][1:]  # [0]: the query's
        items = re.findall(r'<li class="item" data-index="\d+" data-item="([^"]+)"', page)
        assert len(items) == 2 and len(captions) == 2
        for tid, caption in zip(items, captions, strict=True):
            c = clips.get(html.unescape(tid)) or manifest["tracks"][html.unescape(tid)]
            said = words.describe_clip_range(c["source"], tuple(c["window"]), c["duration"])
            assert caption == said + ".", (setting, caption, said)
