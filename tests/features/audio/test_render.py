"""MIDI → audio rendering with FluidSynth: timing, pitch, tempo changes, files, errors."""

from __future__ import annotations

import mido
import numpy as np
import pytest

from aria_tda.errors import FileFormatError, MissingDependencyError, ParameterError
from aria_tda.features.audio.render import (
    Note,
    find_soundfont,
    midi_from_notes,
    render_file,
    render_midi,
)

try:
    import fluidsynth  # noqa: F401

    HAVE_FLUIDSYNTH = True
except ImportError:
    HAVE_FLUIDSYNTH = False
needs_fluidsynth = pytest.mark.skipif(not HAVE_FLUIDSYNTH, reason="FluidSynth is not installed")
SR = 48000


def _onset_time(y: np.ndarray, sr: int, floor: float = 1e-3) -> float:
    """First sample whose 5 ms RMS exceeds ``floor`` (seconds)."""
    hop = sr // 200
    frames = y[: len(y) // hop * hop].reshape(-1, hop)
    rms = np.sqrt((frames**2).mean(axis=1))
    return float(np.argmax(rms > floor) * hop / sr)


def _peak_hz(y: np.ndarray, sr: int) -> float:
    """Frequency of the strongest spectral peak in 100-4000 Hz (Hann window)."""
    spec = np.abs(np.fft.rfft(y * np.hanning(y.size)))
    freqs = np.fft.rfftfreq(y.size, 1 / sr)
    band = (freqs > 100) & (freqs < 4000)
    return float(freqs[band][np.argmax(spec[band])])


# --- MIDI construction (no synthesis) ----------------------------------------------------------


def test_midi_from_notes_structure():
    mid = midi_from_notes([Note(0, 1, 60), (1.5, 0.5, 64, 100, 9)], bpm=90, programs={0: 40})
    assert mid.type == 1 and len(mid.tracks) == 3  # conductor + channel 0 + channel 9
    tempos = [m.tempo for m in mid.tracks[0] if m.type == "set_tempo"]
    assert tempos == [mido.bpm2tempo(90)]
    msgs = list(mid.tracks[1])
    assert msgs[0].type == "program_change" and msgs[0].program == 40
    ons = [(m.type, m.note) for m in mid.tracks[2] if m.type.startswith("note")]
    assert ons == [("note_on", 64), ("note_off", 64)]
    # times in seconds follow the tempo: beat 1.5 at 90 BPM = 1.0 s
    t, starts = 0.0, []
    for m in mid:
        t += m.time
        if m.type == "note_on":
            starts.append(round(t, 6))
    assert starts == pytest.approx([0.0, 1.0], abs=1e-5)


@pytest.mark.parametrize(
    ("notes", "match"),
    [
        ([(0, 1, 128)], r"notes\[0\].pitch"),
        ([(0, 0, 60)], r"notes\[0\].duration"),
        ([(-1, 1, 60)], r"notes\[0\].start"),
        ([(0, 1, 60, 0)], r"notes\[0\].velocity"),
        ([(0, 1, 60, 90, 16)], r"notes\[0\].channel"),
        ([(0,)], r"notes\[0\]: expected a Note"),
    ],
)
def test_midi_from_notes_validation(notes, match):
    with pytest.raises(ParameterError, match=match):
        midi_from_notes(notes)


def test_find_soundfont(monkeypatch, tmp_path):
    monkeypatch.delenv("ARIA_SOUNDFONT", raising=False)
    try:
        default = find_soundfont()
    except MissingDependencyError:
        pytest.skip("no soundfont installed")
    assert default.suffix == ".sf2" and default.is_file()
    monkeypatch.setenv("ARIA_SOUNDFONT", str(default))
    assert find_soundfont() == default
    monkeypatch.setenv("ARIA_SOUNDFONT", str(tmp_path / "none.sf2"))
    with pytest.raises(FileFormatError, match="ARIA_SOUNDFONT: no such file"):
        find_soundfont()
    with pytest.raises(FileFormatError, match="soundfont: no such file"):
        find_soundfont(tmp_path / "x.sf2")


# --- synthesis ----------------------------------------------------------------------------------


@needs_fluidsynth
def test_render_length_timing_and_pitch():
    mid = midi_from_notes(
        [Note(2, 1, 69, 100)], bpm=120, programs={0: 0}
    )  # A4 at 1.0 s, 0.5 s long
    y = render_midi(mid, sr=SR, tail=0.5)
    assert y.dtype == np.float32 and y.shape == (round(2.0 * SR),)  # last event 1.5 s + tail 0.5 s
    assert np.abs(y[: SR - 100]).max() < 1e-6  # silence before the note
    assert _onset_time(y, SR) == pytest.approx(1.0, abs=0.01)
    assert _peak_hz(y[SR : SR + SR // 2], SR) == pytest.approx(440.0, abs=4.0)  # A4
    assert 0 < np.abs(y).max() <= 1
    assert render_midi(mid, sr=SR, duration=0.5).shape == (SR // 2,)


@needs_fluidsynth
def test_render_is_deterministic_and_stereo_is_channel_first():
    mid = midi_from_notes([(0, 1, 60), (0, 1, 64), (1, 1, 67, 90, 9)], bpm=100)
    a = render_midi(mid, sr=22050)
    np.testing.assert_array_equal(a, render_midi(mid, sr=22050))
    st = render_midi(mid, sr=22050, mono=False)
    assert st.shape == (2, a.size)
    np.testing.assert_allclose(st.mean(axis=0), a, atol=1e-7)


@needs_fluidsynth
def test_dynamic_sample_loading_is_deterministic_and_near_the_default():
    mid = midi_from_notes([(0, 1, 60), (0.5, 1, 64), (1, 1, 67, 90, 9)], bpm=100,
                          programs={0: 40})
    a = render_midi(mid, sr=22050, dynamic_samples=True)
    np.testing.assert_array_equal(a, render_midi(mid, sr=22050, dynamic_samples=True))
    b = render_midi(mid, sr=22050)
    assert a.shape == b.shape
    assert np.abs(a - b).max() <= 1e-3 * np.abs(b).max()  # at least -60 dB from the default


@needs_fluidsynth
def test_tempo_changes_are_applied():
    mid = mido.MidiFile(ticks_per_beat=480)
    tr = mido.MidiTrack()
    mid.tracks.append(tr)
    tr.append(mido.MetaMessage("set_tempo", tempo=mido.bpm2tempo(60), time=0))
    tr.append(mido.Message("note_on", note=72, velocity=100, time=480))  # 1 s at 60 BPM
    tr.append(mido.Message("note_off", note=72, velocity=0, time=240))  # half a beat: 1.5 s
    tr.append(mido.MetaMessage("set_tempo", tempo=mido.bpm2tempo(240), time=0))
    tr.append(
        mido.Message("note_on", note=72, velocity=100, time=480)
    )  # +1 beat at 240 BPM: 1.75 s
    tr.append(mido.Message("note_off", note=72, velocity=0, time=240))  # 1.875 s
    y = render_midi(mid, sr=SR, reverb=False, chorus=False, tail=0.2)
    assert _onset_time(y, SR) == pytest.approx(1.0, abs=0.01)
    assert y.size == round((1.875 + 0.2) * SR)
    # at 60 BPM throughout the second note would start at 2.5 s; it starts at 1.75 s
    env = np.abs(y[int(1.65 * SR) : int(1.85 * SR)])
    assert env[int(0.1 * SR) + 480 :].max() > 5 * env[: int(0.1 * SR) - 480].max()


@needs_fluidsynth
def test_drums_sound_on_channel_10_and_small_soundfont_works(tmp_path):
    import importlib.util
    from pathlib import Path

    mid = midi_from_notes([(0, 0.5, 36, 120, 9), (1, 0.5, 38, 120, 9)], bpm=120)
    y = render_midi(mid, sr=SR)
    assert np.abs(y).max() > 1e-2
    spec = importlib.util.find_spec("pretty_midi")
    if spec is None:
        pytest.skip("pretty_midi not installed")
    small = Path(spec.origin).parent / "TimGM6mb.sf2"
    y2 = render_midi(mid, sr=SR, soundfont=small)
    assert y2.shape == y.shape and np.abs(y2).max() > 1e-2


@needs_fluidsynth
def test_render_file_roundtrip(tmp_path):
    import soundfile as sf

    mid = midi_from_notes([(0, 1, 60), (1, 1, 67)], bpm=120)
    midi_path = tmp_path / "in.mid"
    mid.save(midi_path)
    y = render_midi(midi_path, sr=SR)
    for suffix, tol in [(".wav", 1 / 32767), (".flac", 1 / 32767)]:
        out = render_file(midi_path, tmp_path / f"out{suffix}", sr=SR)
        back, sr = sf.read(out, dtype="float32")
        assert sr == SR and back.shape == y.shape
        np.testing.assert_allclose(back, y, atol=tol)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "in.mid",
        "out.flac",
        "out.wav",
    ]  # no temp files
    st = render_file(mid, tmp_path / "st.wav", sr=SR, mono=False, subtype="FLOAT")
    assert sf.info(st).channels == 2
    data = mid_bytes = None
    with open(midi_path, "rb") as fh:
        mid_bytes = fh.read()
    data = render_midi(mid_bytes, sr=SR)
    np.testing.assert_array_equal(data, y)


def test_render_errors(tmp_path):
    with pytest.raises(FileFormatError, match="no such file"):
        render_midi(tmp_path / "missing.mid")
    bad = tmp_path / "bad.mid"
    bad.write_bytes(b"MThd not midi at all")
    with pytest.raises(FileFormatError, match="not a readable MIDI file"):
        render_midi(bad)
    with pytest.raises(ParameterError, match=r"midi: expected a path, bytes or a mido\.MidiFile"):
        render_midi(42)
    mid = midi_from_notes([(0, 1, 60)])
    with pytest.raises(ParameterError, match="sr: expected an integer in"):
        render_midi(mid, sr=100)
    with pytest.raises(ParameterError, match="gain"):
        render_midi(mid, gain=0)
    with pytest.raises(ParameterError, match=r"out: expected a path ending in \.wav"):
        render_file(mid, tmp_path / "x.mp3")
    with pytest.raises(FileFormatError, match="soundfont: no such file"):
        render_midi(mid, soundfont=tmp_path / "nope.sf2")


@needs_fluidsynth
def test_unloadable_soundfont(tmp_path):
    fake = tmp_path / "fake.sf2"
    fake.write_bytes(b"RIFF....sfbk" + b"\0" * 64)
    with pytest.raises(FileFormatError, match="FluidSynth could not load"):
        render_midi(midi_from_notes([(0, 1, 60)]), soundfont=fake)

