"""Reference twins of the feature kernels (collected by tests/common/test_reference_twins.py)."""

from __future__ import annotations

import numpy as np

from aria_tda.features.audio.chords import viterbi, viterbi_reference
from aria_tda.features.audio.rhythm import interval_histogram, interval_histogram_reference
from aria_tda.features.jsymbolic import jsymbolic_features, jsymbolic_features_reference
from aria_tda.features.midi import NoteArray
from aria_tda.features.symbolic import symbolic_features, symbolic_features_reference
from twinlib import Twin


def _intervals(rng):
    times = np.round(rng.uniform(0.0, 12.0, 40), 3)
    return (times,), {"bins": 16, "range": (0.2, 2.0)}


def _shuffle_times(rng, args, kwargs):
    return (rng.permutation(args[0]),), kwargs, lambda result: result  # events in any order


def _viterbi(rng):
    k, t = 3, 5
    emit = np.log(rng.dirichlet(np.ones(k), size=t).T)
    trans = np.log(rng.dirichlet(np.ones(k), size=k))
    init = np.log(rng.dirichlet(np.ones(k)))
    return (emit, trans, init), {}


def _notes(rng):
    n = 30
    start = np.maximum(np.round(rng.uniform(-1.0, 6.0, n) / 0.01) * 0.01, 0.0)
    dur = np.round(rng.exponential(0.5, n) / 0.01) * 0.01
    notes = NoteArray.from_arrays(
        start=start,
        end=start + dur,
        pitch=rng.integers(48, 84, n),
        velocity=rng.integers(1, 128, n),
        loudness=rng.integers(1, 128, n),
        channel=rng.choice([0, 1, 9], n),
        track=rng.integers(0, 2, n),
    )
    return (notes,), {"start": 0.5, "duration": 5.0}


def _midi(rng):
    from features._midifiles import random_midi

    return (random_midi(rng, tpq=96, n_tracks=2),), {}


TWINS = [
    Twin(
        "interval_histogram",
        interval_histogram,
        interval_histogram_reference,
        _intervals,
        permute=_shuffle_times,
    ),
    Twin("viterbi", viterbi, viterbi_reference, _viterbi),
    Twin("symbolic_features", symbolic_features, symbolic_features_reference, _notes),
    Twin("jsymbolic_features", jsymbolic_features, jsymbolic_features_reference, _midi),
]
