"""prepare_feature input checks and prepare_channels from a store (aria_tda.similarity.prepare)."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.errors import AriaWarning, DataError, ParameterError
from aria_tda.similarity import pairwise_reference, prepare_feature

from ._helpers import CQT, vec_spec


def test_vector_input_errors(rng):
    with pytest.raises(DataError, match="168 columns"):
        prepare_feature(CQT, rng.standard_normal((5, 3)))
    x = rng.standard_normal((5, 3))
    x[0, 0] = np.inf
    with pytest.raises(DataError, match="infinite"):
        prepare_feature(vec_spec(3), x)
    with pytest.raises(DataError, match="at least 2 tracks"):
        prepare_feature(vec_spec(3), np.r_[[[1.0, 2, 3]], np.full((3, 3), np.nan)])
    with pytest.raises(ParameterError, match="spec: expected a FeatureSpec"):
        prepare_feature("cqt", x)  # type: ignore[arg-type]
    pf = prepare_feature(vec_spec(3), rng.standard_normal((5, 3)))
    with pytest.raises(ParameterError, match=r"idx: expected row indices in \[0, 5\)"):
        pf.pairwise([0, 5])
    with pytest.raises(ParameterError, match="scale"):
        prepare_feature(vec_spec(3), x[1:], scale=[1.0, 0.0, 1.0])


def test_prepare_channels_from_a_store(rng, tmp_path):
    from aria_tda.features.registry import channels
    from aria_tda.features.store import FeatureStore, write_store
    from aria_tda.similarity import prepare_channels

    n = 30
    feats = {}
    for spec in (s for specs in channels("audio").values() for s in specs):
        if spec.name == "cqt":
            continue  # absent from this store
        if spec.kind == "vector":
            feats[spec.name] = rng.standard_normal((n, spec.dim))
        else:
            feats[spec.name] = [rng.integers(0, 12, rng.integers(0, 10)) for _ in range(n)]
    ids = [f"t{i}" for i in range(n)]
    write_store(tmp_path / "store", modality="audio", track_ids=ids, features=feats)
    store = FeatureStore.open(tmp_path / "store")
    rows = rng.permutation(n)[:20]
    msg = r"channel 'timbre': feature\(s\) \['cqt'\] not in the store"
    with pytest.warns(AriaWarning, match=msg):
        prepared = prepare_channels(store, rows=rows)
    assert list(prepared) == ["rhythm", "harmony", "timbre"]
    assert [pf.name for pf in prepared["harmony"]] == ["chroma", "tonnetz", "chord_progression"]
    chroma = prepared["harmony"][0]
    assert chroma.n == 20
    # the scale is the corpus-wide one (all 30 tracks), not re-estimated on the 20 rows
    np.testing.assert_allclose(chroma.scale, feats["chroma"].std(axis=0, ddof=1))
    np.testing.assert_allclose(
        chroma.pairwise(np.arange(20)),
        pairwise_reference(chroma, np.arange(20), feats["chroma"][rows]),
    )
    only = prepare_channels(store, channels=["rhythm"])
    assert list(only) == ["rhythm"]
    with pytest.raises(ParameterError, match="channels"):
        prepare_channels(store, channels=["melody"])


def _symbolic_store(rng, path, feature_set):
    from aria_tda.features.registry import features
    from aria_tda.features.store import FeatureStore, write_store

    n = 12
    feats = {s.name: rng.random((n, s.dim)) for s in features("symbolic", feature_set=feature_set)}
    write_store(path, modality="symbolic", track_ids=[f"t{i}" for i in range(n)], features=feats)
    return FeatureStore.open(path)


def test_prepare_channels_feature_sets(rng, tmp_path):
    import warnings

    from aria_tda.features.registry import channels
    from aria_tda.similarity import prepare_channels

    store = _symbolic_store(rng, tmp_path / "new", "extended")
    with warnings.catch_warnings():
        warnings.simplefilter("error", AriaWarning)  # a full store: no warning in either set
        ext = prepare_channels(store)
        paper = prepare_channels(store, feature_set="paper")
    for got, fs in ((ext, "extended"), (paper, "paper")):
        want = channels("symbolic", feature_set=fs)
        assert {c: [pf.name for pf in v] for c, v in got.items()} == {
            c: [s.name for s in v] for c, v in want.items()}
    assert [pf.name for pf in ext["texture"]][-2:] == ["voice_transitions", "voice_periodicity"]
    assert "interval_transitions" not in [pf.name for pf in paper["melody"]]
    with pytest.raises(ParameterError, match="feature_set: expected one of 'extended', 'paper'"):
        prepare_channels(store, feature_set="all")


def test_prepare_channels_reads_an_old_store_without_pattern_features(rng, tmp_path):
    import warnings

    from aria_tda.similarity import prepare_channels

    store = _symbolic_store(rng, tmp_path / "old", "paper")  # extracted before the new features
    with pytest.warns(AriaWarning) as caught:
        ext = prepare_channels(store)
    text = sorted(str(w.message) for w in caught)
    assert len(text) == 2
    assert text[0] == (
        "channel 'melody': feature(s) ['interval_transitions'] not in the store (feature set "
        "'extended'); the channel uses the others, ['melodic_interval']")
    assert text[1].startswith(
        "channel 'texture': feature(s) ['voice_transitions', 'voice_periodicity'] not in the "
        "store (feature set 'extended'); the channel uses the others, ['mean_polyphony'")
    assert [pf.name for pf in ext["melody"]] == ["melodic_interval"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", AriaWarning)
        paper = prepare_channels(store, feature_set="paper")
    assert {c: [pf.name for pf in v] for c, v in paper.items()} == {
        c: [pf.name for pf in v] for c, v in ext.items()}
