"""The segment of an attributed track that the listening room plays: the best for the query."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from aria_tda.media import resolve_media
from aria_tda.media.attributed import SegmentPicker, segment_pickers, segment_refs
from media._userstudy import make_user_study


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("attributed")
    paths = make_user_study(root)
    # a segment-level score matrix: 5 segments (rows in the map's `row` order) x 3 queries
    scores = np.array([
        [0.9, 0.1, np.nan],   # row 0: t-wav#0
        [0.2, 0.8, np.nan],   # row 1: t-wav#1
        [0.5, 0.3, 0.0],      # row 2: t-tempo#0
        [0.4, 0.6, 0.0],      # row 3: t-tempo#1
        [0.0, 0.0, 0.0],      # row 4: t-zzz#0
    ])
    np.save(root / "scores.npy", scores)
    seg = pd.read_csv(paths["segments"], dtype=str, keep_default_na=False)
    seg.insert(0, "row", [1, 0, 3, 2, 4])  # the map's rows are not in score-row order
    seg.to_csv(root / "segments_rows.csv", index=False)
    meta_path = paths["results"] / "results.json"
    meta = json.loads(meta_path.read_text())
    meta["settings"][0].update(scores=str(root / "scores.npy"),
                               segments=str(root / "segments_rows.csv"))
    meta_path.write_text(json.dumps(meta))
    return {**paths, "meta": meta, "root": root}


def test_each_track_plays_its_best_segment_for_the_query(study):
    data = SimpleNamespace(path=study["results"], meta=study["meta"])
    pickers = segment_pickers(data, [0, 1])
    assert set(pickers) == {"seg"}  # the setting without a segment map has nothing to pick
    p = pickers["seg"]
    assert p.active and p.problem is None
    # map row "t-wav#0" is score row 1 and "t-wav#1" score row 0 (the `row` column)
    assert p.pick(0, "t-wav").segment_id == "t-wav#1"  # score 0.9 at row 0
    assert p.pick(1, "t-wav").segment_id == "t-wav#0"  # score 0.8 at row 1
    pick = p.pick(0, "t-tempo")
    assert (pick.segment_id, pick.score, pick.n_segments) == ("t-tempo#1", 0.5, 2)
    assert p.pick(0, "no-such-track") is None
    assert p.pick(2, "t-wav") is None  # all of its scores are NaN: nothing was attributed


def test_the_picked_window_is_cut_from_the_tracks_file(study):
    data = SimpleNamespace(path=study["results"], meta=study["meta"])
    index = resolve_media(study["results"])
    refs = segment_refs(index, segment_pickers(data, [0]), 0,
                        [("t-wav", "seg"), ("t-tempo", "seg"), ("t-wav", "plain")])
    wav = refs["t-wav"]
    assert wav.missing is None and wav.path == index.train("t-wav").path
    assert (wav.start, wav.end, wav.unit) == (2.5, 5.0, "s")  # t-wav#1
    tempo = refs["t-tempo"]
    assert (tempo.start, tempo.end, tempo.unit) == (5 * 480, 7 * 480, "ticks")  # t-tempo#1
    assert segment_refs(index, {}, "not-an-index", [("t-wav", "seg")]) == {}


def test_an_unreadable_matrix_or_map_leaves_whole_tracks_and_says_why(study, tmp_path):
    rec = {"name": "broken", "scores": str(tmp_path / "nope.npy"),
           "segments": str(study["root"] / "segments_rows.csv")}
    p = SegmentPicker(rec, tmp_path)
    assert p.pick(0, "t-wav") is None
    assert "could not be read" in p.problem and "whole tracks are played" in p.problem
    # a map without a `row` column whose segment ids are names: its rows go by position (the
    # study's rule, scores.segment_map.table_rows), so the room plays a segment
    rec = {"name": "ids", "scores": str(study["root"] / "scores.npy"),
           "segments": str(study["segments"])}
    p = SegmentPicker(rec, tmp_path)
    assert p.pick(0, "t-wav") is not None and not p.problem
    assert not SegmentPicker({"name": "plain"}, tmp_path).active
