"""Corpus: music21 → tokens → windows; split by work; cache; failures skipped and counted."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.errors import ManifestMismatchError, ParameterError
from aria_tda_experiments import corpus as corpus_mod
from aria_tda_experiments.corpus import (
    CorpusConfig,
    build_corpus,
    convert_work_file,
    load_corpus,
    segment_tokens,
)


def test_split_is_by_work(tiny_corpus):
    c = tiny_corpus
    train_works, test_works = set(c.train_meta["work_id"]), set(c.test_meta["work_id"])
    assert train_works and test_works and not train_works & test_works
    assert set(c.work_ids("train")) == train_works and set(c.work_ids("test")) == test_works
    assert len(test_works) == 2 and len(train_works) == 4  # round(0.34 * 6)
    assert c.summary()["n_works"] == 6


def test_windows_are_slices_of_their_work(tiny_corpus):
    c = tiny_corpus
    assert c.train_tokens.shape == (len(c.train_meta), 32) and c.train_tokens.dtype == np.int64
    for tokens, meta in ((c.train_tokens, c.train_meta), (c.test_tokens, c.test_meta)):
        for row, rec in zip(tokens, meta.itertuples(), strict=True):
            work = c.work_tokens(rec.work_id)
            np.testing.assert_array_equal(row, work[rec.start_token : rec.start_token + 32])
            assert rec.segment_id == f"{rec.work_id}@{rec.start_token:05d}"
    # every full window of every training work is present, in (work, position) order
    expected = [
        (w, s) for w in c.work_ids("train") for s in segment_tokens(c.work_tokens(w), window=32)
    ]
    assert list(zip(c.train_meta["work_id"], c.train_meta["start_token"], strict=True)) == expected
    assert c.train_meta["segment_id"].is_unique
    assert (c.train_meta["end_time"] > c.train_meta["start_time"]).all()


def test_reload_and_reuse(tiny_corpus, tmp_path):
    c = tiny_corpus
    again = load_corpus(c.path, config=c.config)
    np.testing.assert_array_equal(again.train_tokens, c.train_tokens)
    assert again.train_meta.equals(c.train_meta) and again.works.equals(c.works)
    mtime = (c.path / "train_tokens.npy").stat().st_mtime_ns
    reused = build_corpus(
        c.path, config=c.config, work_cache=tmp_path / "unused", progress_bar=False
    )
    assert (c.path / "train_tokens.npy").stat().st_mtime_ns == mtime
    assert not (tmp_path / "unused").exists()  # nothing was converted
    np.testing.assert_array_equal(reused.test_tokens, c.test_tokens)
    with pytest.raises(ManifestMismatchError, match="window"):
        load_corpus(c.path, config=CorpusConfig(max_works=6, window=16, test_fraction=0.34))


def test_subsampling_and_other_window(tiny_corpus, tmp_path):
    work_cache = tiny_corpus.path.parent / "works"
    small = build_corpus(
        tmp_path / "c",
        work_cache=work_cache,
        max_works=6,
        window=32,
        test_fraction=0.34,
        max_train_segments=10,
        progress_bar=False,
    )
    assert small.train_tokens.shape == (10, 32)
    assert set(small.train_meta["segment_id"]) <= set(tiny_corpus.train_meta["segment_id"])
    hop = build_corpus(
        tmp_path / "h",
        work_cache=work_cache,
        max_works=6,
        window=32,
        hop=16,
        test_fraction=0.34,
        progress_bar=False,
    )
    assert len(hop.train_meta) > len(tiny_corpus.train_meta)


def test_failed_works_are_skipped_and_counted(tiny_corpus, tmp_path, monkeypatch):
    real = corpus_mod.convert_work_file
    victim = tiny_corpus.works["source"].iloc[0]

    def flaky(path):
        if str(path).endswith(victim.split("/", 1)[1]):
            return [corpus_mod._failed(0, "x", RuntimeError("boom"))]
        return real(path)

    monkeypatch.setattr(corpus_mod, "convert_work_file", flaky)
    c = build_corpus(
        tmp_path / "c",
        work_cache=tmp_path / "w",
        max_works=6,
        window=32,
        test_fraction=0.34,
        progress_bar=False,
    )
    assert c.n_failed == 1
    row = c.works.set_index("source").loc[victim]
    assert row["status"] == "failed" and "boom" in row["error"] and row["split"] == ""
    assert victim not in set(c.train_meta["work_id"]) | set(c.test_meta["work_id"])
    assert c.summary()["n_works"] == 6  # max_works counts converted works only


def test_convert_bad_file_reports_failure(tmp_path):
    bad = tmp_path / "broken.mxl"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    (rec,) = convert_work_file(bad)
    assert rec["status"] == "failed" and rec["tokens"] is None and rec["error"]


def test_config_validation():
    with pytest.raises(ParameterError, match="collections"):
        CorpusConfig(collections="bach")
    with pytest.raises(ParameterError, match="test_fraction"):
        CorpusConfig(test_fraction=1.0)
    with pytest.raises(ParameterError, match="collections"):
        corpus_mod.list_work_files(["no-such-collection"])


def test_work_labels_for_confound_analysis(tiny_corpus):
    ok = tiny_corpus.works[tiny_corpus.works["status"] == "ok"]
    assert set(ok["mode"]) <= {"major", "minor"} and (ok["key"] != "").all()
    assert (ok["n_parts"] >= 1).all() and (ok["meter"].str.contains("/")).all()
    per_work = ok.set_index("work_id")
    for rec in tiny_corpus.train_meta.itertuples():
        assert (
            rec.key == per_work.loc[rec.work_id, "key"]
            and rec.mode == per_work.loc[rec.work_id, "mode"]
        )
    assert (tiny_corpus.train_meta["composer"] != "").all()


@pytest.mark.slow
def test_malformed_repeats_are_dropped_and_the_work_kept():
    """Haydn op. 74/1 iii has repeats music21 cannot expand; the converter writes it through."""
    m21 = pytest.importorskip("music21")
    from music21.repeat import ExpanderException

    path = corpus_mod.corpus_root() / "haydn" / "opus74no1" / "movement3.mxl"
    with pytest.raises(ExpanderException):  # what music21 alone does with this score
        m21.midi.translate.music21ObjectToMidiFile(m21.converter.parse(str(path)))
    (rec,) = convert_work_file(path)
    assert rec["status"] == "ok" and rec["error"] == "" and rec["n_notes"] > 500
    assert rec["tokens"].size > 1000 and rec["mode"] in {"major", "minor"}


# one short work per collection of the default preset (all four convert in a few seconds)
_DYNAMIC_SAMPLES = (
    "mozart/k156/movement4.mxl",
    "haydn/opus1no1/movement4.mxl",
    "schumann_robert/opus48no2.mxl",
    "schumann_clara/polonaise_op1n3.mxl",
)


@pytest.mark.slow
def test_default_collections_have_varying_dynamics(tmp_path):
    """Works of the demo's default collections carry several velocities, so the windows'
    dynamic features (the D channel) vary across segments instead of being constant."""
    pytest.importorskip("music21")
    from aria_tda_experiments import tokenizer as tk
    from aria_tda_experiments.featurize import window_features
    from aria_tda_experiments.presets import preset

    collections = preset("default").corpus.collections
    assert "bach" not in collections
    files = corpus_mod.list_work_files(collections)
    root = corpus_mod.corpus_root()
    assert {f.split("/")[0] for f in _DYNAMIC_SAMPLES} == set(collections)
    dyn = []
    for rel in _DYNAMIC_SAMPLES:
        assert root / rel in files
        (rec,) = corpus_mod.convert_cached(root / rel, cache=tmp_path)
        tokens = rec["tokens"]
        velocities = np.unique(tokens[(tokens >= tk.SET_VELOCITY) & (tokens < tk.PAD)])
        assert velocities.size > 1, rel
        starts = segment_tokens(tokens, window=64)
        _, vel_before = corpus_mod._window_state(tokens)
        feats = window_features(
            np.stack([tokens[s : s + 64] for s in starts]),
            start_velocities=[tk.DEFAULT_VELOCITY if vel_before[s] < 0 else 4 * vel_before[s] + 2
                              for s in starts],
        )
        dyn.append(np.column_stack([feats[k] for k in
                                    ("velocity_change", "velocity_std", "dynamic_range")]))
    d = np.vstack(dyn)
    assert (d.std(axis=0) > 0).all()  # every dynamic feature varies across the segments
    assert 0.1 < (np.abs(d).sum(axis=1) > 0).mean() < 1.0
