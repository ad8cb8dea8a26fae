"""The pattern features of the onset groups: interval_transitions, voice_transitions,
voice_periodicity — hand-computed cases, invariants, batch == reference."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.features.midi import NoteArray
from aria_tda.features.symbolic import (
    batch_features,
    reference_features,
    segment_notes,
    symbolic_features,
    symbolic_features_batch,
    symbolic_features_reference,
)

from ._notes import arr, assert_same

PATTERN = ("interval_transitions", "voice_transitions", "voice_periodicity")
FORMS = ("paper", "jsymbolic")


def groups(*chords, step=0.5, length=0.4, velocity=80):
    """Notes of onset groups: ``chords[t]`` (a list of pitches) starts at ``t * step`` s."""
    rows = [
        (t * step, t * step + length, p, velocity) for t, chord in enumerate(chords) for p in chord
    ]
    return arr(*rows)


def both(notes, **kw):
    """The features of ``notes`` in both forms, checked equal to the loop reference."""
    out = {}
    for form in FORMS:
        fast = symbolic_features(notes, form=form, **kw)
        assert_same(fast, symbolic_features_reference(notes, form=form, **kw))
        out[form] = fast
    for name in PATTERN:  # the pattern features are the same in both forms
        np.testing.assert_array_equal(out["paper"][name], out["jsymbolic"][name], err_msg=name)
    return out["paper"]


def pair(a, b, k):
    """Flat index of the pair (a, b) in a k x k histogram (row-major)."""
    return k * a + b


# --------------------------------------------------------------------------- hand-computed cases


def test_texture_cycling_1_1_4():
    chords = [[60], [62], [55, 59, 64, 67]] * 6  # 18 groups, 17 transitions
    f = both(groups(*chords, step=0.25, length=0.2), duration=4.5)
    vt = f["voice_transitions"]
    expect = np.zeros(16)
    expect[pair(0, 0, 4)] = 6  # (1, 1)
    expect[pair(0, 3, 4)] = 6  # (1, 4)
    expect[pair(3, 0, 4)] = 5  # (4, 1)
    np.testing.assert_allclose(vt, expect / 17)
    r = f["voice_periodicity"]
    assert np.argmax(r) == 2 and r[2] == pytest.approx(15 / 18)  # r_3 = (18-3)/18 for this cycle
    assert r[5] == pytest.approx(12 / 18) and r[0] < 0 and r[1] < 0
    # the same texture without the cycle: polyphony statistics cannot tell, these can
    shuffled = [chords[i] for i in (0, 1, 3, 4, 2, 5, 6, 7, 9, 10, 8, 11, 12, 13, 15, 16, 14, 17)]
    g = both(groups(*shuffled, step=0.25, length=0.2), duration=4.5)
    assert g["mean_polyphony"][0] == pytest.approx(f["mean_polyphony"][0])
    assert g["polyphony_std"][0] == pytest.approx(f["polyphony_std"][0])
    assert not np.allclose(g["voice_transitions"], vt)
    assert g["voice_periodicity"][2] < r[2]


def test_voice_periodicity_formula():
    sizes = [1, 3, 2, 2, 1]
    f = both(groups(*[list(range(60, 60 + n)) for n in sizes]), duration=3.0)
    x = np.array(sizes, dtype=float) - np.mean(sizes)
    expect = [np.dot(x[:-lag], x[lag:]) / np.dot(x, x) if lag < 5 else 0.0 for lag in range(1, 9)]
    np.testing.assert_allclose(f["voice_periodicity"], expect, rtol=1e-12, atol=1e-15)
    assert np.all(f["voice_periodicity"][4:] == 0.0)  # lags >= the 5 groups


def test_interval_classes_and_their_edges():
    # top voice 60 55 52 51 51 53 57 69: intervals -5 -3 -1 0 +2 +4 +12 -> classes 0..6
    tops = [60, 55, 52, 51, 51, 53, 57, 69]
    f = both(groups(*[[t] for t in tops]), duration=4.0)
    expect = np.zeros(49)
    for a in range(6):
        expect[pair(a, a + 1, 7)] = 1 / 6
    np.testing.assert_allclose(f["interval_transitions"], expect)
    # the other side of every edge: -4 -2 +1 +3 +5 -> classes 1 2 4 5 6
    tops = [60, 56, 54, 55, 58, 63]
    f = both(groups(*[[t] for t in tops]), duration=4.0)
    expect = np.zeros(49)
    for a, b in [(1, 2), (2, 4), (4, 5), (5, 6)]:
        expect[pair(a, b, 7)] = 1 / 4
    np.testing.assert_allclose(f["interval_transitions"], expect)


def test_top_voice_is_the_highest_pitch_of_each_group():
    # lower voices move freely; the top voice goes 72 -> 72 -> 74 (unison, up 2)
    f = both(groups([48, 72], [41, 55, 72], [60, 74]), duration=2.0)
    expect = np.zeros(49)
    expect[pair(3, 4, 7)] = 1.0
    np.testing.assert_allclose(f["interval_transitions"], expect)


def test_group_size_counts_distinct_pitches_capped_at_four_and_skips_drums():
    notes = NoteArray.from_arrays(
        start=[0, 0, 0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 1.0],
        end=[0.4] * 3 + [0.9] * 6 + [1.4],
        pitch=[60, 60, 36, 60, 62, 64, 65, 67, 38, 60],
        channel=[0, 1, 9, 0, 0, 0, 0, 0, 9, 0],
    )
    # groups: {60} (unison on two channels + a drum) -> 1; five pitches + a drum -> 4+; {60} -> 1
    f = both(notes, duration=2.0)
    expect = np.zeros(16)
    expect[pair(0, 3, 4)] = 0.5
    expect[pair(3, 0, 4)] = 0.5
    np.testing.assert_allclose(f["voice_transitions"], expect)


@pytest.mark.parametrize("n_groups", [0, 1, 2])
def test_few_onset_groups_give_the_documented_zeros(n_groups):
    chords = [[60], [62, 65]][:n_groups]
    f = both(groups(*chords), duration=2.0)
    assert np.all(f["interval_transitions"] == 0.0)  # fewer than 3 groups: no interval pair
    if n_groups < 2:
        assert np.all(f["voice_transitions"] == 0.0)
        assert np.all(f["voice_periodicity"] == 0.0)
    else:  # sizes 1, 2: one transition; x = (-1/2, 1/2), r_1 = -1/2, longer lags 0
        expect = np.zeros(16)
        expect[pair(0, 1, 4)] = 1.0
        np.testing.assert_allclose(f["voice_transitions"], expect)
        np.testing.assert_allclose(f["voice_periodicity"], [-0.5, 0, 0, 0, 0, 0, 0, 0])


def test_drum_only_segment_has_no_groups():
    notes = NoteArray.from_arrays(
        start=[0, 0.5, 1.0], end=[0.1, 0.6, 1.1], pitch=[36, 38, 36], channel=[9, 9, 9]
    )
    f = both(notes, duration=2.0)
    for name in PATTERN:
        assert np.all(f[name] == 0.0), name


@pytest.mark.parametrize("size", [1, 3, 6])
def test_constant_group_sizes_give_zero_periodicity(size):
    chords = [[p + 2 * j for j in range(size)] for p in (60, 62, 59, 64, 60, 57, 65, 60, 62, 61)]
    f = both(groups(*chords), duration=6.0)
    assert np.all(f["voice_periodicity"] == 0.0)
    c = min(size, 4) - 1
    np.testing.assert_allclose(f["voice_transitions"], np.eye(16)[pair(c, c, 4)])


# --------------------------------------------------------------------------- invariants


def test_transposition_and_time_shift_leave_interval_transitions_unchanged(rng):
    tops = rng.integers(55, 80, 30)
    sizes = rng.integers(1, 4, 30)
    chords = [[int(t) - 7 * j for j in range(int(k))] for t, k in zip(tops, sizes, strict=True)]
    notes = groups(*chords, step=0.25, length=0.2)
    f = both(notes, duration=8.0)
    up = notes.copy()
    up[:, 2] += 5
    later = notes.copy()
    later[:, :2] += 3.0
    for g in (both(up, duration=8.0), both(later, start=3.0, duration=8.0)):
        for name in PATTERN:
            np.testing.assert_array_equal(g[name], f[name], err_msg=name)
    assert f["interval_transitions"].sum() == pytest.approx(1.0)
    assert f["voice_transitions"].sum() == pytest.approx(1.0)
    assert np.all(np.abs(f["voice_periodicity"]) <= 1.0 + 1e-12)


def test_note_order_and_durations_do_not_matter(rng):
    chords = [list(rng.choice(np.arange(48, 84), int(k), replace=False)) for k in
              rng.integers(1, 6, 25)]
    notes = groups(*chords, step=0.25, length=0.2)
    f = both(notes, duration=7.0)
    other = notes[rng.permutation(len(notes))].copy()
    other[:, 1] = other[:, 0] + rng.uniform(0.01, 2.0, len(other))  # overlapping, any length
    g = both(other, duration=7.0)
    for name in PATTERN:
        np.testing.assert_array_equal(g[name], f[name], err_msg=name)


# --------------------------------------------------------------------------- batch == reference


def chordal_notes(rng, n_groups, span=8.0):
    """Random notes in onset groups on a 0.125-s grid: 1-6 notes per group, some drums."""
    times = np.sort(rng.choice(np.arange(int(span / 0.125)) * 0.125, n_groups, replace=False))
    sizes = rng.integers(1, 7, n_groups)
    start = np.repeat(times, sizes)
    n = start.size
    return NoteArray.from_arrays(
        start=start,
        end=start + np.round(rng.exponential(0.4, n) / 0.01) * 0.01,
        pitch=rng.integers(40, 90, n),
        velocity=rng.integers(1, 128, n),
        loudness=rng.integers(1, 128, n),
        channel=rng.choice([0, 1, 9], n, p=[0.45, 0.45, 0.1]),
        track=rng.integers(0, 2, n),
    )


@pytest.mark.parametrize("form", FORMS)
def test_batch_equals_reference_on_random_chords(rng, form):
    segs = [chordal_notes(rng, int(k)) for k in rng.integers(0, 40, 30)]
    fast = symbolic_features_batch(segs, durations=np.full(30, 8.5), form=form)
    for i, seg in enumerate(segs):
        ref = reference_features(seg, duration=8.5, form=form)
        assert_same({k: v[i] for k, v in fast.items()}, ref)


@pytest.mark.parametrize("kw", [{"seconds": 2.0, "hop": 1.0}, {"n_notes": 12, "hop": 9}])
def test_segmented_batch_equals_reference_window_by_window(rng, kw):
    piece = chordal_notes(rng, 50, span=12.0)
    batch = segment_notes(piece, **kw)
    for form in FORMS:
        fast = batch_features(batch, form=form)
        for i in range(batch.n_segments):
            sl = slice(batch.offsets[i], batch.offsets[i + 1])
            ref = reference_features(
                batch.notes.take(np.arange(sl.start, sl.stop)),
                start=batch.start[i],
                duration=batch.duration[i],
                owned=batch.onset[sl],
                form=form,
            )
            for name in PATTERN:
                np.testing.assert_allclose(fast[name][i], ref[name], rtol=1e-12, atol=1e-12,
                                           err_msg=f"{name}[{i}]")
