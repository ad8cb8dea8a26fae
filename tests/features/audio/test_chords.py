"""Chord kernels that need no audio: Viterbi, chord scoring and decoding, root motions."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.errors import DataError, ParameterError
from aria_tda.features.audio.chords import (
    CHORD_LABELS,
    ChordSegment,
    chord_log_emissions,
    chord_scores,
    chord_templates,
    coverage,
    cqt_chroma,
    decode_chords,
    root_motions,
    segments_from_path,
    transition_matrix,
    viterbi,
    viterbi_reference,
)
from aria_tda.features.audio.madmom import label_root

# --- Viterbi --------------------------------------------------------------------------------


def test_viterbi_equals_exhaustive_search(rng):
    for k, t in [(2, 7), (3, 6), (4, 5), (5, 4)]:
        for _ in range(5):
            e = rng.normal(size=(k, t))
            a = np.log(rng.dirichlet(np.ones(k), size=k))
            init = np.log(rng.dirichlet(np.ones(k)))
            np.testing.assert_array_equal(viterbi(e, a, init), viterbi_reference(e, a, init))
            np.testing.assert_array_equal(viterbi(e, a), viterbi_reference(e, a))


def test_viterbi_sticky_transition_smooths_a_blip():
    e = np.zeros((2, 30))
    e[0, :] = 1.0
    e[1, 14:16] = 2.0  # two frames favour state 1 a little
    e[0, 14:16] = 0.0
    assert not viterbi(e, transition_matrix(0.99, 2)).any()
    assert viterbi(e, transition_matrix(0.5, 2))[14] == 1
    assert viterbi(np.zeros((3, 0)), transition_matrix(0.9, 3)).size == 0


def test_transition_matrix_rows_are_distributions():
    a = np.exp(transition_matrix(0.9))
    np.testing.assert_allclose(a.sum(axis=1), 1.0)
    assert np.allclose(np.diag(a), 0.9)
    with pytest.raises(ParameterError, match="self_prob"):
        transition_matrix(1.0)


# --- chord scoring and decoding ---------------------------------------------------------------


def _triad_chroma(root: int, minor: bool, n: int, noise: float = 0.0, rng=None) -> np.ndarray:
    x = np.zeros((12, n))
    x[[root, (root + (3 if minor else 4)) % 12, (root + 7) % 12]] = 1.0
    if noise:
        x += noise * rng.random((12, n))
    return x


def test_templates_and_labels():
    t = chord_templates()
    assert t.shape == (25, 12) and CHORD_LABELS[0] == "N"
    assert CHORD_LABELS[1 + 9] == "A:maj" and CHORD_LABELS[13 + 9] == "A:min"
    assert t[1:].sum(axis=1).tolist() == [3.0] * 24
    np.testing.assert_array_equal(np.flatnonzero(t[13 + 9]), [0, 4, 9])  # A C E


def test_chord_scores_pick_the_triad_and_are_gain_and_offset_invariant(rng):
    for root in range(12):
        for minor in (False, True):
            x = _triad_chroma(root, minor, 3, noise=0.2, rng=rng)
            s = chord_scores(x)
            want = 1 + root + (12 if minor else 0)
            assert (s.argmax(axis=0) == want).all()
            np.testing.assert_allclose(chord_scores(3.0 * x + 0.5), s, atol=1e-12)
    flat = np.ones((12, 4))
    assert (chord_scores(flat).argmax(axis=0) == 0).all()  # flat chroma → N


def test_bass_cue_resolves_relative_major_minor():
    # C E G A: C major and A minor both match 3 notes; the bass decides
    x = np.zeros((12, 1))
    x[[0, 4, 7, 9]] = 1.0
    bass_a = np.zeros((12, 1))
    bass_a[9] = 1.0
    bass_c = np.zeros((12, 1))
    bass_c[0] = 1.0
    assert CHORD_LABELS[chord_scores(x, bass_a).argmax()] == "A:min"
    assert CHORD_LABELS[chord_scores(x, bass_c).argmax()] == "C:maj"


def test_silent_frames_are_no_chord():
    x = _triad_chroma(2, False, 6)
    silent = np.array([True, True, False, False, False, True])
    e = chord_log_emissions(x, silent=silent)
    assert np.all(e[0, silent] == 0) and np.all(np.isneginf(e[1:, silent]))
    with pytest.raises(DataError, match="silent"):
        chord_log_emissions(x, silent=np.ones(3, bool))
    with pytest.raises(DataError, match=r"shape \(12, n_frames\)"):
        chord_scores(np.ones((11, 4)))


def test_decode_chords_on_synthetic_chroma(rng):
    # C (1 s) Am (1 s) N (0.5 s) F (1 s) at 100 frames/s, with noise
    parts = [
        _triad_chroma(0, False, 100),
        _triad_chroma(9, True, 100),
        np.zeros((12, 50)),
        _triad_chroma(5, False, 100),
    ]
    x = np.concatenate(parts, axis=1) + 0.15 * rng.random((12, 350))
    silent = np.zeros(350, bool)
    silent[200:250] = True
    segs = decode_chords(x, frame_period=0.01, silent=silent)
    assert [s.label for s in segs] == ["C:maj", "A:min", "N", "F:maj"]
    np.testing.assert_allclose([s.start for s in segs], [0.0, 1.0, 2.0, 2.5], atol=0.03)
    assert segs[-1].end == pytest.approx(3.5)
    assert root_motions(segs) == [9, 8]
    truth = [(0.0, 1.0, 0), (1.0, 2.0, 9), (2.5, 3.5, 5)]
    assert coverage(segs, truth) > 0.97


def test_segments_from_path():
    segs = segments_from_path(np.array([1, 1, 0, 0, 22]), np.arange(5) * 0.5, 2.5)
    assert [(s.start, s.end, s.root, s.label) for s in segs] == [
        (0.0, 1.0, 0, "C:maj"),
        (1.0, 2.0, -1, "N"),
        (2.0, 2.5, 9, "A:min"),
    ]
    assert segments_from_path(np.array([], dtype=int), np.array([]), 0.0) == []


def test_root_motions_definition():
    assert root_motions([0, 0, 9, -1, 5, 7, 7, 0]) == [9, 8, 2, 5]
    assert (
        root_motions([]) == []
        and root_motions([-1, -1]) == []
        and root_motions([4, 4, -1, 4]) == []
    )
    # N between equal roots merges them; quality changes on one root are no motion
    segs = [
        ChordSegment(0, 1, 0, "C:maj"),
        ChordSegment(1, 2, 0, "C:min"),
        ChordSegment(2, 3, 11, "B:maj"),
    ]
    assert root_motions(segs) == [11]
    # transposition invariance
    prog = [2, 11, 7, 9, 2]
    for k in range(12):
        assert root_motions([(r + k) % 12 for r in prog]) == root_motions(prog)
    assert all(
        1 <= m <= 11 for m in root_motions(list(np.random.default_rng(0).integers(-1, 12, 200)))
    )
    with pytest.raises(DataError, match=r"roots in -1\.\.11"):
        root_motions([0, 12])


def test_cqt_chroma_folds_bins_to_pitch_classes():
    fmin = 32.70319566257483
    c = np.zeros((84, 3))
    c[12 + 9, 0] = 1.0  # A2
    c[48 + 4, 1] = 2.0  # E5
    c[5, 2] = 1.0  # F1: below the treble band
    tre = cqt_chroma(c, bins_per_octave=12, fmin=fmin, lo_hz=4 * fmin)
    assert tre[:, 0].sum() == 0 and tre[4, 1] == 1.0 and tre[:, 2].sum() == 0
    bass = cqt_chroma(c, bins_per_octave=12, fmin=fmin, lo_hz=2 * fmin, hi_hz=8 * fmin)
    assert bass[9, 0] == 1.0 and bass[:, 1].sum() == 0
    with pytest.raises(DataError, match="octave"):
        cqt_chroma(c[:20], bins_per_octave=12, fmin=fmin, lo_hz=4 * fmin)


def test_label_root():
    assert [
        label_root(s) for s in ["C:maj", "A:min", "Bb:maj", "F#:min", "Cb", "N", "X", "G/B"]
    ] == [0, 9, 10, 6, 11, -1, -1, 7]
