"""The symbolic features: hand-computed cases, invariants, file extractors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from aria_tda.errors import DataError
from aria_tda.features.midi import NoteArray, read_midi
from aria_tda.features.registry import features as registry_features
from aria_tda.features.symbolic import (
    FEATURE_NAMES,
    batch_features,
    extract_file,
    extract_file_record,
    extract_file_segments,
    feature_dims,
    make_batch,
    reference_features,
    segment_notes,
    symbolic_features,
    symbolic_features_batch,
)

from .._midifiles import make_midi, note, reload, tempo
from ._notes import arr, assert_same, random_notes

# --------------------------------------------------------------------------- names and shapes


def test_names_and_dims_follow_registry():
    assert FEATURE_NAMES == tuple(s.name for s in registry_features("symbolic"))
    f = symbolic_features(arr((0, 1, 60, 100)))
    for spec in registry_features("symbolic"):
        assert f[spec.name].shape == (spec.dim,)
    g = symbolic_features(arr((0, 1, 60, 100)), form="jsymbolic")
    assert {k: v.shape[0] for k, v in g.items()} == feature_dims("jsymbolic")
    assert (
        feature_dims("jsymbolic")["melodic_interval"] == 128
        and feature_dims("jsymbolic")["rhythmic_value"] == 12
    )


# --------------------------------------------------------------------------- hand-computed cases


def test_melodic_intervals_signed_with_same_onset_rule():
    # C E G chord at 0, then D: same-onset notes add nothing; G becomes the previous pitch
    f = symbolic_features(
        arr((0, 1, 60, 90), (0, 1, 64, 90), (0, 1, 67, 90), (1, 2, 62, 90), (2, 3, 81, 90))
    )
    h = f["melodic_interval"]
    expect = np.zeros(25)
    expect[12 - 5] = 0.5  # 67 -> 62
    expect[24] = 0.5  # 62 -> 81 (+19) counted in the +12 bin
    np.testing.assert_allclose(h, expect)
    g = symbolic_features(
        arr((0, 1, 60, 90), (0, 1, 64, 90), (0, 1, 67, 90), (1, 2, 62, 90), (2, 3, 81, 90)),
        interval_overflow="drop",
    )
    expect = np.zeros(25)
    expect[7] = 1.0
    np.testing.assert_allclose(g["melodic_interval"], expect)


def test_melodic_intervals_per_voice_and_without_drums():
    notes = NoteArray.from_arrays(
        start=[0, 0, 1, 1, 2],
        end=[1, 1, 2, 2, 3],
        pitch=[60, 72, 62, 71, 40],
        channel=[0, 1, 0, 1, 9],
        track=[0, 0, 0, 0, 0],
    )
    h = symbolic_features(notes)["melodic_interval"]
    expect = np.zeros(25)
    expect[12 + 2] = 0.5
    expect[12 - 1] = 0.5
    np.testing.assert_allclose(h, expect)


def test_pitch_class_rotated_and_unrotated():
    notes = arr((0, 1, 64, 80), (1, 2, 64, 80), (2, 3, 60, 80), (3, 4, 67, 80))
    rot = symbolic_features(notes)["pitch_class"]
    np.testing.assert_allclose(rot[[0, 8, 3]], [0.5, 0.25, 0.25])
    raw = symbolic_features(notes, rotate_pitch_class=False)["pitch_class"]
    np.testing.assert_allclose(raw[[4, 0, 7]], [0.5, 0.25, 0.25])
    assert rot.sum() == pytest.approx(1.0)


def test_vertical_intervals_on_50hz_grid():
    # C4 + E5 (16 semitones -> class 4) for 1 s, then C4 alone
    f = symbolic_features(arr((0, 2, 60, 100), (0, 1, 76, 50)))
    np.testing.assert_allclose(f["vertical_interval"], np.eye(12)[4])
    # unison across channels: bin 0 gets the summed strength, the fifth gets S_p + S_q
    notes = NoteArray.from_arrays(
        start=[0, 0, 0],
        end=[1, 1, 1],
        pitch=[60, 60, 67],
        velocity=[100, 20, 30],
        channel=[0, 1, 0],
    )
    v = symbolic_features(notes)["vertical_interval"]
    expect = np.zeros(12)
    expect[0] = 120
    expect[7] = 150
    np.testing.assert_allclose(v, expect / expect.sum())


def test_polyphony_statistics():
    # a triad for 1 s (50 frames of 3), then one note for 1 s (50 frames of 1), then 1 s rest
    f = symbolic_features(
        arr((0, 1, 60, 80), (0, 1, 64, 80), (0, 1, 67, 80), (1, 2, 72, 80)), duration=3.0
    )
    assert f["mean_polyphony"][0] == pytest.approx(2.0)
    assert f["polyphony_std"][0] == pytest.approx(math.sqrt(100 / 99))
    # two notes of one pitch count once
    g = symbolic_features(
        NoteArray.from_arrays(start=[0, 0], end=[1, 1], pitch=[60, 60], channel=[0, 1])
    )
    assert g["mean_polyphony"][0] == 1.0 and g["polyphony_std"][0] == 0.0


def test_note_density_uses_window_length():
    notes = arr(*[(i * 0.5, i * 0.5 + 0.25, 60, 80) for i in range(10)])
    assert symbolic_features(notes, duration=5.0)["note_density"][0] == pytest.approx(2.0)
    assert symbolic_features(notes, duration=10.0)["note_density"][0] == pytest.approx(1.0)
    assert symbolic_features(arr((0, 0.2, 60, 80)), duration=0.9)["note_density"][0] == 0.0


def test_rhythmic_values_in_quarters():
    # at 120 bpm a quarter is 0.5 s; 0.25 s eighth; 4 s = 8 quarters (double whole); 3.6 s = 7.2 q
    f = symbolic_features(
        arr((0, 0.5, 60, 80), (0, 0.25, 62, 80), (0, 4.0, 64, 80), (0, 3.6, 65, 80))
    )
    h = f["rhythmic_value"]
    np.testing.assert_allclose(h[[4, 2, 10]], [0.25, 0.25, 0.5])
    assert f["mean_rhythmic_value"][0] == pytest.approx((1 + 0.5 + 8 + 8) / 4)
    # tempo parameter: at 60 bpm 0.5 s is an eighth
    g = symbolic_features(arr((0, 0.5, 60, 80)), qpm=60)
    assert g["mean_rhythmic_value"][0] == 0.5
    # 2.2 form: 12 bins, 12 quarters is its own bin
    j = symbolic_features(arr((0, 6.0, 60, 80)), form="jsymbolic")
    assert j["rhythmic_value"].shape == (12,) and j["rhythmic_value"][11] == 1.0
    p = symbolic_features(arr((0, 6.0, 60, 80)))
    assert p["rhythmic_value"][10] == 1.0


def test_rhythmic_values_from_ticks_ignore_tempo(tmp_path):
    mid = make_midi([[tempo(0, 1_000_000), *note(0, 96, 60), *note(96, 144, 62)]], tpq=96)
    f = extract_file(reload(mid, tmp_path))
    np.testing.assert_allclose(f["rhythmic_value"][[4, 2]], [0.5, 0.5])


def test_dynamics():
    notes = NoteArray.from_arrays(
        start=[0, 1, 2, 3, 0.5],
        end=[1, 2, 3, 4, 1],
        pitch=[60] * 5,
        velocity=[100, 80, 80, 120, 10],
        channel=[0, 0, 0, 0, 9],
    )
    f = symbolic_features(notes)
    # channel 0 in onset order: 100 80 80 120 -> changes 20 0 40; channel 9 alone
    assert f["velocity_change"][0] == pytest.approx(20.0)
    assert symbolic_features(notes, d4_divisor="notes")["velocity_change"][0] == pytest.approx(
        60 / 4
    )
    assert f["velocity_std"][0] == pytest.approx(np.std([100, 80, 80, 120, 10], ddof=1))
    assert f["dynamic_range"][0] == 110
    assert f["pitch_range"][0] == 0


def test_loudness_used_for_dynamics(tmp_path):
    from .._midifiles import cc7

    mid = make_midi([[cc7(0, 64), *note(0, 96, 60, vel=100), *note(96, 192, 62, vel=100, ch=1)]])
    f = extract_file(reload(mid, tmp_path))
    assert f["dynamic_range"][0] == 100 - 50


def test_pitch_range_without_drums():
    notes = NoteArray.from_arrays(
        start=[0, 0, 0], end=[1, 1, 1], pitch=[35, 60, 79], channel=[9, 0, 0]
    )
    assert symbolic_features(notes)["pitch_range"][0] == 19


def test_empty_segment_is_all_zero():
    f = symbolic_features(arr(), duration=4.0)
    for k, v in f.items():
        assert np.all(v == 0.0), k


# --------------------------------------------------------------------------- invariants


def test_histograms_sum_to_one_or_zero(rng):
    segs = [random_notes(rng, int(k)) for k in rng.integers(0, 30, 20)]
    f = symbolic_features_batch(segs, durations=np.full(20, 8.0))
    for name in ("melodic_interval", "pitch_class", "vertical_interval", "rhythmic_value"):
        s = f[name].sum(axis=1)
        assert np.all(np.isclose(s, 1.0) | (s == 0.0)), name
        assert np.all(f[name] >= 0)


def test_transposition_and_time_shift_invariance(rng):
    # onsets on the 50 Hz grid, shift by whole frames: frame rounding is unaffected
    n = random_notes(rng, 40, drums=False, grid=0.02)
    counts = np.bincount(n.pitch % 12, minlength=12)
    assert (
        counts == counts.max()
    ).sum() == 1  # a tie for the top pitch class would rotate differently
    f = symbolic_features(n, duration=10.0)
    up = NoteArray.from_arrays(
        start=n.start,
        end=n.end,
        pitch=n.pitch + 5,
        velocity=n.velocity,
        loudness=n.loudness,
        channel=n.channel,
        track=n.track,
    )
    g = symbolic_features(up, duration=10.0)
    shifted = NoteArray.from_arrays(
        start=n.start + 3.0,
        end=n.end + 3.0,
        pitch=n.pitch,
        velocity=n.velocity,
        loudness=n.loudness,
        channel=n.channel,
        track=n.track,
    )
    h = symbolic_features(shifted, start=3.0, duration=10.0)
    for k in FEATURE_NAMES:
        np.testing.assert_allclose(h[k], f[k], atol=1e-12, err_msg=k)
        np.testing.assert_allclose(g[k], f[k], atol=1e-12, err_msg=k)  # rotated pitch class too


def test_velocity_offset_changes_only_nothing_but_scale_free_stats(rng):
    n = random_notes(rng, 30, drums=False)
    louder = NoteArray.from_arrays(
        start=n.start,
        end=n.end,
        pitch=n.pitch,
        velocity=n.velocity,
        loudness=np.minimum(n.loudness, 100) + 20,
        channel=n.channel,
        track=n.track,
    )
    base = NoteArray.from_arrays(
        start=n.start,
        end=n.end,
        pitch=n.pitch,
        velocity=n.velocity,
        loudness=np.minimum(n.loudness, 100),
        channel=n.channel,
        track=n.track,
    )
    a, b = symbolic_features(base), symbolic_features(louder)
    for k in ("velocity_change", "velocity_std", "dynamic_range"):
        assert a[k][0] == pytest.approx(b[k][0])


# --------------------------------------------------------------------------- files


def test_extract_file_matches_notes_api(tmp_path):
    mid = make_midi(
        [
            [
                *note(0, 96, 60),
                *note(0, 96, 64),
                *note(96, 288, 67, vel=70),
                *note(96, 192, 36, ch=9),
            ],
            [*note(48, 96, 72, ch=1)],
        ],
        tpq=96,
        end=[384, 384],
    )
    path = reload(mid, tmp_path)
    feats, meta = extract_file_record(path)
    assert (
        meta["n_notes"] == 5
        and meta["duration"] == pytest.approx(2.0)
        and meta["ticks_per_quarter"] == 96
    )
    assert_same(feats, symbolic_features(read_midi(path).notes()))
    assert_same(feats, reference_features(read_midi(path).notes()))
    seg, rows = extract_file_segments(path, seconds=1.0)
    assert seg["pitch_class"].shape == (2, 12) and [r["segment"] for r in rows] == [0, 1]
    assert sum(r["n_notes"] for r in rows) == 5


def test_extract_file_rejects_silent_file(tmp_path):
    path = reload(make_midi([[tempo(0, 500_000)]], end=[960]), tmp_path)
    with pytest.raises(DataError, match="no notes"):
        extract_file(path)


def test_mixed_sources_keep_their_own_ticks(tmp_path, rng):
    # files with other resolutions and tempo maps, plus a seconds-only segment, in one batch
    a = read_midi(
        reload(
            make_midi(
                [[tempo(0, 400_000), *note(0, 100, 60), *note(18, 118, 64), *note(100, 300, 67)]],
                tpq=100,
            ),
            tmp_path,
            "a.mid",
        )
    ).notes()
    b = read_midi(
        reload(
            make_midi(
                [
                    [
                        tempo(0, 750_000),
                        tempo(480, 300_000),
                        *note(0, 240, 62),
                        *note(240, 1200, 69, vel=40),
                    ]
                ],
                tpq=480,
            ),
            tmp_path,
            "b.mid",
        )
    ).notes()
    c = random_notes(rng, 20, drums=False)
    for form in ("paper", "jsymbolic"):
        together = symbolic_features_batch(
            [a, b, c], durations=[a.length, b.length, 8.0], form=form
        )
        for i, (x, d) in enumerate([(a, a.length), (b, b.length), (c, 8.0)]):
            alone = symbolic_features(x, duration=d, form=form)
            assert_same({k: v[i] for k, v in together.items()}, alone)
            assert_same(alone, reference_features(x, duration=d, form=form))


def test_plain_array_fast_path_equals_generic_path(rng):
    segs = [
        np.stack(
            [
                s := np.round(rng.uniform(0, 5, k), 2),
                s + 0.25,
                rng.integers(40, 90, k),
                rng.integers(1, 128, k),
            ],
            axis=1,
        )
        for k in rng.integers(0, 30, 25)
    ]
    fast = make_batch(segs)
    slow = make_batch(
        [{"start": x[:, 0], "end": x[:, 1], "pitch": x[:, 2], "velocity": x[:, 3]} for x in segs]
    )
    np.testing.assert_array_equal(fast.offsets, slow.offsets)
    np.testing.assert_array_equal(fast.source_index, slow.source_index)
    np.testing.assert_allclose(fast.duration, slow.duration)
    assert_same(batch_features(fast), batch_features(slow))


def test_empty_batches():
    f = symbolic_features_batch([])
    assert all(v.shape == (0, feature_dims()[k]) for k, v in f.items())
    b = segment_notes(np.zeros((0, 4)), n_notes=4)
    assert b.n_segments == 1 and all(np.all(v == 0) for v in batch_features(b).values())
