r"""Audio plants: one musical aspect each, put into rendered versions of music21 works.

The audio corpus of ``aria-tda demo audio`` (:mod:`aria_tda_experiments.audio.corpus`) renders
every work as several *versions* (GM program, tempo, key). A planted track is such a version
with **one** aspect changed, applied to the version's MIDI
(:func:`~aria_tda_experiments.audio.versions.make_version_midi`) before FluidSynth renders it:

``rhythm``
    A recurring percussion pattern added on the GM drum channel (MIDI channel 10, which no
    version uses): :data:`DRUM_PATTERN`, a 16-step bar at :data:`DRUM_BPM` (a son-clave
    figure on claves, kick, clap and closed hi-hat), from 0 s to the end of the track, at the
    same absolute times in every planted track. Pitches, program and the work's own timing
    are untouched.
``harmony``
    A recurring chord progression, :data:`PROGRESSION` (C - E - A♭ - D major, chromatic
    mediants no collection of the corpus uses as a loop), one chord every
    :data:`CHORD_SECONDS` seconds from 0 s: every note of the version is moved to the nearest
    tone of the chord sounding at its onset (ties downwards; a tone already sounding on the
    same channel is skipped for the next nearest), so each item keeps its own rhythm,
    register, voicing density and instrument — the progression is voiced and rhythmised
    afresh by every work.
``timbre``
    Every part played by :data:`PLANT_PROGRAM` (GM 109, bagpipe), a program no version of
    the corpus draws (:data:`~aria_tda_experiments.audio.versions.INSTRUMENT_FAMILIES`);
    notes, timing and key are untouched.

The patterns above are family **A**'s (the default; this module's constants). How each plant
changes a track is fixed; its pattern comes from a *family* (:class:`AudioPlantFamily`,
:data:`FAMILIES`). Family **B** is held out: designed from musical reasoning alone and never
used to choose any setting, so that ARIA's per-aspect reading is also tested on patterns
nothing was tuned on:

=======  =========================================  =========================================
aspect   A                                          B
=======  =========================================  =========================================
rhythm   16 sixteenths at 112 bpm: son clave on     12 triplet eighths at 100 bpm (a 12/8
         claves, kick, hand clap, closed hi-hat on  bar): the standard bell on cowbell, low
         the eighths                                conga on 1 and 3, open high conga on 2
                                                    and 4 (+ a pickup), maracas on every step
harmony  C – E – A♭ – D major, 2 s per chord         B♭m – G♭ – Dm – A (minor and major
                                                    alternate, semitone voice leading), 3 s
                                                    per chord
timbre   GM 109, bagpipe (a sustained reed)         GM 104, sitar (a plucked, buzzing string)
=======  =========================================  =========================================

Neither family's chord loop is one a collection of the corpus uses, and neither program is
one a version draws (checked on import).

:func:`plant_midi` applies a plant to a version's MIDI (``aspect=None`` returns it unchanged,
so an unmarked track renders exactly as in the audio demo's corpus); :func:`render_planted`
renders one planted track (loudness-normalised like the corpus,
:data:`~aria_tda_experiments.audio.corpus.TARGET_RMS`); :func:`choose_marked` picks the marked
training tracks.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from aria_tda._checks import check_choice
from aria_tda.errors import DataError, ParameterError, expected
from aria_tda_experiments.audio.versions import INSTRUMENT_FAMILIES, make_version_midi
from aria_tda_experiments.planted.plants import PLANT_FAMILIES

__all__ = [
    "AUDIO_ASPECTS",
    "CHORD_SECONDS",
    "DRUM_BPM",
    "DRUM_CHANNEL",
    "DRUM_PATTERN",
    "FAMILIES",
    "PLANT_PROGRAM",
    "PROGRESSION",
    "AudioPlantFamily",
    "audio_plant_family",
    "choose_marked",
    "chord_at",
    "job_digest",
    "plant_midi",
    "planted_version_midi",
    "render_planted",
]

#: The audio plants, in report order (ARIA's audio channel names).
AUDIO_ASPECTS: tuple[str, ...] = ("rhythm", "harmony", "timbre")
#: GM program of the timbre plant (family A: bagpipe): no version of the corpus uses it.
PLANT_PROGRAM = 109
#: GM drum channel (0-based 9 = MIDI channel 10).
DRUM_CHANNEL = 9
#: Tempo of the rhythm plant's bar (family A: 16 steps of a sixteenth note).
DRUM_BPM = 112.0
#: The rhythm plant (family A): GM drum note -> steps (0-15) of the 16-step bar where it
#: sounds.
DRUM_PATTERN: dict[int, tuple[int, ...]] = {
    75: (0, 3, 6, 10, 12),  # claves: son clave 3-2
    36: (0, 6, 8, 14),  # bass drum
    39: (4, 12),  # hand clap
    42: (0, 2, 4, 6, 8, 10, 12, 14),  # closed hi-hat
}
_DRUM_VELOCITY = {75: 100, 36: 100, 39: 90, 42: 60}
_DRUM_NOTE_SECONDS = 0.06
#: The harmony plant (family A): pitch classes of each chord (C, E, A♭, D major), one per
#: CHORD_SECONDS.
PROGRESSION: tuple[tuple[int, ...], ...] = ((0, 4, 7), (4, 8, 11), (8, 0, 3), (2, 6, 9))
CHORD_SECONDS = 2.0


@dataclass(frozen=True)
class AudioPlantFamily:
    """The patterns of one family of audio plants (see the module docstring).

    Attributes
    ----------
    name : str
        The family's name (:data:`~.plants.PLANT_FAMILIES`).
    drum_pattern : dict of int to tuple of int
        Rhythm plant: GM drum note -> steps (``0 .. drum_bar_steps - 1``) where it sounds.
    drum_velocity : dict of int to int
        Rhythm plant: GM drum note -> MIDI velocity (the notes of ``drum_pattern``).
    drum_bpm : float
        Rhythm plant: beats per minute.
    drum_steps_per_beat : int
        Rhythm plant: steps per beat (4: sixteenths, 3: triplet eighths).
    drum_bar_steps : int
        Rhythm plant: steps per bar (the pattern's cycle).
    progression : tuple of tuple of int
        Harmony plant: pitch classes (0-11) of each chord, cycled.
    chord_seconds : float
        Harmony plant: seconds per chord.
    program : int
        Timbre plant: the GM program every part is given (0-127), one no corpus version draws.
    """

    name: str
    drum_pattern: dict[int, tuple[int, ...]]
    drum_velocity: dict[int, int]
    drum_bpm: float
    drum_steps_per_beat: int
    drum_bar_steps: int
    progression: tuple[tuple[int, ...], ...]
    chord_seconds: float
    program: int

    def __post_init__(self) -> None:
        def bad(field: str, what: str) -> ParameterError:
            return ParameterError(expected(field, what, getattr(self, field)))

        if not self.drum_pattern or not all(
                steps and all(0 <= s < self.drum_bar_steps for s in steps)
                for steps in self.drum_pattern.values()):
            raise bad("drum_pattern", f"steps 0-{self.drum_bar_steps - 1} for each drum note")
        if set(self.drum_velocity) != set(self.drum_pattern) or not all(
                1 <= v <= 127 for v in self.drum_velocity.values()):
            raise bad("drum_velocity", "a velocity 1-127 for every note of drum_pattern")
        if not self.drum_bpm > 0 or self.drum_steps_per_beat < 1:
            raise bad("drum_bpm", "a positive tempo with at least one step per beat")
        if not self.progression or not all(
                c and all(0 <= pc <= 11 for pc in c) for c in self.progression):
            raise bad("progression", "chords of pitch classes 0-11")
        if not self.chord_seconds > 0:
            raise bad("chord_seconds", "a positive duration")
        if not 0 <= self.program <= 127:
            raise bad("program", "a GM program 0-127")

    def step_seconds(self) -> float:
        """Seconds per step of the rhythm plant's bar."""
        return 60.0 / self.drum_bpm / self.drum_steps_per_beat


#: The plant families: ``A`` (this module's constants, the default) and ``B`` (held out: never
#: used to choose a setting; see the module docstring).
FAMILIES: dict[str, AudioPlantFamily] = {
    "A": AudioPlantFamily(
        name="A", drum_pattern=DRUM_PATTERN, drum_velocity=_DRUM_VELOCITY, drum_bpm=DRUM_BPM,
        drum_steps_per_beat=4, drum_bar_steps=16, progression=PROGRESSION,
        chord_seconds=CHORD_SECONDS, program=PLANT_PROGRAM),
    "B": AudioPlantFamily(
        name="B",
        # a 12/8 bar (A: straight sixteenths), on hand percussion A does not use: the
        # standard seven-stroke bell on cowbell, low conga on beats 1 and 3, open high conga
        # on 2 and 4 with a pickup, maracas on every triplet (A's hi-hat, in threes)
        drum_pattern={
            56: (0, 2, 4, 5, 7, 9, 11),  # cowbell: the 12/8 bell
            64: (0, 6),  # low conga
            63: (3, 9, 10),  # open high conga
            70: tuple(range(12)),  # maracas
        },
        drum_velocity={56: 95, 64: 100, 63: 90, 70: 50},
        drum_bpm=100.0, drum_steps_per_beat=3, drum_bar_steps=12,
        # Bb minor - Gb - D minor - A: minor and major triads alternating, every change by
        # semitone voice leading; none of A's chords; 3 s per chord (a 12 s loop: the 10 s
        # training windows start on different chords, as A's 8 s loop makes them)
        progression=((10, 1, 5), (6, 10, 1), (2, 5, 9), (9, 1, 4)), chord_seconds=3.0,
        # sitar: a plucked, buzzing string, where A's bagpipe is a sustained reed
        program=104),
}
if tuple(FAMILIES) != PLANT_FAMILIES:  # pragma: no cover
    raise RuntimeError("FAMILIES must hold every name of PLANT_FAMILIES, in order")
_PROGRAMS = [f.program for f in FAMILIES.values()]
if len(set(_PROGRAMS)) < len(_PROGRAMS) or any(  # pragma: no cover
        prog in progs for prog in _PROGRAMS for progs in INSTRUMENT_FAMILIES.values()):
    raise RuntimeError("each family's timbre program must be its own and one no corpus "
                       "version uses")


def audio_plant_family(family: str | AudioPlantFamily) -> AudioPlantFamily:
    """The family ``family`` names (an :class:`AudioPlantFamily` is returned as it is).

    Parameters
    ----------
    family : {"A", "B"} or AudioPlantFamily
    """
    if isinstance(family, AudioPlantFamily):
        return family
    return FAMILIES[check_choice("family", family, PLANT_FAMILIES)]


def chord_at(seconds: float, *, family: str | AudioPlantFamily = "A") -> tuple[int, ...]:
    """Pitch classes of the harmony plant's chord sounding at ``seconds``.

    Parameters
    ----------
    seconds : float
        Time from the start of the track.
    family : {"A", "B"} or AudioPlantFamily
        Whose progression (:data:`FAMILIES`).
    """
    fam = audio_plant_family(family)
    prog = fam.progression
    return prog[int(max(seconds, 0.0) // fam.chord_seconds) % len(prog)]


def _nearest_tones(pitch: int, pcs: Sequence[int]) -> list[int]:
    """Chord tones (0-127) by distance from ``pitch``, ties downwards."""
    cands = [p for p in range(max(0, pitch - 12), min(127, pitch + 12) + 1) if p % 12 in pcs]
    return sorted(cands, key=lambda p: (abs(p - pitch), p))


def _absolute(track: Any) -> list[tuple[int, Any]]:
    t, out = 0, []
    for msg in track:
        t += msg.time
        out.append((t, msg))
    return out


def _relative(events: list[tuple[int, Any]]) -> Any:
    import mido

    track, prev = mido.MidiTrack(), 0
    for t, msg in events:
        track.append(msg.copy(time=t - prev))
        prev = t
    return track


def _is_on(msg: Any) -> bool:
    return msg.type == "note_on" and msg.velocity > 0


def _is_off(msg: Any) -> bool:
    return msg.type == "note_off" or (msg.type == "note_on" and msg.velocity == 0)


def _harmony(events: list[tuple[int, Any]], tps: float,
             fam: AudioPlantFamily) -> list[tuple[int, Any]]:
    sounding: dict[int, set[int]] = {}  # channel -> remapped pitches sounding
    moved: dict[tuple[int, int], list[int]] = {}  # (channel, original) -> remapped, FIFO
    out = []
    for t, msg in events:
        if _is_on(msg):
            busy = sounding.setdefault(msg.channel, set())
            tones = _nearest_tones(msg.note, chord_at(t / tps, family=fam))
            new = next((p for p in tones if p not in busy), tones[0])
            busy.add(new)
            moved.setdefault((msg.channel, msg.note), []).append(new)
            msg = msg.copy(note=new)
        elif _is_off(msg):
            queue = moved.get((msg.channel, msg.note))
            if not queue:
                continue  # an off without its on (cut by the loop): drop it
            new = queue.pop(0)
            sounding.get(msg.channel, set()).discard(new)
            msg = msg.copy(note=new)
        elif msg.type == "polytouch":
            continue
        out.append((t, msg))
    return out


def _drums(end_tick: int, tps: float, fam: AudioPlantFamily) -> list[tuple[int, Any]]:
    import mido

    step, n_steps = fam.step_seconds(), fam.drum_bar_steps
    out: list[tuple[int, Any]] = []
    bar = 0
    while bar * n_steps * step * tps < end_tick:
        for note, steps in fam.drum_pattern.items():
            for s in steps:
                on = round((bar * n_steps + s) * step * tps)
                off = on + round(_DRUM_NOTE_SECONDS * tps)
                if off >= end_tick:
                    continue
                out.append((on, mido.Message("note_on", channel=DRUM_CHANNEL, note=note,
                                             velocity=fam.drum_velocity[note])))
                out.append((off, mido.Message("note_off", channel=DRUM_CHANNEL, note=note,
                                              velocity=0)))
        bar += 1
    return out


def plant_midi(midi: Any, aspect: str | None, *, seconds: float | None = None,
               family: str | AudioPlantFamily = "A") -> Any:
    """A version's MIDI with one plant (see the module docstring).

    Parameters
    ----------
    midi : mido.MidiFile
        Output of :func:`~aria_tda_experiments.audio.versions.make_version_midi` (type 0,
        tempo 120 bpm, a program change per channel at 0).
    aspect : {"rhythm", "harmony", "timbre"} or None
        The plant; ``None`` returns ``midi`` itself, unchanged.
    seconds : float, optional
        Length of the track (the drum pattern runs to it; default: the last event).
    family : {"A", "B"} or AudioPlantFamily
        Whose pattern (:data:`FAMILIES`).

    Returns
    -------
    mido.MidiFile
    """
    import mido

    fam = audio_plant_family(family)
    if aspect is None:
        return midi
    if aspect not in AUDIO_ASPECTS:
        raise ParameterError(expected("aspect", f"one of {AUDIO_ASPECTS} or None", aspect))
    if len(midi.tracks) != 1:
        raise DataError(expected("midi", "a type-0 version MIDI (one track)",
                                 f"{len(midi.tracks)} tracks"))
    tps = midi.ticks_per_beat * 2.0  # ticks per second at 120 bpm (make_version_midi's tempo)
    events = _absolute(midi.tracks[0])
    if aspect == "timbre":
        events = [(t, m.copy(program=fam.program) if m.type == "program_change" else m)
                  for t, m in events]
    elif aspect == "harmony":
        events = _harmony(events, tps, fam)
    else:
        end = round(seconds * tps) if seconds is not None else max(t for t, _ in events) + 1
        events = sorted(events + _drums(end, tps, fam),
                        key=lambda e: e[0])  # stable: program first
    out = mido.MidiFile(type=0, ticks_per_beat=midi.ticks_per_beat)
    out.tracks.append(_relative(events))
    return out


def planted_version_midi(job: dict[str, Any]) -> Any:
    """The planted MIDI of one render job (:func:`render_planted`'s fields).

    Parameters
    ----------
    job : dict
        ``midi`` (bytes), ``program``, ``tempo_scale``, ``transpose``, ``seconds``, ``aspect``
        and optionally ``family`` (the plant family's name, default ``"A"``).
    """
    mid = make_version_midi(job["midi"], program=job["program"], tempo_scale=job["tempo_scale"],
                            transpose=job["transpose"], seconds=job["seconds"])
    return plant_midi(mid, job["aspect"], seconds=job["seconds"],
                      family=job.get("family", "A"))


def render_planted(job: dict[str, Any]) -> float:
    """Render one planted track to ``job["out"]`` like the corpus does; the seconds it took.

    Parameters
    ----------
    job : dict
        :func:`planted_version_midi`'s fields plus ``sr``, ``soundfont`` and ``out`` (WAV).
    """
    import soundfile as sf

    from aria_tda._io import atomic_path
    from aria_tda.features.audio.render import render_midi
    from aria_tda_experiments.audio.corpus import PEAK_LIMIT, TARGET_RMS

    start = time.perf_counter()
    y = render_midi(planted_version_midi(job), sr=job["sr"], duration=job["seconds"],
                    soundfont=job["soundfont"])
    rms = float(np.sqrt(np.mean(np.square(y, dtype=np.float64)))) if y.size else 0.0
    if not rms > 1e-5:
        raise DataError(f"silent rendering (rms {rms:.2g})")
    gain = min(TARGET_RMS / rms, PEAK_LIMIT / float(np.max(np.abs(y))))
    with atomic_path(job["out"]) as tmp:
        sf.write(os.fspath(tmp), (y * gain).astype(np.float32), job["sr"], format="WAV",
                 subtype="PCM_16")
    return time.perf_counter() - start


def job_digest(job: dict[str, Any], soundfont_id: str) -> str:
    """Digest of everything a planted rendering depends on (its WAV's cache key).

    Parameters
    ----------
    job : dict
        The render job (its ``family``, default ``"A"``, names the plant family).
    soundfont_id : str
        Name and size of the soundfont.
    """
    from aria_tda_experiments.audio.corpus import RENDER_VERSION

    fam = audio_plant_family(job.get("family", "A"))
    spec = [RENDER_VERSION, hashlib.sha256(job["midi"]).hexdigest(), job["program"],
            job["tempo_scale"], job["transpose"], job["sr"], job["seconds"], job["aspect"],
            soundfont_id, sorted(fam.drum_pattern.items()), fam.drum_bpm, fam.progression,
            fam.chord_seconds, fam.program]
    if fam.name != "A":  # family A's digests are what they were before families existed
        spec += [fam.name, sorted(fam.drum_velocity.items()), fam.drum_steps_per_beat,
                 fam.drum_bar_steps]
    return hashlib.sha256(json.dumps(spec).encode()).hexdigest()[:10]


def choose_marked(train: pd.DataFrame, n_marked: int, seed: int) -> dict[str, list[str]]:
    """The marked training tracks of every aspect: disjoint sets of ``n_marked`` tracks.

    Tracks are drawn round-robin over the collections (seeded order) so every marked set
    spans the genres like the corpus, at most one track per work while works last (a marked
    set is tied by its plant, not by a shared work), and the three sets are disjoint.

    Parameters
    ----------
    train : pandas.DataFrame
        Training tracks (``track_id``, ``work_id``, ``collection``).
    n_marked : int
        Tracks per aspect.
    seed : int
        Seeds the draw.

    Returns
    -------
    dict
        Aspect -> sorted track ids.
    """
    need = n_marked * len(AUDIO_ASPECTS)
    if need > len(train):
        raise ParameterError(expected("n_marked", f"at most {len(train) // len(AUDIO_ASPECTS)} "
                                      f"with {len(train)} training tracks", n_marked))
    rng = np.random.default_rng([seed, 28, 1])
    t = train.sort_values("track_id").reset_index(drop=True)
    by_coll = {c: list(rng.permutation(g.index.to_numpy()))
               for c, g in t.groupby("collection", sort=True)}
    colls = [sorted(by_coll)[i] for i in rng.permutation(len(by_coll))]
    order: list[int] = []
    while any(by_coll.values()):
        for c in colls:
            if by_coll[c]:
                order.append(int(by_coll[c].pop(0)))
    # one track per work first, then the rest
    seen: set[str] = set()
    first = [i for i in order if not (t.at[i, "work_id"] in seen or seen.add(t.at[i, "work_id"]))]
    order = first + [i for i in order if i not in set(first)]
    chosen = order[:need]
    out = {a: sorted(t.loc[chosen[k::len(AUDIO_ASPECTS)], "track_id"].astype(str))
           for k, a in enumerate(AUDIO_ASPECTS)}
    return out
