r"""Clips to listen to: the attributed window of a file, loudness-matched and compactly encoded.

Conventions
-----------
- **Clip.** ``float32`` mono samples in :math:`[-1, 1]` at ``sr`` Hz; ``window`` is the
  attributed window in seconds from the clip's start (the clip holds up to ``context`` seconds
  more on each side, fewer where the file begins or ends).
- **Audio** is read with soundfile (libsndfile: WAV, FLAC, OGG/Vorbis/Opus, MP3, AIFF): only the
  frames of the clip are read, channels are averaged, and the result is resampled to ``sr``
  with a polyphase filter (:func:`scipy.signal.resample_poly`) when the file's rate differs.
- **MIDI** is parsed with :func:`aria_tda.features.midi.read_midi` (its note pairing and merged
  tempo map: a window in ticks becomes seconds through it). The notes sounding in the clip's
  span (``end > a`` and ``start < b``) are kept, cut to the span, and rendered with FluidSynth
  (:func:`aria_tda.features.audio.render.render_midi`, the General-MIDI soundfont of
  :func:`~aria_tda.features.audio.render.find_soundfont`); the program, controller and
  pitch-bend state in force at the clip's start is sent first, so instruments and volumes are
  those of the file. :attr:`Clip.notes` lists them in clip time.
- **Loudness** is the integrated loudness of ITU-R BS.1770-4 (:func:`integrated_loudness`,
  LUFS): K-weighting (a high shelf and a high pass whose coefficients are derived for the
  clip's sample rate from the standard's analogue prototypes, as libebur128 does; at 48 kHz they
  are the standard's table), mean square over 400 ms blocks overlapping by 75 % (a block is four
  hops of ``round(0.1 sr)`` samples; a clip shorter than one block is measured as one block),
  the absolute gate at −70 LUFS and the relative gate 10 LU below the loudness of the blocks
  above the absolute gate. Channel weights are 1 (mono, or left/right).
- **Encoding** (:func:`encode_clip`) is Ogg/Vorbis by default (what Chromium and Firefox
  decode; libsndfile encodes it about 12 times faster than Opus here), Ogg/Opus at a sample
  rate Opus accepts (8, 12, 16, 24 or 48 kHz: the smallest not below the clip's rate, at most
  48 kHz), or 16-bit PCM WAV.
"""

from __future__ import annotations

import io
import math
import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from aria_tda._checks import check_choice, check_float, check_int
from aria_tda.errors import DataError, FileFormatError, ParameterError, expected, one_line
from aria_tda.media.sources import MediaRef

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ENCODINGS",
    "PEAK_CEILING_DBFS",
    "Clip",
    "encode_clip",
    "integrated_loudness",
    "k_weighting",
    "load_clip",
    "loudness_match",
    "mime_type",
]

#: sample peak a loudness-matched clip may reach, dBFS
PEAK_CEILING_DBFS = -1.0
#: encodings of :func:`encode_clip` and their MIME types
ENCODINGS = {
    "ogg-vorbis": "audio/ogg; codecs=vorbis",
    "ogg-opus": "audio/ogg; codecs=opus",
    "wav": "audio/wav",
}
_OPUS_RATES = (8000, 12000, 16000, 24000, 48000)
_ABS_GATE = -70.0  # LUFS
_REL_GATE = -10.0  # LU
_MATCH_ROUNDS = 8  # gain corrections at most
_MATCH_TOLERANCE_LU = 1e-3
_OFFSET = -0.691  # BS.1770: loudness of a block = -0.691 + 10 log10(sum_c G_c z_c)
# the render MIDI's clock: 500,000 µs per beat and 24,000 ticks per beat = 48,000 ticks a second
_RENDER_TPB = 24000
_RENDER_TICKS_PER_S = 48000


