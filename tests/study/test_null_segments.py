"""The study's null follows the setting's segment map (aria_tda.study.setting).

A segment map with unequal segment counts gets the segment-matched null, keyed by the counts
and the normalisation used (``auto`` resolved); equal counts, or no aggregation, keep the
uniform null of the paper; :func:`planned_rows` / :func:`shared_null` (a study on a cluster)
find the same null from the segment map alone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aria_tda._steps import file_fingerprint
from aria_tda.errors import ManifestMismatchError
from aria_tda.features.store import FeatureStore
from aria_tda.study.pool import planned_rows, shared_null
from aria_tda.study.setting import run_setting
from aria_tda.study.studyfile import load_study

#: segments per track (120 tracks, 240 score rows): 1, 2, 3, 1, 2, 3, ...
COUNTS = np.tile([1, 2, 3], 40)


def _unequal_map(study):
    """Rewrite the planted study's segment map: the 240 rows over tracks of 1-3 segments."""
    ids = np.array([f"t{i:03d}" for i in range(120)])
    pd.DataFrame({"segment": np.arange(240), "track_id": np.repeat(ids, COUNTS)}).to_csv(
        study.parent / "segments.csv", index=False)


def _nulls(study, tmp_path):
    spec = load_study(study)
    store = FeatureStore.open(spec.feature_store)
    nulls: dict = {}
    res = run_setting(spec.settings[0], spec, store, file_fingerprint(spec.feature_store),
                      tmp_path / "cache", nulls, {}, progress=False, log=lambda _: None)
    return spec, store, nulls, res


@pytest.mark.parametrize("normalize", ["zscore", "auto"])
def test_unequal_segment_map_gets_the_matched_null(tmp_path, rng, planted_study, normalize):
    study = planted_study(tmp_path, rng)
    _unequal_map(study)
    study.write_text(study.read_text().replace('normalize = "zscore"',
                                               f'normalize = "{normalize}"'))
    spec, store, nulls, res = _nulls(study, tmp_path)
    (null,) = nulls.values()  # one null for the original and the residual
    used = res["diagnostics"]["normalize_used"]
    assert null.sampling == "segment-matched" and null.normalize == used
    # the null the study made is the one for this segment map (S_track rows = map order)
    rows, present, n_q, counts, planned_norm = planned_rows(spec.settings[0], spec, store,
                                                            return_segments=True)
    np.testing.assert_array_equal(counts, COUNTS)
    assert planned_norm == (None if normalize == "auto" else "zscore")
    prep_cache, shared = shared_null(store, rows, present, spec, n_q, segment_counts=counts,
                                     normalize=used)
    assert list(shared) == list(nulls)  # the same key: a cluster run would share it
    np.testing.assert_array_equal(shared[next(iter(shared))].g, null.g)
    with pytest.raises(ManifestMismatchError, match="segments: null has segment-matched"):
        null.check(next(iter(prep_cache.values())), segment_counts=np.full(120, 2))


def test_equal_segment_map_keeps_the_uniform_null(tmp_path, rng, planted_study):
    study = planted_study(tmp_path, rng)  # two segments per track
    spec, store, nulls, _ = _nulls(study, tmp_path)
    (null,) = nulls.values()
    assert null.sampling == "uniform" and null.segments_digest is None
    rows, present, n_q = planned_rows(spec.settings[0], spec, store)
    _, shared = shared_null(store, rows, present, spec, n_q)  # as a cluster plans it today
    assert list(shared) == list(nulls)
    np.testing.assert_array_equal(shared[next(iter(shared))].g, null.g)
