"""Musical reasons in audio (aria_tda.media.reasons_audio) on audio synthesised here.

Chords are additive harmonic tones (a triad over a bass an octave below the root) over a click
track at a known tempo; the 3/4 and 4/4 clips accent their downbeats. Each clip is a few
seconds at 22,050 Hz and is analysed once per module.
"""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.errors import DataError, ParameterError
from aria_tda.media.reasons_audio import (
    SR,
    AudioFacts,
    ChordSpan,
    audio_facts,
    beat_sync,
    beat_sync_reference,
    lag_autocorrelation,
    lag_autocorrelation_reference,
    shared_audio_material,
    timbre_words,
)
from aria_tda.media.theory import BeatGrid, Key
from twinlib import Twin

# ------------------------------------------------------------------ synthesis


def _tone(freq: float, seconds: float) -> np.ndarray:
    t = np.arange(round(seconds * SR)) / SR
    y = sum(0.6**k * np.sin(2 * np.pi * freq * (k + 1) * t) for k in range(6))
    return y * np.minimum(1.0, t / 0.01)


def _midi_hz(m: int) -> float:
    return 440.0 * 2.0 ** ((m - 69) / 12)


def _chord(root: int, quality: str, seconds: float) -> np.ndarray:
    third = 4 if quality == "maj" else 3
    notes = (root, root + third, root + 7)
    y = sum(_tone(_midi_hz(m), seconds) for m in notes) + 0.8 * _tone(_midi_hz(root - 12), seconds)
    return y / 4.0


def _clicks(n_samples: int, bpm: float, accents: tuple[float, ...] = (1.0,)) -> np.ndarray:
    y = np.zeros(n_samples)
    burst = np.random.default_rng(0).normal(0.0, 1.0, round(0.01 * SR))
    burst *= np.exp(-np.arange(burst.size) / (0.002 * SR))
    for b in range(int(n_samples / SR * bpm / 60) + 1):
        i = round(b * 60.0 / bpm * SR)
        seg = burst[: max(0, n_samples - i)] * accents[b % len(accents)]
        y[i : i + seg.size] += seg
    return y


def _progression(roots, quality="maj", *, bpm=120.0, beats_per_chord=2, accents=(1.0,)):
    """Chords of ``beats_per_chord`` beats each over a click; peak 0.5."""
    qualities = [quality] * len(roots) if isinstance(quality, str) else quality
    y = np.concatenate(
        [_chord(r, q, beats_per_chord * 60.0 / bpm) for r, q in zip(roots, qualities, strict=True)]
    )
    y = y + 0.5 * _clicks(y.size, bpm, accents)
    return 0.5 * y / np.abs(y).max()


I_IV_V_I_C = (60, 65, 67, 60)
I_IV_V_I_D = (62, 67, 69, 62)


@pytest.fixture(scope="module")
def facts() -> dict[str, AudioFacts]:
    noise = np.random.default_rng(3).normal(0.0, 0.2, 2 * SR)
    sine = 0.3 * np.sin(2 * np.pi * 440.0 * np.arange(2 * SR) / SR)
    return {
        "C": audio_facts(_progression(I_IV_V_I_C), SR),
        "D": audio_facts(_progression(I_IV_V_I_D), SR, file_offset=10.0),
        "waltz": audio_facts(
            _progression((57, 62, 64, 57, 62, 57), "min", bpm=132.0, beats_per_chord=3,
                         accents=(1.0, 0.3, 0.3)), SR
        ),
        "sustained": audio_facts(0.3 * _chord(60, "maj", 3.0), SR),
        "noise": audio_facts(noise, SR),
        "sine": audio_facts(sine, SR),
    }


# ------------------------------------------------------------------ one excerpt


@pytest.mark.parametrize(("name", "bpm"), [("C", 120.0), ("D", 120.0), ("waltz", 132.0)])
def test_tempo_within_three_percent(facts, name, bpm):
    f = facts[name]
    assert f.tempo_bpm is not None
    assert abs(f.tempo_bpm / bpm - 1.0) < 0.03
    assert f.tempo_confidence > 0.5
    assert f"about {f.tempo_bpm:.0f} BPM" in f.describe()


def test_accented_three_four_reads_as_three_four(facts):
    f = facts["waltz"]
    assert f.meter == "3/4"
    assert len(f.grid.downbeats) >= 4
    gaps = np.diff(f.grid.downbeats) / (60.0 / f.tempo_bpm)
    np.testing.assert_allclose(gaps, 3.0, atol=0.2)
    assert "in 3/4" in f.describe()


def test_accented_four_four_reads_as_four_four():
    f = audio_facts(_progression((60, 57, 65, 67), bpm=110.0, beats_per_chord=4,
                                 accents=(1.0, 0.3, 0.5, 0.3)), SR)  # fmt: skip
    assert f.meter == "4/4"
    assert f.key is not None and f.key.name == "C major"


def test_unaccented_click_has_no_meter(facts):
    assert facts["C"].meter == "?"
    assert "meter unclear" in facts["C"].describe()


