r"""Render MIDI to audio with FluidSynth and a General-MIDI soundfont.

Used to verify the audio evidence channels on audio whose musical truth is known (tempo,
chords, pitches), and by users who want audio features of a symbolic corpus.

Conventions
-----------
- Output is ``float32`` in :math:`[-1, 1]` (FluidSynth's float renderer, no int16
  quantisation or clipping), shape ``(n_samples,)`` when ``mono=True`` (mean of the two
  synthesiser channels) else ``(2, n_samples)`` (librosa's channel-first layout).
- Time: every MIDI event is applied at sample ``round(t * sr)`` where ``t`` is its time in
  seconds after all tempo changes (:mod:`mido` semantics); rendering is sample-accurate.
- Events rendered: note on/off (note on with velocity 0 is a note off), control change
  (volume, pan, expression, sustain, bank select, …), program change, pitch bend. Channel 10
  (index 9) is the GM drum kit. Other events (aftertouch, sysex, meta) are ignored.
- Length: up to the last event plus ``tail`` seconds (release and reverb), or exactly
  ``duration`` seconds when given (events after it are dropped).
- Soundfont: the ``soundfont`` argument, else ``$ARIA_SOUNDFONT`` (either a ``.sf2`` file or
  a folder holding one; when given, only it is searched), else the first that exists of
  Debian's ``fluid-soundfont-gm`` (``/usr/share/sounds/sf2/FluidR3_GM.sf2``),
  ``/usr/share/sounds/sf2/default-GM.sf2``, ``/usr/share/soundfonts/*.sf2``, and the small
  ``TimGM6mb.sf2`` that pretty_midi ships (:func:`find_soundfont`). None found is one line
  naming every place looked in and how to install one.

FluidSynth's output is deterministic for a given MIDI file, soundfont, sample rate and settings.
"""

from __future__ import annotations

import ctypes
import importlib.util
import io
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._checks import check_existing_path, check_float, check_int, check_writable_path
from aria_tda._io import atomic_path
from aria_tda.errors import FileFormatError, MissingDependencyError, ParameterError, expected

__all__ = [
    "Note",
    "find_soundfont",
    "import_fluidsynth",
    "midi_from_notes",
    "render_file",
    "render_midi",
]

_SYSTEM_SOUNDFONTS = (
    "/usr/share/sounds/sf2/FluidR3_GM.sf2",
    "/usr/share/sounds/sf2/default-GM.sf2",
    "/usr/share/soundfonts/FluidR3_GM.sf2",
    "/usr/share/soundfonts/default.sf2",
)
_BLOCK = 1 << 16  # frames rendered per FluidSynth call


# --------------------------------------------------------------------------------------
# Building MIDI from notes (test signals with known truth)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Note:
    """One note for :func:`midi_from_notes`; times in beats (quarter notes)."""

    start: float
    duration: float
    pitch: int
    velocity: int = 90
    channel: int = 0


def midi_from_notes(
    notes: Iterable[Note | Sequence[Any]],
    *,
    bpm: float = 120.0,
    programs: dict[int, int] | None = None,
    ticks_per_beat: int = 480,
    time_signature: tuple[int, int] = (4, 4),
) -> Any:
    """Build a type-1 :class:`mido.MidiFile` from notes given in beats.

    Parameters
    ----------
    notes : iterable of Note or (start, duration, pitch[, velocity[, channel]])
        Start and duration in beats (quarter notes); pitch 0-127; velocity 1-127;
        channel 0-15 (9 is the GM drum kit).
    bpm : float
        Constant tempo in beats per minute.
    programs : dict channel -> GM program (0-127), optional
        Program change written at time 0 for each channel (default: 0, acoustic grand piano).
    ticks_per_beat : int
    time_signature : (numerator, denominator)

    Returns
    -------
    mido.MidiFile
        One conductor track (tempo, time signature) and one track per channel used.
    """
    import mido

    bpm = check_float("bpm", bpm, min_value=1.0, max_value=1000.0)
    tpb = check_int("ticks_per_beat", ticks_per_beat, min_value=24, max_value=32767)
    parsed = [_as_note(i, n) for i, n in enumerate(notes)]
    programs = dict(programs or {})
    for ch, prog in programs.items():
        check_int(f"programs[{ch!r}]", prog, min_value=0, max_value=127)
        check_int("programs key (channel)", ch, min_value=0, max_value=15)
    mid = mido.MidiFile(type=1, ticks_per_beat=tpb)
    conductor = mido.MidiTrack()
    conductor.append(mido.MetaMessage("set_tempo", tempo=mido.bpm2tempo(bpm), time=0))
    num, den = time_signature
    conductor.append(mido.MetaMessage("time_signature", numerator=num, denominator=den, time=0))
    mid.tracks.append(conductor)
    for ch in sorted({n.channel for n in parsed} | set(programs)):
        events: list[tuple[int, int, Any]] = []  # (tick, order, message); offs before ons
        if ch != 9 or ch in programs:
            events.append(
                (0, -1, mido.Message("program_change", channel=ch, program=programs.get(ch, 0)))
            )
        for n in (n for n in parsed if n.channel == ch):
            on = round(n.start * tpb)
            off = max(on + 1, round((n.start + n.duration) * tpb))
            events.append(
                (on, 1, mido.Message("note_on", channel=ch, note=n.pitch, velocity=n.velocity))
            )
            events.append((off, 0, mido.Message("note_off", channel=ch, note=n.pitch, velocity=0)))
        events.sort(key=lambda e: (e[0], e[1]))
        track = mido.MidiTrack()
        last = 0
        for tick, _, msg in events:
            track.append(msg.copy(time=tick - last))
            last = tick
        mid.tracks.append(track)
    return mid