@dataclass
class Clip:
    """A piece of audio to play, with the window that was attributed marked in it.

    Attributes
    ----------
    samples : np.ndarray [shape=(n,), float32]
        Mono samples in [-1, 1].
    sr : int
        Sample rate in Hz.
    window : (float, float)
        The attributed window, seconds from the clip's start.
    notes : pandas.DataFrame or None
        MIDI only: one row per note sounding in the clip — ``pitch``, ``start``, ``end``
        (seconds, clip time, cut to the clip), ``velocity``, ``program`` (GM program in force
        on the note's channel at its onset), ``is_drum``, ``channel``, ``track``.
    source : MediaRef
        Where it came from.
    lufs : float or None
        Integrated loudness after :func:`loudness_match` (``-inf`` for silence); ``None`` before.
    gain_db : float
        Gain :func:`loudness_match` applied (dB).
    offset : float
        Where the clip starts in its file, seconds (clip time ``t`` is file time
        ``offset + t``): bar numbers and positions are the file's.
    """

    samples: np.ndarray
    sr: int
    window: tuple[float, float]
    notes: pd.DataFrame | None
    source: MediaRef
    lufs: float | None = None
    gain_db: float = 0.0
    offset: float = 0.0

    @property
    def duration(self) -> float:
        """Length in seconds."""
        return float(self.samples.shape[0]) / float(self.sr)


# --------------------------------------------------------------------------- loading


def load_clip(
    ref: MediaRef,
    *,
    context: float = 1.0,
    sr: int = 22050,
    max_seconds: float = 30.0,
    soundfont: str | os.PathLike[str] | None = None,
) -> Clip:
    """Cut (audio) or render (MIDI) the attributed window of ``ref``, with context around it.

    Parameters
    ----------
    ref : MediaRef
        From :func:`aria_tda.media.sources.resolve_media`; must be playable.
    context : float
        Seconds kept before and after the window (fewer at the file's ends), >= 0.
    sr : int
        Output sample rate in Hz (8,000 to 192,000; MIDI renders up to 96,000).
    max_seconds : float
        Longest window played: a longer one (or a whole file) is cut to its first
        ``max_seconds`` seconds.
    soundfont : path, optional
        A General-MIDI ``.sf2`` for MIDI; default: the one the set-up installs
        (:func:`aria_tda.features.audio.render.find_soundfont`).

    Returns
    -------
    Clip

    Raises
    ------
    FileFormatError
        ``ref`` is not playable (its ``missing`` sentence is quoted), or the file cannot be
        decoded.
    DataError
        The window starts at or after the end of the file.
    MissingDependencyError
        MIDI without FluidSynth or without a soundfont (the message names how to install one).
    """
    if not isinstance(ref, MediaRef):
        raise ParameterError(expected("ref", "a MediaRef", type(ref).__name__))
    if ref.missing is not None or ref.path is None:
        raise FileFormatError(
            f"ref: nothing to play for {ref.role} {ref.item_id!r}: {ref.missing or 'no file'}"
        )
    context = check_float("context", context, min_value=0.0)
    sr = check_int("sr", sr, min_value=8000, max_value=192000)
    max_seconds = check_float("max_seconds", max_seconds, min_value=0.0, min_inclusive=False)
    if ref.kind == "midi":
        return _midi_clip(ref, context, sr, max_seconds, soundfont)
    if ref.unit == "ticks":
        raise DataError(
            expected("ref.unit", "'s' for an audio file", f"'ticks' for {str(ref.path)!r}")
        )
    return _audio_clip(ref, context, sr, max_seconds)


def _span(
    ref: MediaRef,
    start: float | None,
    end: float | None,
    duration: float,
    context: float,
    max_seconds: float,
) -> tuple[float, float, float, float]:
    """(clip start a, clip end b, window start, window end) in seconds of the file."""
    ws = 0.0 if start is None else float(start)
    we = duration if end is None else min(float(end), duration)
    if ws >= duration:
        raise DataError(
            f"ref: the window of {ref.role} {ref.item_id!r} starts at {ws:g} s, at or after the "
            f"end of {str(ref.path)!r} ({duration:g} s)"
        )
    we = min(we, ws + max_seconds)
    return max(0.0, ws - context), min(duration, we + context), ws, we


