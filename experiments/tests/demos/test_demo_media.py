"""The demos' media (:mod:`aria_tda_experiments.demo_media`): file names, the symbolic feature
store's ``source``/``start``/``end`` and the queries' MIDI files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aria_tda.errors import ParameterError
from aria_tda_experiments import tokenizer as tk
from aria_tda_experiments.demo_media import media_names, query_media, write_token_midis
from demo_medialib import TOL, check_store_sources, midi_seconds


def test_media_names_keep_folders_replace_unsafe_characters_and_stay_unique():
    names = media_names(["bach/bwv1.mxl", "essen/x.abc#3", "essen/x.abc_3", "../up", "a b"],
                        ".mid")
    assert names[0] == "bach/bwv1.mxl.mid"
    assert names[1] == "essen/x.abc_3.mid" and names[2] == "essen/x.abc_3-1.mid"
    assert ".." not in Path(names[3]).parts and names[4] == "a_b.mid"
    assert len(set(names)) == len(names)


def test_token_midis_decode_to_the_tokens_notes(tmp_path):
    notes = [tk.Note(60, 0.0, 0.5, 80), tk.Note(64, 0.25, 1.0, 40), tk.Note(67, 1.0, 1.5, 100)]
    toks = tk.encode(notes)
    (path,) = write_token_midis([toks], ["q/one"], tmp_path / "m", start_velocities=[66])
    assert path == (tmp_path / "m" / "q" / "one.mid").absolute()
    got = tk.read_midi(path)
    want = tk.decode(toks)
    assert [(n.pitch, n.velocity) for n in got] == [(n.pitch, n.velocity) for n in want]
    assert np.allclose([(n.start, n.end) for n in got], [(n.start, n.end) for n in want])
    assert midi_seconds(path) == pytest.approx(1.5, abs=TOL)
    # a file already there is kept (the caller's folder is cleared when its tokens change)
    mtime = path.stat().st_mtime_ns
    write_token_midis([toks], ["q/one"], tmp_path / "m")
    assert path.stat().st_mtime_ns == mtime
    assert query_media([path], tmp_path / "queries.csv") == ["m/q/one.mid"]


def test_feature_store_names_each_work_and_the_window_within_it(tiny_corpus, tmp_path):
    from aria_tda_experiments.featurize import build_feature_store

    store = build_feature_store(tiny_corpus, tmp_path / "store", media_dir=tmp_path / "midi")
    meta = check_store_sources(store, windows="within")
    tm = tiny_corpus.train_meta.set_index("segment_id")
    assert list(meta.index) == list(tm.index)
    assert meta.groupby("work_id")["source"].nunique().eq(1).all()  # one file per work
    assert meta["source"].nunique() == tm["work_id"].nunique()
    # the window's notes are the file's notes inside [start, end): onsets and pitches match
    for sid in meta.index[:: max(1, len(meta) // 5)]:
        row, toks = meta.loc[sid], tiny_corpus.train_tokens[tm.index.get_loc(sid)]
        window = tk.decode(toks, initial_velocity=int(tm.loc[sid, "start_velocity"]))
        inside = {(n.pitch, round((n.start - row["start"]) * 1000))
                  for n in tk.read_midi(row["source"])
                  if row["start"] - 1e-9 <= n.start < row["end"] - 1e-9}
        assert window and {(n.pitch, round(n.start * 1000)) for n in window} <= inside


def test_feature_store_with_one_midi_per_window(tiny_corpus, tmp_path):
    from aria_tda_experiments.featurize import build_feature_store

    store = build_feature_store(tiny_corpus, tmp_path / "store", media_dir=tmp_path / "midi",
                                media="window")
    meta = check_store_sources(store, windows="whole")
    assert meta["source"].nunique() == len(meta)
    i = len(meta) // 2
    want = tk.decode(tiny_corpus.train_tokens[i],
                     initial_velocity=int(tiny_corpus.train_meta["start_velocity"].iloc[i]))
    got = tk.read_midi(meta["source"].iloc[i])
    assert [n.pitch for n in got] == [n.pitch for n in want]
    with pytest.raises(ParameterError, match="media"):
        build_feature_store(tiny_corpus, tmp_path / "s2", media_dir=tmp_path / "m2",
                            media="track")


def test_store_without_media_dir_has_no_media_columns(tiny_corpus, tmp_path):
    from aria_tda.features.store import FeatureStore
    from aria_tda_experiments.featurize import build_feature_store

    meta = FeatureStore.open(build_feature_store(tiny_corpus, tmp_path / "store")).metadata
    assert not {"source", "start", "end"} & set(meta.columns)
    assert not (tmp_path / "midi").exists()