def _as_note(i: int, n: Note | Sequence[Any]) -> Note:
    if not isinstance(n, Note):
        try:
            n = Note(*n)
        except TypeError:
            raise ParameterError(
                expected(
                    f"notes[{i}]", "a Note or (start, duration, pitch[, velocity[, channel]])", n
                )
            ) from None
    check_float(f"notes[{i}].start", n.start, min_value=0.0)
    check_float(f"notes[{i}].duration", n.duration, min_value=0.0, min_inclusive=False)
    check_int(f"notes[{i}].pitch", n.pitch, min_value=0, max_value=127)
    check_int(f"notes[{i}].velocity", n.velocity, min_value=1, max_value=127)
    check_int(f"notes[{i}].channel", n.channel, min_value=0, max_value=15)
    return n


# --------------------------------------------------------------------------------------
# Soundfont and FluidSynth
# --------------------------------------------------------------------------------------


def find_soundfont(soundfont: str | os.PathLike[str] | None = None) -> Path:
    """Return the soundfont to use (see the module docstring for the search order).

    ``soundfont`` and ``$ARIA_SOUNDFONT`` may name a ``.sf2`` file or a folder holding one
    (its General-MIDI soundfonts by name first, then any ``.sf2``/``.sf3``); when either is
    given, only it is searched (the user's choice, not the system's).

    Parameters
    ----------
    soundfont : path, optional
        An explicit soundfont file or folder (checked to exist); else the search order of the
        module docstring.

    Raises
    ------
    FileFormatError
        ``soundfont`` (or ``$ARIA_SOUNDFONT``) names a path that does not exist.
    MissingDependencyError
        No General-MIDI soundfont where ARIA looked: one line naming every place looked in and
        how to install one.
    """
    if soundfont is not None:
        return _given_soundfont("soundfont", soundfont, "soundfont (--soundfont)")
    env = os.environ.get("ARIA_SOUNDFONT")
    if env:
        return _given_soundfont("ARIA_SOUNDFONT", env, "$ARIA_SOUNDFONT")
    for cand in _SYSTEM_SOUNDFONTS:
        if Path(cand).is_file():
            return Path(cand)
    looked = list(_SYSTEM_SOUNDFONTS)
    spec = importlib.util.find_spec("pretty_midi")
    if spec is not None and spec.origin:
        small = Path(spec.origin).parent / "TimGM6mb.sf2"
        if small.is_file():
            return small
        looked.append(str(small))
    else:
        looked.append("pretty_midi's TimGM6mb.sf2 (pretty_midi is not installed)")
    raise _no_soundfont(", ".join(looked))


#: Names of General-MIDI soundfonts, preferred in a folder given as the soundfont.
_GM_NAMES = ("FluidR3_GM.sf2", "default-GM.sf2", "GeneralUser GS.sf2", "TimGM6mb.sf2")


def _given_soundfont(name: str, value: str | os.PathLike[str], shown: str) -> Path:
    """The soundfont a user named: the file, or the General-MIDI soundfont in the folder."""
    path = check_existing_path(name, value, kind="any")
    if path.is_file():
        return path
    for gm in _GM_NAMES:
        if (path / gm).is_file():
            return path / gm
    found = sorted(p for p in path.iterdir() if p.suffix.lower() in (".sf2", ".sf3")
                   and p.is_file())
    if found:
        return found[0]
    raise _no_soundfont(f"{shown} {str(path)!r}, a folder with no .sf2 or .sf3 file")


def _no_soundfont(looked: str) -> MissingDependencyError:
    return MissingDependencyError(
        f"no General-MIDI soundfont found (looked in {looked}): install the Debian package "
        "fluid-soundfont-gm (scripts/setup.sh does), pip install 'aria-tda[audio]' (pretty_midi "
        "ships a small one), or name a .sf2 file or folder with --soundfont / ARIA_SOUNDFONT"
    )