def test_progression_chords_and_key(facts):
    for name, labels in (("C", ["C", "F", "G", "C"]), ("D", ["D", "G", "A", "D"])):
        f = facts[name]
        sounding = [c for c in f.chords if c.root >= 0]
        assert [c.label for c in sounding] == labels
        assert f.key is not None and f.key.name == f"{labels[0]} major"
        assert all(c.confidence > 0.5 for c in sounding)
    # times are file times: the D clip was analysed with file_offset=10
    assert facts["D"].chords[0].start == pytest.approx(10.0)
    assert facts["D"].end == pytest.approx(14.0, abs=1e-3)


def test_chord_rate_is_at_most_one_per_beat(facts):
    for name in ("C", "D", "waltz"):
        f = facts[name]
        beat = 60.0 / f.tempo_bpm
        changes = len(f.chords) - 1
        assert changes <= len(f.grid.beats)
        inner = f.chords[1:-1]
        assert all(c.end - c.start >= 0.9 * beat for c in inner)
        assert (f.end - f.start) / len(f.chords) >= beat  # steady progression: <= 1 chord/beat


def test_timbre_words_noise_and_sine(facts):
    noise, sine = facts["noise"], facts["sine"]
    assert "noisy" in noise.timbre_words and "bright" in noise.timbre_words
    assert "tonal" in sine.timbre_words and "noisy" not in sine.timbre_words
    assert noise.timbre["flatness"] > 10 * sine.timbre["flatness"]
    assert noise.timbre["centroid_hz"] > 2000.0 > 800.0 > sine.timbre["centroid_hz"]
    assert noise.key is None  # noise has no key
    assert timbre_words({}) == ()


@pytest.mark.parametrize("level", [0.0, 1e-6])
def test_silence_gives_empty_facts_and_a_sentence(level):
    y = level * np.random.default_rng(0).normal(size=2 * SR)
    f = audio_facts(y, SR, file_offset=5.0)
    assert f.key is None and f.tempo_bpm is None and f.chords == () and f.meter == "?"
    assert f.silent and f.start == 5.0
    assert f.describe().startswith("silent from 5.00 to 7.00 s")
    assert "no tempo, key, chords or timbre" in f.describe()


def test_short_window_is_not_analysed(facts):
    y = _progression(I_IV_V_I_C)
    f = audio_facts(y, SR, window=(1.0, 1.2))
    assert f.silent and "too short" in f.describe()


def test_window_and_resampling():
    y = _progression(I_IV_V_I_C)
    f = audio_facts(y, SR, window=(2.0, 10.0), file_offset=1.0)  # end cut to the clip's 4 s
    assert (f.start, f.end) == pytest.approx((3.0, 5.0), abs=1e-3)
    assert [c.label for c in f.chords if c.root >= 0] == ["G", "C"]
    y16 = np.interp(np.arange(0, y.size, SR / 16000), np.arange(y.size), y)
    g = audio_facts((y16 * 32767).astype(np.int16), 16000)
    assert [c.label for c in g.chords if c.root >= 0] == ["C", "F", "G", "C"]


def test_bad_input_is_named():
    y = np.zeros(SR)
    with pytest.raises(ParameterError, match="window"):
        audio_facts(y, SR, window=(0.5, 0.2))
    with pytest.raises(ParameterError, match="sr"):
        audio_facts(y, 10)
    with pytest.raises(DataError, match="samples"):
        audio_facts(np.full(SR, np.nan), SR)
    with pytest.raises(DataError, match="samples"):
        audio_facts(np.zeros((20, 100)), SR)
    with pytest.raises(ParameterError, match="query"):
        shared_audio_material("not facts", audio_facts(y, SR))  # type: ignore[arg-type]


# ------------------------------------------------------------------ two excerpts


def test_transposed_progression_is_shared_with_times(facts):
    shared = shared_audio_material(facts["C"], facts["D"])
    prog = [m for m in shared if m.kind == "progression"]
    assert prog, shared
    best = prog[0]
    assert best.content == "I - IV - V - I"
    assert best.length == 4
    assert best.informative and best.caveat == ""
    assert (best.query_time, best.query_end) == pytest.approx((0.0, 4.0), abs=0.15)
    assert (best.item_time, best.item_end) == pytest.approx((10.0, 14.0), abs=0.15)
    assert "transposed by 2 semitones" in best.sentence
    assert "C - F - G - C" in best.sentence and "D - G - A - D" in best.sentence


def test_same_click_tempo_is_flagged(facts):
    tempo = next(m for m in shared_audio_material(facts["C"], facts["D"]) if m.kind == "tempo")
    assert "the same tempo" in tempo.sentence
    assert not tempo.informative and "machine-steady" in tempo.caveat
    other = next(m for m in shared_audio_material(facts["C"], facts["waltz"]) if m.kind == "tempo")
    assert not other.informative and other.caveat == "the tempi differ"


def test_one_sustained_chord_is_not_informative(facts):
    shared = shared_audio_material(facts["sustained"], facts["C"])
    harmonic = [m for m in shared if m.kind in ("chord", "progression")]
    assert harmonic and all(not m.informative for m in harmonic)
    assert "one chord throughout" in harmonic[0].caveat
    assert harmonic[0].content == "I"