def _audio_clip(ref: MediaRef, context: float, sr: int, max_seconds: float) -> Clip:
    import soundfile as sf

    path = str(ref.path)
    try:
        info = sf.info(path)
        rate = int(info.samplerate)
        duration = info.frames / rate
        a, b, ws, we = _span(ref, ref.start, ref.end, duration, context, max_seconds)
        i0, i1 = round(a * rate), max(round(b * rate), round(a * rate) + 1)
        data, _ = sf.read(path, start=i0, stop=min(i1, info.frames), dtype="float64",
                          always_2d=True)
    except (RuntimeError, OSError, sf.LibsndfileError) as exc:
        raise FileFormatError(f"ref: cannot decode {path!r} ({one_line(exc)})") from None
    y = data.mean(axis=1) if data.shape[1] else np.zeros(0)
    if y.size == 0:
        raise FileFormatError(f"ref: {path!r} holds no samples in [{a:g}, {b:g}] s")
    y = _resample(y, rate, sr)
    return Clip(np.clip(y, -1.0, 1.0).astype(np.float32), sr, (ws - a, we - a), None, ref,
                offset=a)


def _resample(y: np.ndarray, sr_in: int, sr_out: int) -> np.ndarray:
    """Polyphase resampling by the reduced ratio ``sr_out / sr_in`` (identity when equal)."""
    if sr_in == sr_out:
        return y
    from scipy.signal import resample_poly

    g = math.gcd(int(sr_in), int(sr_out))
    return np.asarray(resample_poly(y, sr_out // g, sr_in // g))


def _midi_clip(
    ref: MediaRef,
    context: float,
    sr: int,
    max_seconds: float,
    soundfont: str | os.PathLike[str] | None,
) -> Clip:
    import mido
    import pandas as pd

    from aria_tda.features.audio.render import find_soundfont, render_midi
    from aria_tda.features.midi import read_midi

    path = str(ref.path)
    font = find_soundfont(soundfont)  # before any work: a missing soundfont is named at once
    try:
        mid = mido.MidiFile(path)
    except (OSError, EOFError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise FileFormatError(
            f"ref: not a readable MIDI file: {path!r} ({one_line(exc)})"
        ) from None
    score = read_midi(mid)
    notes = score.notes()
    start, end = ref.start, ref.end
    if ref.unit == "ticks":
        ticks = [0 if start is None else round(start), 0 if end is None else round(end)]
        secs = score.seconds(np.asarray(ticks, dtype=np.int64))
        start = None if start is None else float(secs[0])
        end = None if end is None else float(secs[1])
    duration = max(score.length_seconds, float(notes.end.max()) if len(notes) else 0.0)
    if duration <= 0.0:
        raise DataError(f"ref: the MIDI file {path!r} holds nothing to play (length 0 s)")
    a, b, ws, we = _span(ref, start, end, duration, context, max_seconds)
    events = _channel_events(mid, score)
    programs = _programs_at(events, notes.channel, notes.start)
    keep = (notes.end > a) & (notes.start < b)
    on = np.maximum(notes.start[keep], a) - a
    off = np.minimum(notes.end[keep], b) - a
    table = pd.DataFrame({
        "pitch": notes.pitch[keep].astype(np.int64),
        "start": on,
        "end": off,
        "velocity": notes.velocity[keep].astype(np.int64),
        "program": programs[keep],
        "is_drum": notes.is_drum[keep].astype(bool),
        "channel": notes.channel[keep].astype(np.int64),
        "track": notes.track[keep].astype(np.int64),
    }).sort_values(["start", "pitch"], kind="stable").reset_index(drop=True)
    render = _render_file(events, table, a, b)
    y = render_midi(render, sr=sr, soundfont=font, duration=b - a, mono=True,
                    dynamic_samples=True)
    y = np.clip(np.asarray(y, dtype=np.float32), -1.0, 1.0)
    return Clip(y, sr, (ws - a, we - a), table, ref, offset=a)


def _channel_events(mid: Any, score: Any) -> list[tuple[float, int, int, Any]]:
    """(seconds, track, index, message) of every program, controller and pitch-bend message."""
    found: list[tuple[int, int, int, Any]] = []
    for ti, track in enumerate(mid.tracks):
        tick = 0
        for ei, msg in enumerate(track):
            tick += int(msg.time)
            if msg.type in ("program_change", "control_change", "pitchwheel"):
                found.append((tick, ti, ei, msg))
    found.sort(key=lambda e: (e[0], e[1], e[2]))
    secs = score.seconds(np.asarray([e[0] for e in found], dtype=np.int64)) if found else []
    return [(float(s), ti, ei, msg) for s, (_, ti, ei, msg) in zip(secs, found, strict=True)]


def _programs_at(
    events: list[tuple[float, int, int, Any]], channel: np.ndarray, start: np.ndarray
) -> np.ndarray:
    """GM program in force on each note's channel at its onset (0 before any change).

    Times are seconds of one tempo map, so their order is the ticks' order; a change on the
    onset's own tick counts.
    """
    out = np.zeros(channel.shape[0], dtype=np.int64)
    changes = [(e[3].channel, e[0], e[3].program) for e in events
               if e[3].type == "program_change"]
    for ch in sorted({c for c, _, _ in changes}):
        times = np.asarray([t for c, t, _ in changes if c == ch])
        progs = np.asarray([p for c, _, p in changes if c == ch], dtype=np.int64)
        sel = channel == ch
        k = np.searchsorted(times, start[sel], side="right") - 1
        out[sel] = np.where(k >= 0, progs[np.maximum(k, 0)], 0)
    return out


def _render_file(
    events: list[tuple[float, int, int, Any]], notes: pd.DataFrame, a: float, b: float
) -> Any:
    """A type-0 MIDI file of the clip: state at ``a`` first, then events and notes in [a, b)."""
    import mido

    state: dict[tuple[Any, ...], Any] = {}
    timed: list[tuple[int, int, Any]] = []  # (tick, order, message)
    for t, _ti, _ei, msg in events:
        if t < a:
            key = (msg.type, msg.channel, getattr(msg, "control", None))
            state[key] = msg
        elif t < b:
            timed.append((_tick(t - a), 0, msg))
    timed += [(0, -1, msg) for msg in state.values()]
    for row in notes.itertuples(index=False):
        ch, pitch = int(row.channel), int(row.pitch)
        t_on = _tick(row.start)
        t_off = max(t_on + 1, _tick(row.end))  # a note is never switched off before it starts
        timed.append((t_on, 2, mido.Message("note_on", channel=ch, note=pitch,
                                            velocity=max(1, int(row.velocity)))))
        timed.append((t_off, 1, mido.Message("note_off", channel=ch, note=pitch, velocity=0)))
    timed.sort(key=lambda e: (e[0], e[1]))
    mid = mido.MidiFile(type=0, ticks_per_beat=_RENDER_TPB)
    track = mido.MidiTrack()
    track.append(mido.MetaMessage("set_tempo", tempo=500_000, time=0))
    last = 0
    for tick, _, msg in timed:
        track.append(msg.copy(time=tick - last))
        last = tick
    mid.tracks.append(track)
    return mid


def _tick(seconds: float) -> int:
    return max(0, round(float(seconds) * _RENDER_TICKS_PER_S))


# --------------------------------------------------------------------------- loudness


def k_weighting(sr: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""The two biquads of BS.1770's K-weighting at ``sr`` Hz: ``(b1, a1, b2, a2)``.

    Stage 1 is a high shelf (about +4 dB above 1.5 kHz: the head), stage 2 a high pass (RLB,
    38 Hz). Both come from the analogue prototypes behind the standard's 48 kHz table through
    the bilinear transform with :math:`K = \tan(\pi f_0 / f_s)` (shelf: :math:`f_0 =
    1681.97\,\mathrm{Hz}`, gain 3.99984 dB, :math:`Q = 0.70718`; high pass: :math:`f_0 =
    38.1355\,\mathrm{Hz}`, :math:`Q = 0.50033`), as libebur128 derives them; at 48 kHz they equal
    the table of ITU-R BS.1770-4 to its printed precision.

    Parameters
    ----------
    sr : int
        Sample rate in Hz.

    Returns
    -------
    b1, a1, b2, a2 : np.ndarray [shape=(3,)]
        Numerator and denominator (``a[0] = 1``) of stage 1 and stage 2.
    """
    sr = check_int("sr", sr, min_value=1000)
    f0, gain_db, q = 1681.974450955533, 3.999843853973347, 0.7071752369554196
    k = math.tan(math.pi * f0 / sr)
    vh = 10.0 ** (gain_db / 20.0)
    vb = vh**0.4996667741545416
    a0 = 1.0 + k / q + k * k
    b1 = np.array([(vh + vb * k / q + k * k) / a0, 2.0 * (k * k - vh) / a0,
                   (vh - vb * k / q + k * k) / a0])
    a1 = np.array([1.0, 2.0 * (k * k - 1.0) / a0, (1.0 - k / q + k * k) / a0])
    f0, q = 38.13547087602444, 0.5003270373238773
    k = math.tan(math.pi * f0 / sr)
    a0 = 1.0 + k / q + k * k
    b2 = np.array([1.0, -2.0, 1.0])
    a2 = np.array([1.0, 2.0 * (k * k - 1.0) / a0, (1.0 - k / q + k * k) / a0])
    return b1, a1, b2, a2


def _as_channels(samples: Any) -> np.ndarray:
    y = np.asarray(samples, dtype=np.float64)
    if y.ndim == 1:
        y = y[None, :]
    if y.ndim != 2 or y.shape[1] == 0:
        raise DataError(expected("samples", "a non-empty array (n,) or (channels, n)",
                                 f"shape {np.shape(samples)}"))
    if not np.all(np.isfinite(y)):
        raise DataError(expected("samples", "finite values", "NaN or inf"))
    return y


def _gated(levels: np.ndarray, powers: np.ndarray) -> float:
    """BS.1770's two gates over block loudness ``levels`` (LUFS) and powers."""
    above = levels > _ABS_GATE
    if not above.any():
        return -math.inf
    relative = _OFFSET + 10.0 * math.log10(float(powers[above].mean())) + _REL_GATE
    keep = above & (levels > relative)
    return _OFFSET + 10.0 * math.log10(float(powers[keep].mean()))


def integrated_loudness(samples: np.ndarray, sr: int) -> float:
    r"""Integrated loudness of ITU-R BS.1770-4, in LUFS (vectorised).

    .. math::

        L = -0.691 + 10 \log_{10} \frac{1}{|J|} \sum_{j \in J} \sum_c z_{c,j},
        \qquad z_{c,j} = \frac{1}{N} \sum_{n \in \text{block } j} y_c[n]^2

    with :math:`y_c` the K-weighted channel :math:`c` (:func:`k_weighting`), blocks of
    :math:`N = 4 \cdot \mathrm{round}(0.1\,f_s)` samples every :math:`N/4`, and :math:`J` the
    blocks above the absolute gate (−70 LUFS) and above the relative gate (10 LU below the
    loudness of the blocks above the absolute gate). A signal shorter than one block is one
    block.

    Parameters
    ----------
    samples : np.ndarray [shape=(n,) or (channels, n)]
        Samples in [-1, 1] (full scale 1); every channel weighted 1.
    sr : int
        Sample rate in Hz.

    Returns
    -------
    float
        LUFS; ``-inf`` when no block passes the absolute gate (silence).

    References
    ----------
    ITU-R BS.1770-4 (2015), "Algorithms to measure audio programme loudness and true-peak audio
    level", Annex 1.
    """
    from scipy.signal import lfilter

    y = _as_channels(samples)
    b1, a1, b2, a2 = k_weighting(sr)
    y = lfilter(b2, a2, lfilter(b1, a1, y, axis=1), axis=1)
    hop = max(1, round(0.1 * sr))
    n_hops = y.shape[1] // hop
    if n_hops < 4:
        powers = np.array([float(np.sum(np.mean(y * y, axis=1)))])
    else:
        sq = (y[:, : n_hops * hop] ** 2).reshape(y.shape[0], n_hops, hop).sum(axis=2)
        hops = sq.sum(axis=0)  # sum over channels (weights 1)
        powers = (hops[:-3] + hops[1:-2] + hops[2:-1] + hops[3:]) / (4 * hop)
    with np.errstate(divide="ignore"):
        levels = _OFFSET + 10.0 * np.log10(powers)
    return _gated(levels, powers)


def integrated_loudness_reference(samples: np.ndarray, sr: int) -> float:
    """Exact loop reference of :func:`integrated_loudness` (direct-form filters, block loops).

    Parameters
    ----------
    samples : np.ndarray [shape=(n,) or (channels, n)]
        Samples in [-1, 1].
    sr : int
        Sample rate in Hz.
    """
    y = _as_channels(samples)
    b1, a1, b2, a2 = k_weighting(sr)
    filtered = []
    for x in y:
        for b, a in ((b1, a1), (b2, a2)):
            out = [0.0] * len(x)
            x1 = x2 = o1 = o2 = 0.0
            for n, xn in enumerate(x):
                on = b[0] * xn + b[1] * x1 + b[2] * x2 - a[1] * o1 - a[2] * o2
                out[n] = on
                x1, x2, o1, o2 = xn, x1, on, o1
            x = np.asarray(out)
        filtered.append(x)
    hop = max(1, round(0.1 * sr))
    n = y.shape[1]
    starts = list(range(0, n - 4 * hop + 1, hop)) if n >= 4 * hop else [0]
    size = 4 * hop if n >= 4 * hop else n
    powers, levels = [], []
    for s in starts:
        z = 0.0
        for x in filtered:
            total = 0.0
            for v in x[s : s + size]:
                total += v * v
            z += total / size
        powers.append(z)
        levels.append(-math.inf if z == 0.0 else _OFFSET + 10.0 * math.log10(z))
    gated = [j for j in range(len(powers)) if levels[j] > _ABS_GATE]
    if not gated:
        return -math.inf
    relative = _OFFSET + 10.0 * math.log10(sum(powers[j] for j in gated) / len(gated)) + _REL_GATE
    final = [j for j in gated if levels[j] > relative]
    return _OFFSET + 10.0 * math.log10(sum(powers[j] for j in final) / len(final))


def loudness_match(clips: list[Clip], *, target_lufs: float = -23.0) -> list[Clip]:
    """Bring every clip to one integrated loudness, so that A/B listening compares music.

    Each clip gets the gain that takes its integrated loudness (:func:`integrated_loudness`)
    to ``target_lufs`` (within 0.001 LU: the gain is corrected a few times, because blocks
    near the absolute gate move across it with the gain); where that would push a sample above
    −1 dBFS (:data:`PEAK_CEILING_DBFS`, sample peak) the gain is lowered until the peak sits
    exactly there — the clip is then quieter than the target, by the amount its ``gain_db`` and
    ``lufs`` show, but nothing clips and nothing is distorted. A silent clip (no block above
    −70 LUFS) stays as it is (``lufs = -inf``, gain 0 dB): no NaN, no noise raised.

    Parameters
    ----------
    clips : list of Clip
        The clips (not modified).
    target_lufs : float
        Integrated loudness to reach, in LUFS, in [-70, 0] (default −23, EBU R 128).

    Returns
    -------
    list of Clip
        New clips, same order, with scaled ``samples`` and ``lufs``/``gain_db`` set.
    """
    target = check_float("target_lufs", target_lufs, min_value=_ABS_GATE, max_value=0.0)
    ceiling = 10.0 ** (PEAK_CEILING_DBFS / 20.0)
    out = []
    for i, clip in enumerate(clips):
        if not isinstance(clip, Clip):
            raise ParameterError(expected(f"clips[{i}]", "a Clip", type(clip).__name__))
        y = np.asarray(clip.samples, dtype=np.float64)
        level = integrated_loudness(y, clip.sr) if y.size else -math.inf
        if not math.isfinite(level):
            out.append(replace(clip, samples=y.astype(np.float32), lufs=-math.inf, gain_db=0.0))
            continue
        gain_db = target - level
        for _ in range(_MATCH_ROUNDS):  # the absolute gate moves with the gain: settle it
            level = integrated_loudness(y * 10.0 ** (gain_db / 20.0), clip.sr)
            if abs(level - target) < _MATCH_TOLERANCE_LU:
                break
            gain_db += target - level
        y = y * 10.0 ** (gain_db / 20.0)
        peak = float(np.max(np.abs(y)))
        if peak > ceiling:
            y *= ceiling / peak
            gain_db += 20.0 * math.log10(ceiling / peak)
        samples = y.astype(np.float32)
        out.append(replace(clip, samples=samples, lufs=integrated_loudness(samples, clip.sr),
                           gain_db=gain_db))
    return out


# --------------------------------------------------------------------------- encoding


def mime_type(fmt: str) -> str:
    """The MIME type of an :func:`encode_clip` format (for ``<audio>``/``data:`` URIs).

    Parameters
    ----------
    fmt : {"ogg-vorbis", "ogg-opus", "wav"}
        The encoding.
    """
    return ENCODINGS[check_choice("fmt", fmt, tuple(ENCODINGS))]


def encode_clip(clip: Clip, *, fmt: str = "ogg-vorbis", bitrate_kbps: int = 32) -> bytes:
    """Encode a clip compactly for a web page: Ogg/Vorbis (default), Ogg/Opus or 16-bit WAV.

    Vorbis keeps the clip's rate; its quality is set through libsndfile's compression level
    (VBR), mapped from ``bitrate_kbps`` as measured on rendered piano music at 22,050 Hz (level
    0.5 gave 51 kb/s, 0.9 gave 34 kb/s, 1.0 — the floor — 31 kb/s). It encodes about 200 times
    faster than real time here, Opus (libsndfile's encoder at its fixed high complexity) about
    16 times: Vorbis is the default for pages with many clips. Opus needs 8, 12, 16, 24 or
    48 kHz: the clip is resampled to the smallest of those not below its rate (48 kHz at most;
    22,050 Hz becomes 24 kHz); its bitrate is set through the compression level, which maps
    linearly onto 6–256 kb/s for a mono stream. Samples are clipped to [-1, 1].

    Parameters
    ----------
    clip : Clip
        What to encode.
    fmt : {"ogg-vorbis", "ogg-opus", "wav"}
        Ogg/Vorbis, Ogg/Opus, or PCM WAV (16-bit, at the clip's rate; larger, decodes
        everywhere). Chromium and Firefox decode all three.
    bitrate_kbps : int
        Target bitrate in kb/s, 6 to 256 (approximate for Vorbis, whose floor is about
        30 kb/s for mono; ignored for WAV). 32 kb/s mono is enough to compare timbre and far
        smaller than PCM (~4 kB a second).

    Returns
    -------
    bytes
        The encoded file; its MIME type is :func:`mime_type` of ``fmt``.
    """
    import soundfile as sf

    if not isinstance(clip, Clip):
        raise ParameterError(expected("clip", "a Clip", type(clip).__name__))
    fmt = check_choice("fmt", fmt, tuple(ENCODINGS))
    kbps = check_int("bitrate_kbps", bitrate_kbps, min_value=6, max_value=256)
    y = np.clip(np.asarray(clip.samples, dtype=np.float64).reshape(-1), -1.0, 1.0)
    if y.size == 0:
        y = np.zeros(1)
    buf = io.BytesIO()
    if fmt == "wav":
        sf.write(buf, y, int(clip.sr), format="WAV", subtype="PCM_16")
        return buf.getvalue()
    if fmt == "ogg-vorbis":
        level = min(1.0, max(0.0, 1.0 - (kbps - 30) / 42.0))
        sf.write(buf, y, int(clip.sr), format="OGG", subtype="VORBIS", compression_level=level)
        return buf.getvalue()
    rate = next((r for r in _OPUS_RATES if r >= clip.sr), _OPUS_RATES[-1])
    y = _resample(y, int(clip.sr), rate)
    level = min(1.0, max(0.0, 1.0 - (kbps - 6) / 250.0))
    sf.write(buf, np.clip(y, -1.0, 1.0), rate, format="OGG", subtype="OPUS",
             compression_level=level)
    return buf.getvalue()
