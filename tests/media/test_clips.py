"""Clips: the exact window cut from audio, MIDI cut and rendered with FluidSynth, BS.1770 loudness
matching, and Ogg/Opus encoding that decodes back to the clip's length."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
import soundfile as sf

from aria_tda.errors import DataError, FileFormatError, MissingDependencyError, ParameterError
from aria_tda.features.audio.render import midi_from_notes
from aria_tda.features.midi import read_midi
from aria_tda.media.clips import (
    ENCODINGS,
    PEAK_CEILING_DBFS,
    Clip,
    encode_clip,
    integrated_loudness,
    k_weighting,
    load_clip,
    loudness_match,
    mime_type,
)
from aria_tda.media.sources import MediaRef, resolve_media
from media._userstudy import TPQ, make_user_study, small_soundfont

SF = small_soundfont()


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    return make_user_study(tmp_path_factory.mktemp("user-study"))


@pytest.fixture(scope="module")
def index(study):
    return resolve_media(study["results"])


def _rms(y: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(y, dtype=np.float64)))) if y.size else 0.0


# ----------------------------------------------------------------------------- audio


def test_an_audio_segment_is_the_exact_window_of_the_file_with_context(index, study):
    ref = index.train("t-wav#1")  # 2.5 .. 5 s of an 8 s file
    clip = load_clip(ref, context=1.0, sr=22050)
    data, rate = sf.read(study["wav"], dtype="float64")
    a, b = round(1.5 * rate), round(6.0 * rate)
    np.testing.assert_allclose(clip.samples, data[a:b].astype(np.float32), atol=0)
    assert clip.window == pytest.approx((1.0, 3.5)) and clip.notes is None
    assert clip.duration == pytest.approx(4.5) and clip.source is ref


def test_context_is_clamped_at_the_files_ends(index):
    first = load_clip(index.train("t-wav#0"), context=1.0, sr=22050)  # 0 .. 2.5 s
    assert first.window == pytest.approx((0.0, 2.5)) and first.duration == pytest.approx(3.5)
    whole = load_clip(index.train("t-wav"), context=1.0, sr=22050, max_seconds=3.0)
    assert whole.window == pytest.approx((0.0, 3.0)) and whole.duration == pytest.approx(4.0)


def test_audio_at_another_rate_is_resampled(index):
    ref = index.train("t-wav#1")
    native = load_clip(ref, context=0.0, sr=22050)
    low = load_clip(ref, context=0.0, sr=16000)
    assert low.sr == 16000 and low.samples.shape[0] == round(2.5 * 16000)
    assert _rms(low.samples) == pytest.approx(_rms(native.samples), rel=0.05)


def test_a_window_past_the_end_and_an_unplayable_ref_raise(index, study):
    late = MediaRef("x", "train", study["wav"], "audio", 20.0, 21.0, "s", None)
    with pytest.raises(DataError, match="starts at 20 s, at or after the end"):
        load_clip(late)
    with pytest.raises(FileFormatError, match=r"nothing to play for query 'q2'.*does not exist"):
        load_clip(index.query(2))
    with pytest.raises(ParameterError, match="context: expected"):
        load_clip(index.train("t-wav"), context=-1.0)


# ----------------------------------------------------------------------------- MIDI


def test_a_midi_window_in_ticks_uses_the_files_tempo_map(index, study):
    ref = index.train("t-tempo#1")  # ticks 5*TPQ .. 7*TPQ: beats 5-7, after the 120 -> 60 change
    clip = load_clip(ref, context=0.5, sr=22050, soundfont=SF)
    score = read_midi(study["tempo"])
    ws, we = score.seconds(np.array([5 * TPQ, 7 * TPQ]))
    assert (ws, we) == (3.0, 5.0)  # 4 beats at 0.5 s, then 1 s a beat
    assert clip.window == pytest.approx((0.5, 2.5)) and clip.duration == pytest.approx(3.0)
    notes = clip.notes
    # every note sounding in [2.5, 5.5] s, cut to the clip, in clip time
    full = score.notes()
    sounding = (full.end > 2.5) & (full.start < 5.5)
    assert len(notes) == int(sounding.sum())
    assert notes["start"].min() >= 0 and notes["end"].max() <= clip.duration + 1e-9
    bass = notes[notes["channel"] == 1].iloc[0]
    assert (bass["pitch"], bass["start"], bass["program"]) == (36, 0.0, 32)  # held from 0.5 s
    assert bass["end"] == pytest.approx(float(score.seconds(np.array([7 * TPQ]))[0]) - 2.5)
    melody = notes[notes["channel"] == 0]
    assert set(melody["program"]) == {40} and not notes["is_drum"].any()
    first = melody.iloc[0]
    assert (first["pitch"], first["start"]) == (67, 0.0)  # beat 4 (2.0 .. 3.0 s) cut at 2.5 s
    assert _rms(clip.samples) > 1e-3


def test_midi_renders_where_its_notes_sound_and_is_silent_where_none_do(study, tmp_path):
    ref = MediaRef("p", "train", study["plain"], "midi", 2.0, 3.0, "s", None)  # a 4 s file
    clip = load_clip(ref, context=1.0, sr=22050, soundfont=SF)
    assert clip.window == pytest.approx((1.0, 2.0)) and clip.duration == pytest.approx(3.0)
    assert _rms(clip.samples) > 1e-3 and len(clip.notes) == 12  # 1.0 .. 4.0 s: 12 half beats
    quiet = MediaRef("q", "query", study["qdir"] / "gen" / "q0.mid", "midi", 1.0, 1.6, "s",
                     None)
    one = load_clip(quiet, context=0.0, sr=22050, soundfont=SF)
    assert one.notes["pitch"].tolist() == [62, 63]  # 1.0 .. 1.5 s, then 1.5 .. 1.6 s (cut)
    assert one.notes["end"].tolist() == pytest.approx([0.5, 0.6])
    gap = tmp_path / "gap.mid"
    midi_from_notes([(0, 1, 60), (6, 1, 64)]).save(gap)  # 0 .. 0.5 s and 3.0 .. 3.5 s
    rest = load_clip(MediaRef("g", "train", gap, "midi", 1.0, 2.0, "s", None), context=0.5,
                     sr=22050, soundfont=SF)
    assert rest.notes.empty and rest.duration == pytest.approx(2.0)
    assert np.max(np.abs(rest.samples)) < 1e-6  # FluidSynth idles at about -160 dBFS
    assert integrated_loudness(rest.samples, rest.sr) == -math.inf


def test_the_default_soundfont_is_the_installed_one_and_a_missing_one_is_named(
    index, monkeypatch, tmp_path
):
    import importlib.util

    from aria_tda.features.audio import render

    try:
        found = render.find_soundfont()
    except MissingDependencyError:
        pytest.skip("no General-MIDI soundfont installed here")
    assert found.is_file()
    ref = index.train("t-plain")
    clip = load_clip(ref, context=0.0, sr=16000, max_seconds=1.0)  # the default soundfont
    assert _rms(clip.samples) > 1e-3
    with pytest.raises(FileFormatError, match="soundfont"):
        load_clip(ref, soundfont=tmp_path / "nope.sf2")
    monkeypatch.delenv("ARIA_SOUNDFONT", raising=False)
    monkeypatch.setattr(render, "_SYSTEM_SOUNDFONTS", ())
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "pretty_midi" else real(name, *a))
    with pytest.raises(MissingDependencyError, match="no General-MIDI soundfont found"):
        load_clip(ref)


# ----------------------------------------------------------------------------- loudness


def test_k_weighting_at_48k_is_the_table_of_bs1770():
    b1, a1, b2, a2 = k_weighting(48000)
    # ITU-R BS.1770-4, Annex 1, Tables 1 and 2
    np.testing.assert_allclose(b1, [1.53512485958697, -2.69169618940638, 1.19839281085285],
                               rtol=1e-9)
    np.testing.assert_allclose(a1, [1.0, -1.69065929318241, 0.73248077421585], rtol=1e-9)
    np.testing.assert_allclose(b2, [1.0, -2.0, 1.0])
    np.testing.assert_allclose(a2, [1.0, -1.99004745483398, 0.99007225036621], rtol=1e-9)


def test_a_full_scale_997_hz_sine_reads_minus_3_01_lufs():
    sr = 48000
    t = np.arange(10 * sr) / sr
    # BS.1770: a 0 dB FS 1 kHz sine in one channel reads -3.01 LKFS
    assert integrated_loudness(np.sin(2 * np.pi * 997 * t), sr) == pytest.approx(-3.01, abs=0.01)


def test_loudness_invariants(rng):
    sr = 16000
    y = rng.normal(0, 0.05, 3 * sr) * np.repeat(rng.uniform(0.1, 1, 30), sr // 10)
    base = integrated_loudness(y, sr)
    assert integrated_loudness(y * 10 ** (6 / 20), sr) == pytest.approx(base + 6, abs=1e-9)
    assert integrated_loudness(np.stack([y, y]), sr) == pytest.approx(
        base + 10 * math.log10(2), abs=1e-9)  # two channels weighted 1
    assert integrated_loudness(np.zeros(sr), sr) == -math.inf
    # 3 s of silence more: the absolute gate drops its blocks (ungated, the mean power would
    # halve: -3 dB); only the three blocks straddling the edge still count
    padded = np.concatenate([y, np.zeros(3 * sr)])
    assert integrated_loudness(padded, sr) == pytest.approx(base, abs=0.3)
    with pytest.raises(DataError, match="samples: expected finite values"):
        integrated_loudness(np.array([0.0, np.nan]), sr)


def _clip(y: np.ndarray, sr: int = 16000) -> Clip:
    ref = MediaRef("x", "train", None, None, None, None, "s", None)
    return Clip(np.asarray(y, dtype=np.float32), sr, (0.0, len(y) / sr), None, ref)


def test_loudness_match_reaches_the_target_without_clipping(rng):
    sr = 16000
    t = np.arange(2 * sr) / sr
    quiet = _clip(0.01 * np.sin(2 * np.pi * 440 * t))
    loud = _clip(rng.normal(0, 0.3, 2 * sr).clip(-1, 1))
    spiky = np.full(2 * sr, 1e-3) * np.sign(np.sin(2 * np.pi * 50 * t))
    spiky[sr] = 1.0  # one full-scale click in a near-silent clip: the peak limit holds it back
    silent = _clip(np.zeros(sr))
    before = loud.samples.copy()
    out = loudness_match([quiet, loud, _clip(spiky), silent], target_lufs=-20.0)
    ceiling = 10 ** (PEAK_CEILING_DBFS / 20)
    for c in out[:2]:
        assert integrated_loudness(c.samples, sr) == pytest.approx(-20.0, abs=0.01)
        assert c.lufs == pytest.approx(-20.0, abs=0.01)
        assert np.max(np.abs(c.samples)) <= ceiling + 1e-6
    limited = out[2]
    assert np.max(np.abs(limited.samples)) == pytest.approx(ceiling, rel=1e-6)
    assert limited.lufs < -20.0
    assert integrated_loudness(limited.samples, sr) == pytest.approx(limited.lufs, abs=0.01)
    assert out[3].lufs == -math.inf and out[3].gain_db == 0.0
    assert not np.any(out[3].samples) and np.all(np.isfinite(out[3].samples))
    np.testing.assert_array_equal(loud.samples, before)  # the inputs are left alone
    with pytest.raises(ParameterError, match="target_lufs"):
        loudness_match([quiet], target_lufs=3.0)


def test_loudness_matched_midi_and_audio_clips_play_at_one_loudness(index):
    clips = [load_clip(index.train("t-wav#1"), sr=22050),
             load_clip(index.train("t-tempo#0"), sr=22050, soundfont=SF)]
    matched = loudness_match(clips)
    levels = [integrated_loudness(c.samples, c.sr) for c in matched]
    assert levels == pytest.approx([c.lufs for c in matched], abs=0.01)
    for c in matched:  # the target, unless the peak limit held a clip back
        peak = float(np.max(np.abs(c.samples)))
        limited = peak == pytest.approx(10 ** (PEAK_CEILING_DBFS / 20), rel=1e-6)
        assert c.lufs == pytest.approx(-23.0, abs=0.01) or limited


# ----------------------------------------------------------------------------- encoding


def test_vorbis_default_decodes_back_to_the_clips_length(index):
    clip = loudness_match([load_clip(index.train("t-wav#1"), context=1.0, sr=22050)])[0]
    data = encode_clip(clip)
    assert data[:4] == b"OggS" and b"vorbis" in data[:100]
    y, rate = sf.read(io.BytesIO(data))
    assert rate == 22050 and len(y) == len(clip.samples)
    assert np.corrcoef(y, clip.samples)[0, 1] > 0.9  # the same signal, lossily
    assert len(data) < 0.25 * len(encode_clip(clip, fmt="wav"))
    assert mime_type("ogg-vorbis") == "audio/ogg; codecs=vorbis"


def test_opus_decodes_back_to_the_clips_length(index):
    clip = loudness_match([load_clip(index.train("t-wav#1"), context=1.0, sr=22050)])[0]
    data = encode_clip(clip, fmt="ogg-opus")
    assert data[:4] == b"OggS" and b"OpusHead" in data[:100]
    y, rate = sf.read(io.BytesIO(data))
    assert rate == 24000  # the smallest Opus rate not below 22,050 Hz
    assert len(y) / rate == pytest.approx(clip.duration, abs=0.03)
    assert len(data) < 0.25 * len(encode_clip(clip, fmt="wav"))
    assert mime_type("ogg-opus") == ENCODINGS["ogg-opus"] == "audio/ogg; codecs=opus"


def test_opus_bitrate_follows_the_request(rng):
    sr = 48000
    clip = _clip(rng.normal(0, 0.2, 4 * sr).clip(-1, 1), sr)
    sizes = {k: len(encode_clip(clip, fmt="ogg-opus", bitrate_kbps=k)) for k in (16, 32, 96)}
    assert sizes[16] < sizes[32] < sizes[96]
    for k, n in sizes.items():  # noise needs the whole budget: about k kb/s
        assert n * 8 / 4 / 1000 == pytest.approx(k, rel=0.35)
    y, rate = sf.read(io.BytesIO(encode_clip(clip, fmt="ogg-opus")))
    assert rate == 48000 and len(y) == 4 * sr


def test_wav_is_16_bit_pcm_at_the_clips_rate(rng):
    clip = _clip(rng.uniform(-0.5, 0.5, 1000), 22050)
    data = encode_clip(clip, fmt="wav")
    y, rate = sf.read(io.BytesIO(data), dtype="float64")
    assert rate == 22050 and sf.info(io.BytesIO(data)).subtype == "PCM_16"
    np.testing.assert_allclose(y, clip.samples, atol=1 / 32768)
    assert mime_type("wav") == "audio/wav"
    with pytest.raises(ParameterError, match="fmt: expected one of"):
        encode_clip(clip, fmt="mp3")
    with pytest.raises(ParameterError, match="bitrate_kbps"):
        encode_clip(clip, bitrate_kbps=1)
