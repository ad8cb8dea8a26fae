"""Rhythm kernels that need no audio: interval histograms, downbeat estimate."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.errors import DataError
from aria_tda.features.audio.rhythm import (
    estimate_downbeats,
    interval_histogram,
    interval_histogram_reference,
)

# --- interval histograms -------------------------------------------------------------------


def test_interval_histogram_matches_reference(rng):
    for _ in range(20):
        t = np.cumsum(rng.uniform(0.01, 2.5, size=rng.integers(0, 60)))
        fast = interval_histogram(t, bins=16, range=(0.2, 2.0))
        ref = interval_histogram_reference(list(t), bins=16, range=(0.2, 2.0))
        np.testing.assert_allclose(fast, ref, atol=1e-12)
        assert fast.shape == (16,)
        assert np.isclose(fast.sum(), 1.0) or not fast.any()


def test_interval_histogram_definition():
    # intervals 0.5, 0.5, 0.5, 3.0 (out of range): all mass in the bin holding 0.5
    h = interval_histogram(np.array([1.0, 0.0, 0.5, 1.5, 4.5]), bins=16, range=(0.2, 2.0))
    edges = np.linspace(0.2, 2.0, 17)
    k = np.searchsorted(edges, 0.5, side="right") - 1
    assert h[k] == 1.0 and h.sum() == 1.0
    assert not interval_histogram(np.array([1.0]), bins=16, range=(0.2, 2.0)).any()
    assert not interval_histogram(np.array([0.0, 5.0]), bins=16, range=(0.2, 2.0)).any()
    # both range ends are inside
    h = interval_histogram(np.array([0.0, 0.2, 2.2]), bins=4, range=(0.2, 2.0))
    np.testing.assert_array_equal(h, [0.5, 0, 0, 0.5])
    with pytest.raises(DataError, match="finite"):
        interval_histogram(np.array([0.0, np.nan]), bins=4, range=(0.2, 2.0))


# --- downbeat estimate ------------------------------------------------------------------------


@pytest.mark.parametrize(("meter", "phase"), [(4, 0), (4, 3), (3, 1)])
def test_estimate_downbeats_planted(rng, meter, phase):
    n_beats, per = 24, 10
    frames = np.arange(n_beats) * per + 3
    t = n_beats * per + 10
    chroma = np.zeros((12, t))
    bass = rng.random(t) * 0.1
    down = [i for i in range(n_beats) if (i - phase) % meter == 0]
    roots = [0, 9, 5, 7]
    for j, i in enumerate(down):  # a new chord from each downbeat to the next
        end = frames[down[j + 1]] if j + 1 < len(down) else t
        start = frames[i] if j else 0
        chroma[[roots[j % 4], (roots[j % 4] + 4) % 12], start:end] = 1.0
        bass[frames[i]] += 1.0
    pos = estimate_downbeats(frames, chroma=chroma, bass_onset=bass, beats_per_bar=(3, 4))
    assert pos.tolist() == [(i - phase) % meter + 1 for i in range(n_beats)]


def test_estimate_downbeats_few_beats():
    pos = estimate_downbeats(
        np.array([0, 10, 20]), chroma=np.ones((12, 40)), bass_onset=np.zeros(40)
    )
    assert pos.tolist() == [1, 2, 3]
    assert (
        estimate_downbeats(
            np.array([], dtype=int), chroma=np.ones((12, 4)), bass_onset=np.zeros(4)
        ).size
        == 0
    )
