"""jSymbolic-2.2-compatible mode: every rule on hand-written files, fast == literal reference."""

from __future__ import annotations

import json
import math

import mido
import numpy as np
import pytest

from aria_tda.cli import main
from aria_tda.errors import ParameterError
from aria_tda.features.jsymbolic import (
    CODES,
    java_microsecond_length,
    jsymbolic_features,
    jsymbolic_features_reference,
)
from aria_tda.features.midi import read_midi
from aria_tda.features.symbolic import symbolic_features

from ._midifiles import cc7, make_midi, note, off, on, random_midi, reload, tempo

HIST = {"M-1": 128, "P-2": 12, "C-1": 128, "C-2": 12, "R-13": 12}


def both(mid, tmp_path, **kw):
    """Fast and reference features of a saved file; asserts they agree, returns fast."""
    path = reload(mid, tmp_path)
    fast = jsymbolic_features(path, **kw)
    ref = jsymbolic_features_reference(path, **kw)
    assert list(fast) == list(CODES)
    for code in CODES:
        np.testing.assert_allclose(fast[code], ref[code], rtol=1e-12, atol=1e-15, err_msg=code)
    return fast


def onehot(n, *bins):
    h = np.zeros(n)
    for b, v in bins:
        h[b] = v
    return h


def test_chord_then_note(tmp_path):
    q = 96
    mid = make_midi(
        [[*note(0, q, 60), *note(0, q, 64), *note(0, q, 67), *note(q, 2 * q, 62)]], tpq=q
    )
    f = both(mid, tmp_path)
    # notes on one tick add no interval; the last of them (67) becomes the previous pitch
    np.testing.assert_allclose(f["M-1"], onehot(128, (5, 1.0)))
    np.testing.assert_allclose(f["C-1"], onehot(128, (3, 1 / 3), (4, 1 / 3), (7, 1 / 3)))
    np.testing.assert_allclose(f["C-2"], onehot(12, (3, 1 / 3), (4, 1 / 3), (7, 1 / 3)))
    assert f["C-6"] == pytest.approx(2.0)  # 96 ticks of 3 pitches, 96 ticks of 1
    assert f["C-7"] == pytest.approx(math.sqrt(192 / 191))  # sample SD of 96×(+1), 96×(−1)
    assert f["P-8"] == 7
    np.testing.assert_allclose(f["P-2"], onehot(12, (0, 0.25), (2, 0.25), (4, 0.25), (7, 0.25)))
    np.testing.assert_allclose(f["R-13"], onehot(12, (4, 1.0)))
    assert f["R-25"] == 1.0
    assert f["RT-5"] == pytest.approx(4 / 1.0)  # 2 quarters at 120 bpm
    assert f["D-1"] == f["D-2"] == f["D-4"] == 0.0


def test_pitch_class_rotation_puts_most_common_first(tmp_path):
    mid = make_midi(
        [[*note(0, 96, 64), *note(96, 192, 64), *note(192, 288, 60), *note(288, 384, 67)]]
    )
    f = both(mid, tmp_path)
    # E (pc 4) is most common -> bin 0; C is 8 steps above E, G is 3
    np.testing.assert_allclose(f["P-2"], onehot(12, (0, 0.5), (8, 0.25), (3, 0.25)))


def test_unisons_across_channels(tmp_path):
    mid = make_midi(
        [
            [
                *note(0, 96, 60, vel=100, ch=0),
                *note(0, 96, 64, vel=80, ch=0),
                *note(48, 144, 60, vel=50, ch=1),
            ]
        ]
    )
    f = both(mid, tmp_path)
    # ticks 0-47: C+E -> bin4 += 180·48 ;
    # ticks 48-95: C twice (S=150) + E -> bin0 += 150·48, bin4 += 230·48
    c1 = onehot(128, (0, 7200), (4, 8640 + 11040))
    np.testing.assert_allclose(f["C-1"], c1 / c1.sum())
    assert f["C-6"] == pytest.approx((96 * 2 + 48 * 1) / 144)
    assert f["M-1"] == [0.0] * 128  # same-tick notes only
    assert f["D-1"] == 50
    assert f["D-2"] == pytest.approx(np.std([100, 80, 50], ddof=1))
    assert f["D-4"] == pytest.approx(20 / 2)  # one change on ch0, divided by its 2 notes (2.2)
    g = jsymbolic_features(reload(mid, tmp_path), d4_divisor="changes")
    assert g["D-4"] == pytest.approx(20.0)


