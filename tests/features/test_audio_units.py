"""Unit tests of the audio kernels that need no audio: Viterbi, chord scoring, root motions,
interval histograms, downbeat estimate, parameters."""

from __future__ import annotations

import numpy as np
import pytest

from aria.errors import DataError, ParameterError
from aria.features.audio import FEATURE_NAMES, AudioFeatureParams
from aria.features.audio_chords import (
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
from aria.features.audio_madmom import label_root
from aria.features.audio_rhythm import (
    estimate_downbeats,
    interval_histogram,
    interval_histogram_reference,
)
from aria.features.registry import features

# --- parameters ---------------------------------------------------------------------------


def test_params_defaults_follow_the_paper_table():
    p = AudioFeatureParams()
    assert p.sr == 48000
    assert (p.beat_bins, p.beat_range) == (16, (0.2, 2.0))
    assert (p.onset_bins, p.onset_range) == (16, (0.05, 1.0))
    assert p.n_mfcc == 13 and p.cqt_bins == 84 and p.cqt_bins_per_octave == 12
    assert (p.beat_backend, p.chord_backend) == ("librosa", "template")
    assert p.meters == (3, 4)
    assert AudioFeatureParams(beat_backend="beatnet").meters == (2, 3, 4)
    d = p.to_dict()
    assert d["beat_range"] == [0.2, 2.0] and d["beats_per_bar"] is None


def test_params_dims_match_registry():
    p = AudioFeatureParams()
    dims = {
        "beat_interval": p.beat_bins,
        "onset_interval": p.onset_bins,
        "chroma": 12,
        "tonnetz": 6,
        "chord_progression": None,
        "mfcc": 2 * p.n_mfcc,
        "cqt": 2 * p.cqt_bins,
    }
    specs = features("audio")
    assert tuple(s.name for s in specs) == FEATURE_NAMES
    assert {s.name: s.dim for s in specs} == dims


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"hop": 256}, "audio feature parameter: expected one of .*got 'hop'"),
        (
            {"beat_backend": "omnizart"},
            "beat_backend: expected one of 'librosa', 'madmom', 'beatnet'",
        ),
        ({"chord_backend": "omnizart"}, "chord_backend: expected one of"),
        ({"beat_range": (2.0, 0.2)}, r"beat_range\[1\]: expected a finite number >"),
        ({"onset_range": 0.5}, "onset_range: expected a pair"),
        ({"n_mfcc": 0}, "n_mfcc: expected an integer in"),
        ({"cqt_bins": 200}, "cqt_bins: expected a top CQT frequency below Nyquist"),
        ({"beats_per_bar": []}, "beats_per_bar: expected a non-empty list"),
        ({"silence_db": 3.0}, "silence_db"),
    ],
)
def test_params_validation(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        AudioFeatureParams.from_kwargs(**kwargs)


def test_params_lists_become_tuples():
    p = AudioFeatureParams(beat_range=[0.3, 1.5], beats_per_bar=[4])
    assert p.beat_range == (0.3, 1.5) and p.beats_per_bar == (4,)
    hash(p)  # frozen and hashable


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