def import_fluidsynth() -> Any:
    """The ``fluidsynth`` module (pyfluidsynth), which renders MIDI to audio.

    Returns
    -------
    module

    Raises
    ------
    MissingDependencyError
        pyfluidsynth or the FluidSynth C library is missing (the message says what to install).
    """
    try:
        import fluidsynth
    except ImportError as exc:  # pyfluidsynth missing, or the C library libfluidsynth missing
        raise MissingDependencyError(
            "FluidSynth is not available (needed to render MIDI to audio): install the system "
            "library (Debian: apt-get install fluidsynth libfluidsynth3; scripts/setup.sh does) "
            f"and pip install 'aria-tda[audio]' ({exc})"
        ) from exc
    return fluidsynth


class _Synth:
    """A FluidSynth synthesiser writing float32 stereo through ``fluid_synth_write_float``."""

    def __init__(
        self, sr: int, soundfont: Path, gain: float, reverb: bool, chorus: bool,
        dynamic_samples: bool = False,
    ) -> None:
        fs = import_fluidsynth()
        # settings passed to the constructor are applied before the synthesiser is created
        effects = {"synth.reverb.active": int(reverb), "synth.chorus.active": int(chorus)}
        if dynamic_samples:  # load only the samples of the presets the file selects
            effects["synth.dynamic-sample-loading"] = 1
        self._synth = fs.Synth(gain=gain, samplerate=float(sr), **effects)
        self.sfid = self._synth.sfload(str(soundfont))
        if self.sfid == -1:
            self._synth.delete()
            raise FileFormatError(f"soundfont: FluidSynth could not load {str(soundfont)!r}")
        lib = ctypes.CDLL(fs.lib)
        self._write = lib.fluid_synth_write_float
        self._write.argtypes = [
            ctypes.c_void_p,
            ctypes.c_int,
            ctypes.c_void_p,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_void_p,
            ctypes.c_int,
            ctypes.c_int,
        ]
        self._write.restype = ctypes.c_int
        for ch in range(16):
            self._synth.program_select(ch, self.sfid, 128 if ch == 9 else 0, 0)

    def render(self, out: np.ndarray) -> None:
        """Fill ``out`` (shape (n, 2), float32, C-contiguous) with the next n frames."""
        n = out.shape[0]
        if n == 0:
            return
        ptr = out.ctypes.data
        rc = self._write(ctypes.c_void_p(self._synth.synth), n, ptr, 0, 2, ptr, 1, 2)
        if rc != 0:
            raise RuntimeError("fluid_synth_write_float failed")

    def send(self, msg: Any) -> None:
        s, t = self._synth, msg.type
        if t == "note_on" and msg.velocity > 0:
            s.noteon(msg.channel, msg.note, msg.velocity)
        elif t in ("note_off", "note_on"):
            s.noteoff(msg.channel, msg.note)
        elif t == "control_change":
            s.cc(msg.channel, msg.control, msg.value)
        elif t == "program_change":
            if msg.channel == 9:
                s.program_select(9, self.sfid, 128, msg.program)
            else:
                s.program_change(msg.channel, msg.program)
        elif t == "pitchwheel":
            s.pitch_bend(msg.channel, msg.pitch)

    def close(self) -> None:
        self._synth.delete()


# --------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------


def _load_midi(midi: Any) -> Any:
    import mido

    if isinstance(midi, mido.MidiFile):
        return midi
    try:
        if isinstance(midi, (bytes, bytearray)):
            return mido.MidiFile(file=io.BytesIO(bytes(midi)))
        if isinstance(midi, (str, os.PathLike)):
            path = check_existing_path("midi", midi, kind="file")
            return mido.MidiFile(str(path))
    except (OSError, EOFError, ValueError, KeyError, IndexError) as exc:
        raise FileFormatError(f"midi: not a readable MIDI file: {exc}") from None
    raise ParameterError(expected("midi", "a path, bytes or a mido.MidiFile", type(midi).__name__))