def test_drums_excluded_where_22_excludes_them(tmp_path):
    mid = make_midi(
        [
            [
                *note(0, 96, 36, vel=40, ch=9),
                *note(96, 192, 38, vel=40, ch=9),
                *note(0, 48, 60),
                *note(48, 96, 72),
            ]
        ]
    )
    f = both(mid, tmp_path)
    assert f["P-8"] == 12  # drums out of range
    np.testing.assert_allclose(f["M-1"], onehot(128, (12, 1.0)))  # 36 -> 38 not counted
    np.testing.assert_allclose(f["P-2"], onehot(12, (0, 1.0)))
    np.testing.assert_allclose(f["C-1"], np.zeros(128))  # only one pitched note at a time
    assert f["C-6"] == 1.0
    assert f["RT-5"] == pytest.approx(4 / 1.0)  # drums counted
    np.testing.assert_allclose(f["R-13"], onehot(12, (4, 0.5), (2, 0.5)))  # drums counted
    assert f["D-1"] == 60  # drums counted (loudness 40 vs 100)


def test_tempo_changes_first_track_only(tmp_path):
    q = 96
    base = [tempo(0, 500_000), tempo(2 * q, 250_000), *note(0, q, 60), *note(3 * q, 4 * q, 62)]
    mid = make_midi([base], tpq=q)
    f = both(mid, tmp_path)
    assert f["RT-5"] == pytest.approx(2 / 1.5)  # 1 s + 0.5 s
    # a tempo change in another track does not enter Java's sequence length
    mid2 = make_midi([base, [tempo(3 * q, 1_000_000)]], tpq=q)
    path = reload(mid2, tmp_path, "y.mid")
    assert jsymbolic_features(path)["RT-5"] == pytest.approx(2 / 1.5)
    assert read_midi(path).length_seconds == pytest.approx(1.0 + 0.25 + 1.0)  # the merged map does
    assert java_microsecond_length(read_midi(path)) == 1_500_000


def test_first_tempo_after_start_and_under_one_second(tmp_path):
    q = 100
    mid = make_midi([[tempo(q, 1_000_000), *note(0, 2 * q, 60)]], tpq=q)
    f = both(mid, tmp_path)
    assert f["RT-5"] == pytest.approx(1 / 1.5)  # 0.5 s at the default 120 bpm, then 1 s
    short = make_midi([[*note(0, 90, 60)]], tpq=100)  # 0.45 s
    assert both(short, tmp_path)["RT-5"] == 0.0


def test_cc7_volume_changes(tmp_path):
    mid = make_midi(
        [
            [
                cc7(0, 64),
                *note(0, 96, 60, vel=100),
                cc7(96, 127),
                *note(96, 192, 62, vel=100),
                *note(192, 288, 64, vel=100),
            ]
        ]
    )
    f = both(mid, tmp_path)
    # loudness 50, 100, 100 on one channel
    assert f["D-1"] == 50
    assert f["D-4"] == pytest.approx(50 / 3)
    assert jsymbolic_features(reload(mid, tmp_path), d4_divisor="changes")["D-4"] == pytest.approx(
        25.0
    )
    assert f["D-2"] == pytest.approx(np.std([50, 100, 100], ddof=1))


def test_d4_divisor_ratio_is_changes_over_notes(tmp_path, rng):
    mid = make_midi(
        [
            [*note(i * 48, i * 48 + 40, 60 + i % 5, vel=int(v), ch=i % 3)]
            for i, v in enumerate(rng.integers(1, 128, 12))
        ]
    )
    path = reload(mid, tmp_path)
    a = jsymbolic_features(path)["D-4"]
    b = jsymbolic_features(path, d4_divisor="changes")["D-4"]
    per_ch = np.bincount(np.arange(12) % 3)
    assert a == pytest.approx(b * (per_ch - 1).sum() / per_ch.sum())
    with pytest.raises(ParameterError, match="d4_divisor"):
        jsymbolic_features(path, d4_divisor="mean")