def test_silent_clip_shares_nothing(facts):
    silent = audio_facts(np.zeros(2 * SR), SR)
    shared = shared_audio_material(facts["C"], silent)
    assert [m.kind for m in shared] == ["silence"]
    assert not shared[0].informative and "the item (silent" in shared[0].sentence


_C_MAJOR = Key(0, "major", 0.8, 0.2)


def _facts(chords, key=_C_MAJOR, tempo=100.0, jitter=0.05):
    spans = tuple(ChordSpan(float(i), float(i + 1), r, q, lab, c)
                  for i, (r, q, lab, c) in enumerate(chords))  # fmt: skip
    grid = BeatGrid(beats=tuple(float(i) for i in range(len(chords))), downbeats=(0.0,),
                    meter="4/4", first_bar=1)  # fmt: skip
    timbre = {"centroid_hz": 900.0, "flatness": 0.01, "percussive_ratio": 0.1}
    timbre |= {f"mfcc_{k}": float(k % 3 - 1) for k in range(1, 14)}
    return AudioFacts(tempo, 0.8, "4/4", key, spans, grid, timbre, timbre_words(timbre),
                      0.0, float(len(chords)), jitter)  # fmt: skip


def test_two_chord_run_and_low_confidence_are_flagged():
    c, g = (0, "maj", "C", 0.9), (7, "maj", "G", 0.9)
    f, am = (5, "maj", "F", 0.3), (9, "min", "Am", 0.3)
    shared = shared_audio_material(_facts([c, g, c, g]), _facts([g, c, g, (2, "min", "Dm", 0.9)]))
    prog = [m for m in shared if m.kind == "progression"]
    assert prog and all(not m.informative for m in prog)
    assert "only 2 different chords" in prog[0].caveat
    c, g = (0, "maj", "C", 0.4), (7, "maj", "G", 0.4)
    weak = shared_audio_material(_facts([c, f, am, g]), _facts([c, f, am, g]))
    low = next(m for m in weak if m.kind == "progression")
    assert low.content == "I - IV - vi - V" and not low.informative
    assert "low confidence" in low.caveat
    tempo = next(m for m in weak if m.kind == "tempo")
    assert tempo.informative  # equal tempi of a played (not machine-steady) beat
    timbre = next(m for m in weak if m.kind == "timbre")
    assert timbre.informative and "common" in timbre.caveat


def test_no_key_gives_no_progression():
    c, g = (0, "maj", "C", 0.9), (7, "maj", "G", 0.9)
    shared = shared_audio_material(_facts([c, g, c], key=None), _facts([c, g, c]))
    assert not [m for m in shared if m.kind in ("chord", "progression")]


# ------------------------------------------------------------------ kernels and twins


def _frames(rng):
    d, t = int(rng.integers(1, 5)), int(rng.integers(1, 60))
    cuts = np.sort(rng.choice(np.arange(1, t), size=min(t - 1, int(rng.integers(0, 8))),
                              replace=False)) if t > 1 else np.zeros(0, int)  # fmt: skip
    return (rng.normal(size=(d, t)), np.concatenate([[0], cuts, [t]]).astype(np.int64)), {}


def _accents(rng):
    n = int(rng.integers(0, 30))
    x = rng.normal(size=n) if rng.random() > 0.2 else np.full(n, 2.0)
    return (x,), {"lags": tuple(int(v) for v in rng.integers(1, 12, size=3))}


#: Twins for tests/common/test_reference_twins.py (to be appended in tests/media/_twins.py).
TWINS = [
    Twin("reasons_audio.beat_sync", beat_sync, beat_sync_reference, _frames),
    Twin("reasons_audio.lag_autocorrelation", lag_autocorrelation,
         lag_autocorrelation_reference, _accents),
]  # fmt: skip


@pytest.mark.parametrize("twin", TWINS, ids=[t.name for t in TWINS])
@pytest.mark.parametrize("seed", range(5))
def test_kernels_equal_their_references(twin, seed):
    args, kwargs = twin.make(np.random.default_rng(seed))
    np.testing.assert_allclose(twin.fast(*args, **kwargs), twin.reference(*args, **kwargs),
                               rtol=1e-12, atol=1e-12)  # fmt: skip


def test_kernel_invariants():
    x = np.arange(12.0).reshape(2, 6)
    np.testing.assert_allclose(beat_sync(x, np.array([0, 6])), x.mean(axis=1, keepdims=True))
    np.testing.assert_allclose(beat_sync(x, np.arange(7)), x)
    with pytest.raises(DataError, match="bounds"):
        beat_sync(x, np.array([0, 3, 3, 6]))
    three = np.tile([3.0, 1.0, 1.0], 6)
    r2, r3, r4 = lag_autocorrelation(three)
    assert r3 == pytest.approx(1.0) and r2 < 0 and r4 < 0
    assert np.all(lag_autocorrelation(np.ones(9)) == 0.0)
