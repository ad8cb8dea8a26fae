"""Segments: windows, boundaries, batches equal the loop reference window by window."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.features.symbolic import (
    batch_features,
    reference_features,
    segment_notes,
)

from ._notes import arr, assert_same, random_notes


@pytest.mark.parametrize("boundary", ["clip", "onset"])
@pytest.mark.parametrize("how", ["seconds", "hop", "notes", "bounds"])
def test_segmented_batch_equals_reference(rng, boundary, how):
    piece = random_notes(rng, 120, span=20.0)
    kw = {
        "seconds": {"seconds": 4.0},
        "hop": {"seconds": 5.0, "hop": 2.5},
        "notes": {"n_notes": 16, "hop": 12},
        "bounds": {"bounds": [[0, 3], [2.5, 9], [9, 25]]},
    }[how]
    batch = segment_notes(piece, boundary=boundary, **kw)
    for form in ("paper", "jsymbolic"):
        fast = batch_features(batch, form=form, boundary=boundary)
        for i in range(batch.n_segments):
            sl = slice(batch.offsets[i], batch.offsets[i + 1])
            seg = batch.notes.take(np.arange(sl.start, sl.stop))
            ref = reference_features(
                seg,
                start=batch.start[i],
                duration=batch.duration[i],
                owned=batch.onset[sl],
                form=form,
                boundary=boundary,
            )
            assert_same({k: v[i] for k, v in fast.items()}, ref)


def test_segments_cover_every_onset_once(rng):
    piece = random_notes(rng, 200, span=30.0)
    for kw in ({"seconds": 4.0}, {"n_notes": 32}, {"seconds": 7.0, "hop": 7.0}):
        b = segment_notes(piece, **kw)
        owned = b.source_index[b.onset]
        assert sorted(owned.tolist()) == list(range(len(piece)))


def test_boundary_handling():
    # a 3-s note from 1 s crosses the 2-s boundary; a short note lies in the second window
    piece = arr((1.0, 4.0, 60, 100), (2.5, 3.0, 67, 100))
    clip = batch_features(segment_notes(piece, seconds=2.0))
    onset = batch_features(segment_notes(piece, seconds=2.0, boundary="onset"))
    # onset-based features see the long note only in window 0
    np.testing.assert_allclose(clip["note_density"][:, 0], [0.5, 0.5])
    np.testing.assert_allclose(clip["pitch_class"][1], onset["pitch_class"][1])
    # its full duration (6 quarters) counts for the rhythmic value, in window 0
    assert clip["mean_rhythmic_value"][0, 0] == 6.0
    # grid features: with "clip" the held note sounds with the fifth in window 1
    np.testing.assert_allclose(clip["vertical_interval"][1], np.eye(12)[7])
    np.testing.assert_allclose(onset["vertical_interval"][1], np.zeros(12))
    assert clip["mean_polyphony"][1, 0] == pytest.approx((25 * 2 + 75 * 1) / 100)
    assert onset["mean_polyphony"][1, 0] == 1.0


def test_last_window_shorter(rng):
    piece = arr((0, 1, 60, 80), (9.0, 9.5, 62, 80))
    b = segment_notes(piece, seconds=4.0)
    np.testing.assert_allclose(b.start, [0, 4, 8])
    np.testing.assert_allclose(b.duration, [4, 4, 1.5])