@pytest.mark.parametrize("tpq", [96, 480, 10080])
def test_several_ticks_per_quarter_agree(tmp_path, tpq):
    def build(t):
        return make_midi(
            [
                [
                    tempo(0, 600_000),
                    cc7(0, 90),
                    *note(0, t, 60),
                    *note(0, t // 2, 64, vel=70),
                    *note(t // 2, t, 67, vel=90),
                    *note(t, 3 * t, 55, ch=2),
                    *note(t, 2 * t, 42, ch=9),
                ]
            ],
            tpq=t,
        )

    ref = jsymbolic_features(reload(build(96), tmp_path, "a.mid"))
    got = both(build(tpq), tmp_path)
    for code in CODES:
        if code != "C-7":
            np.testing.assert_allclose(got[code], ref[code], rtol=1e-12, err_msg=code)

    # C-7 is a sample SD over ticks (n - 1 with n = sounding ticks = 3 tpq): the population SD
    # is what is resolution-free
    def pop(value, t):
        return value * math.sqrt((3 * t - 1) / (3 * t))

    assert pop(got["C-7"], tpq) == pytest.approx(pop(ref["C-7"], 96), rel=1e-12)


def test_integer_tick_bounds_of_rhythmic_values(tmp_path):
    # tpq 100: 2.2's 16th-note lower bound is 12 + (25 - 12)//2 = 18 ticks, not 18.75
    mid = make_midi([[*note(0, 18, 60)]], tpq=100, end=[200])
    f = both(mid, tmp_path)
    np.testing.assert_allclose(f["R-13"], onehot(12, (1, 1.0)))
    assert f["R-25"] == 0.25
    # the paper form snaps on exact fractions: 0.18 quarters is a 32nd
    paper = symbolic_features(read_midi(reload(mid, tmp_path)).notes())
    np.testing.assert_allclose(paper["rhythmic_value"], onehot(11, (0, 1.0)))


def test_pairing_quirks(tmp_path):
    q = 96
    # overlapping same key: both end at the first Note Off; the Note On written before the
    # Note Off on a shared tick ends at that Note Off (zero length); an unclosed note lasts to
    # the track end for R-13 but is left out of the vertical chart.
    mid = make_midi(
        [
            [
                on(0, 60),
                on(q // 2, 60),
                off(q, 60),
                on(2 * q, 62),
                off(2 * q, 62),
                on(3 * q, 64),
                on(3 * q, 67),
                off(4 * q, 67),
            ]
        ],
        tpq=q,
        end=[5 * q],
    )
    f = both(mid, tmp_path)
    # durations: 96 (quarter), 48 (eighth), 0 (32nd bin), 2·96 unclosed (half), 96 (quarter)
    np.testing.assert_allclose(f["R-13"], onehot(12, (4, 0.4), (2, 0.2), (0, 0.2), (6, 0.2)))
    # chart: 60 once on [0,48), twice on [48,96); 67 alone on [288,384) — 64 never closed
    np.testing.assert_allclose(f["C-1"], onehot(128, (0, 1.0)))
    assert f["C-6"] == 1.0


def test_random_files_fast_equals_reference(tmp_path, rng):
    for k in range(8):
        mid = random_midi(
            rng, tpq=int(rng.choice([24, 96, 100, 120])), n_tracks=int(rng.integers(1, 4))
        )
        both(mid, tmp_path)
        both(mid, tmp_path, d4_divisor="changes")
        _ = k


def test_empty_file_gives_zeros(tmp_path):
    f = both(make_midi([[tempo(0, 500_000)]], tpq=96, end=[960]), tmp_path)
    assert all((v == [0.0] * len(v)) if isinstance(v, list) else v == 0.0 for v in f.values())


def _rescale(mid: mido.MidiFile, factor: int) -> mido.MidiFile | None:
    out = mido.MidiFile(type=mid.type, ticks_per_beat=mid.ticks_per_beat // factor)
    for tr in mid.tracks:
        new = mido.MidiTrack()
        for msg in tr:
            if msg.time % factor:
                return None
            new.append(msg.copy(time=msg.time // factor))
        out.tracks.append(new)
    return out


@pytest.fixture(scope="module")
def chorale(tmp_path_factory):
    music21 = pytest.importorskip("music21")
    score = music21.corpus.parse("bach/bwv66.6")
    path = tmp_path_factory.mktemp("m21") / "bwv66.6.mid"
    score.write("midi", fp=str(path))
    return score, path


def test_bach_chorale_smoke_and_regression(chorale, tmp_path):
    score, path = chorale
    f = jsymbolic_features(path)
    assert json.loads(json.dumps(f)) == f
    for code, n in HIST.items():
        assert len(f[code]) == n and sum(f[code]) == pytest.approx(1.0)
    pitches = [p.midi for n in score.stripTies().recurse().notes for p in n.pitches]
    assert f["P-8"] == max(pitches) - min(pitches)
    s = read_midi(path)
    assert s.n_notes == len(pitches)
    assert 3.0 < f["C-6"] <= 4.0  # four voices, mostly all sounding
    # regression values (music21 10.x writes 10080 ticks per quarter)
    assert f["P-8"] == 34
    assert f["C-6"] == pytest.approx(3.8333333, rel=1e-6)
    assert f["RT-5"] == pytest.approx(7.048648, rel=1e-5)
    # the literal reference on the same music at a coarser resolution
    coarse = _rescale(mido.MidiFile(path), 210)
    assert coarse is not None
    ref = jsymbolic_features_reference(coarse)
    for code in CODES:
        if code != "C-7":
            np.testing.assert_allclose(f[code], ref[code], rtol=1e-12, atol=1e-15, err_msg=code)
    n_fine = _sounding_ticks(s)
    n_coarse = n_fine // 210
    assert f["C-7"] ** 2 * (n_fine - 1) / n_fine == pytest.approx(
        ref["C-7"] ** 2 * (n_coarse - 1) / n_coarse, rel=1e-12
    )


def _sounding_ticks(s) -> int:
    """Ticks on which at least one closed pitched note sounds (union of [on, off))."""
    keep = s.note_closed & (s.note_channel != 9)
    ivals = sorted(zip(s.note_on[keep].tolist(), s.note_off[keep].tolist(), strict=True))
    total, cur_a, cur_b = 0, None, None
    for a, b in ivals:
        if cur_b is None or a > cur_b:
            total += 0 if cur_b is None else cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    return total + (0 if cur_b is None else cur_b - cur_a)


def test_jsymbolic_form_of_symbolic_matches_whole_file_mode(chorale):
    _score, path = chorale
    js = jsymbolic_features(path, d4_divisor="notes")
    sf = symbolic_features(read_midi(path).notes(), form="jsymbolic")
    np.testing.assert_allclose(sf["melodic_interval"], js["M-1"], atol=1e-15)
    np.testing.assert_allclose(sf["pitch_class"], js["P-2"], atol=1e-15)
    np.testing.assert_allclose(sf["vertical_interval"], js["C-2"], atol=1e-12)
    np.testing.assert_allclose(sf["rhythmic_value"], js["R-13"], atol=1e-15)
    for name, code in [
        ("note_density", "RT-5"),
        ("mean_rhythmic_value", "R-25"),
        ("dynamic_range", "D-1"),
        ("velocity_std", "D-2"),
        ("velocity_change", "D-4"),
        ("mean_polyphony", "C-6"),
        ("polyphony_std", "C-7"),
        ("pitch_range", "P-8"),
    ]:
        assert sf[name][0] == pytest.approx(js[code], rel=1e-12), name


def test_cli_json(tmp_path, capsys):
    path = reload(make_midi([[*note(0, 96, 60), *note(96, 192, 67)]]), tmp_path)
    assert main(["features", "jsymbolic", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out) == list(CODES)
    assert out["M-1"][7] == 1.0 and out["P-8"] == 7.0
    assert main(["features", "jsymbolic", str(path)]) == 0
    assert "Melodic Interval Histogram" in capsys.readouterr().out
    assert main(["features", "jsymbolic", str(tmp_path / "nope.mid"), "--json"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_cli_rejects_corrupt_file(tmp_path, capsys):
    bad = tmp_path / "bad.mid"
    bad.write_bytes(b"not midi at all")
    assert main(["features", "jsymbolic", str(bad)]) == 2
    assert "not a readable MIDI file" in capsys.readouterr().err
