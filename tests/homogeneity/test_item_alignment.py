"""How like its query each attributed track is, per channel, against the pool
(:mod:`aria_tda.homogeneity.item_alignment`): the numbers the dossier prints per item."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.errors import ParameterError
from aria_tda.homogeneity.item_alignment import TIE_SHARE, item_alignment

from ._helpers import make_features


@pytest.fixture
def corpus():
    rng = np.random.default_rng(11)
    prepared, raw = make_features(rng, 60)
    return prepared, raw


def _values(raw, rows):
    """The queries' raw values: copies of the corpus' tracks ``rows``."""
    out = {}
    for feats in raw.values():
        for name, v in feats.items():
            out[name] = v[rows] if isinstance(v, np.ndarray) else [v[r] for r in rows]
    return out


def test_a_query_s_own_copy_is_the_pool_track_most_like_it(corpus):
    prepared, raw = corpus
    queries = np.array([5, 17, 40])
    groups = np.stack([[q, (q + 1) % 60, (q + 2) % 60] for q in queries])
    ia = item_alignment(prepared, _values(raw, queries), groups)
    assert ia.alignment.shape == (len(ia.channels), 3, 3)
    for c, ch in enumerate(ia.channels):
        if ch == "harmony":  # chords may be empty (similarity ties at the top): skip the rank
            continue
        # the copy ranks first: percentile 100 (no other pool track is as like the query)
        assert np.allclose(ia.percentile[c, :, 0], 100.0), (ch, ia.percentile[c, :, 0])
        assert (ia.alignment[c, :, :1] > ia.alignment[c, :, 1:]).all()
        assert ia.informative[c, :, 0].all()
    assert ((ia.percentile >= 0) & (ia.percentile <= 100)).all()


def test_a_constant_feature_cannot_discriminate(corpus):
    prepared, raw = corpus
    raw = {ch: dict(f) for ch, f in raw.items()}
    const = np.ones_like(raw["timbre"]["mfcc"])
    from aria_tda.similarity import prepare_feature

    from ._helpers import vspec

    with pytest.warns(Warning):  # zero-variance dimensions are dropped, with a warning
        prepared = {**prepared, "timbre": [prepare_feature(vspec("mfcc", "timbre", 2), const)]}
    values = _values(raw, np.array([3, 9]))
    values["mfcc"] = np.ones((2, 2))
    ia = item_alignment(prepared, values, np.array([[1, 2], [4, 5]]))
    c = ia.channels.index("timbre")
    assert not ia.informative[c].any()  # every pool track is equally like the query
    assert np.allclose(ia.tied[c], 1.0) and TIE_SHARE < 1.0


def test_excluded_queries_and_pool_rows(corpus):
    prepared, raw = corpus
    pool = np.ones(60, dtype=bool)
    pool[:10] = False
    values = _values(raw, np.array([20, 30]))
    ia = item_alignment(prepared, values, np.array([[20, 21], [30, 31]]), pool=pool,
                        exclude=np.array([False, True]))
    assert np.isnan(ia.alignment[:, 1]).all() and np.isfinite(ia.alignment[0, 0]).all()
    with pytest.raises(ParameterError, match="groups"):
        item_alignment(prepared, values, np.array([[1, 2], [3, 4]]), pool=pool)  # outside
    with pytest.raises(ParameterError, match="exclude"):
        item_alignment(prepared, values, np.array([[20, 21], [30, 31]]), exclude=[True])