def render_midi(
    midi: Any,
    *,
    sr: int = 48000,
    soundfont: str | os.PathLike[str] | None = None,
    mono: bool = True,
    gain: float = 0.2,
    tail: float = 1.0,
    duration: float | None = None,
    reverb: bool = True,
    chorus: bool = True,
    dynamic_samples: bool = False,
) -> np.ndarray:
    r"""Render a MIDI file to audio with FluidSynth.

    Parameters
    ----------
    midi : path, bytes or mido.MidiFile
    sr : int
        Output sample rate in Hz (FluidSynth renders at this rate; no resampling).
    soundfont : path, optional
        A ``.sf2`` file; default: :func:`find_soundfont`.
    mono : bool
        Mean of the two channels (default) or channel-first stereo.
    gain : float
        FluidSynth master gain (``synth.gain``, default 0.2), in (0, 10].
    tail : float
        Seconds rendered after the last event (release, reverb); ignored with ``duration``.
    duration : float, optional
        Exact output length in seconds.
    reverb, chorus : bool
        FluidSynth's built-in effects.
    dynamic_samples : bool
        Load only the samples of the presets the file selects (FluidSynth's
        ``synth.dynamic-sample-loading``): the General-MIDI soundfont opens in 0.06 s instead
        of 0.45 s, for short clips (:func:`aria_tda.media.load_clip`). Deterministic, but a
        program change mid-file can differ from the default by about -60 dB (measured
        6.9e-6 on a clip of RMS 0.013); off by default so that corpora render as before.

    Returns
    -------
    np.ndarray [shape=(n,) or (2, n), dtype=float32]
        ``n = round(duration * sr)`` or ``round((t_last + tail) * sr)``.

    Raises
    ------
    FileFormatError
        The MIDI file or the soundfont cannot be read.
    MissingDependencyError
        FluidSynth or a soundfont is missing.
    """
    sr = check_int("sr", sr, min_value=8000, max_value=192000)
    gain = check_float("gain", gain, min_value=0.0, max_value=10.0, min_inclusive=False)
    tail = check_float("tail", tail, min_value=0.0)
    if duration is not None:
        duration = check_float("duration", duration, min_value=0.0, min_inclusive=False)
    mid = _load_midi(midi)
    sf = find_soundfont(soundfont)
    # (sample index, message) in time order; mido's iteration applies tempo changes
    events: list[tuple[int, Any]] = []
    t = 0.0
    try:
        for msg in mid:
            t += msg.time
            if not msg.is_meta:
                events.append((round(t * sr), msg))
    except (ValueError, KeyError, IndexError) as exc:
        raise FileFormatError(f"midi: malformed MIDI data: {exc}") from None
    n_total = round(duration * sr) if duration is not None else round((t + tail) * sr)
    n_total = max(n_total, 1)
    out = np.zeros((n_total, 2), dtype=np.float32)
    synth = _Synth(sr, sf, gain, reverb, chorus, dynamic_samples)
    try:
        pos = 0
        for at, msg in events:
            at = min(at, n_total)
            while pos < at:
                step = min(_BLOCK, at - pos)
                synth.render(out[pos : pos + step])
                pos += step
            if at >= n_total:
                break
            synth.send(msg)
        while pos < n_total:
            step = min(_BLOCK, n_total - pos)
            synth.render(out[pos : pos + step])
            pos += step
    finally:
        synth.close()
    if mono:
        return np.ascontiguousarray(out.mean(axis=1, dtype=np.float32))
    return np.ascontiguousarray(out.T)


def render_file(
    midi: Any,
    out: str | os.PathLike[str],
    *,
    sr: int = 48000,
    subtype: str = "PCM_16",
    **kwargs: Any,
) -> Path:
    """Render ``midi`` and write it atomically to ``out`` (format by suffix: .wav, .flac, .ogg).

    ``kwargs`` are those of :func:`render_midi`. ``subtype`` is the soundfile subtype
    (``"PCM_16"``, ``"PCM_24"``, ``"FLOAT"``); samples are clipped to [-1, 1] for PCM.
    Returns the output path.

    Parameters
    ----------
    midi : path | mido.MidiFile | bytes
        The MIDI to render (as :func:`render_midi`).
    out : path
        Output audio file; its suffix picks the format.
    sr : int
        Sample rate in Hz.
    subtype : str
        soundfile subtype (``"PCM_16"``, ``"PCM_24"``, ``"FLOAT"``).
    **kwargs
        Further :func:`render_midi` keywords (soundfont, gain, duration, ...).
    """
    import soundfile as sf

    path = check_writable_path("out", out)
    fmt = {".wav": "WAV", ".flac": "FLAC", ".ogg": "OGG"}.get(path.suffix.lower())
    if fmt is None:
        raise ParameterError(expected("out", "a path ending in .wav, .flac or .ogg", str(path)))
    y = render_midi(midi, sr=sr, **kwargs)
    data = y.T if y.ndim == 2 else y
    if subtype.upper().startswith("PCM"):
        data = np.clip(data, -1.0, 1.0)
    if fmt == "OGG":
        subtype = "VORBIS"
    with atomic_path(path) as tmp:
        sf.write(str(tmp), data, sr, format=fmt, subtype=subtype)
    return path
