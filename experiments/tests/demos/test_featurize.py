"""Features of token windows: decoded per window, fed to aria_tda.features.symbolic, stored."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda_experiments import tokenizer as tk
from aria_tda_experiments.featurize import build_feature_store, window_durations, window_features


def test_window_features_match_direct_extraction(tiny_corpus):
    from aria_tda.features.symbolic import symbolic_features

    c = tiny_corpus
    feats = window_features(c.train_tokens, start_velocities=c.train_meta["start_velocity"])
    n = len(c.train_meta)
    assert all(v.shape[0] == n and np.isfinite(v).all() for v in feats.values())
    from aria_tda.features.symbolic import FEATURE_NAMES

    assert len(feats) == len(FEATURE_NAMES) == 15
    for i in (0, n // 2, n - 1):
        notes = tk.decode(
            c.train_tokens[i], initial_velocity=int(c.train_meta["start_velocity"].iloc[i])
        )
        one = symbolic_features(
            notes, duration=float(window_durations(c.train_tokens[i : i + 1])[0])
        )
        for name, value in one.items():
            np.testing.assert_allclose(feats[name][i], value, rtol=1e-12, atol=1e-12)
    # a 4-voice chorale window has polyphony around 4 and a positive note density
    assert 2.0 < np.median(feats["mean_polyphony"]) <= 4.5
    assert (feats["note_density"] > 0).all()


def test_window_durations_equal_corpus_times(tiny_corpus):
    meta = tiny_corpus.train_meta
    np.testing.assert_allclose(
        window_durations(tiny_corpus.train_tokens), meta["end_time"] - meta["start_time"], atol=1e-9
    )


def test_feature_store_is_segment_level(tiny_corpus, tmp_path):
    store_mod = pytest.importorskip("aria_tda.features.store")
    path = build_feature_store(tiny_corpus, tmp_path / "features")
    store = store_mod.FeatureStore.open(path)
    assert store.modality == "symbolic"
    np.testing.assert_array_equal(store.track_ids, tiny_corpus.train_ids)
    assert store.vectors("pitch_class").shape == (len(tiny_corpus.train_meta), 12)
    md = store.metadata
    assert (
        md.loc[tiny_corpus.train_ids, "work_id"].to_numpy()
        == tiny_corpus.train_meta["work_id"].to_numpy()
    ).all()
