"""What the embedded audio corpus holds: its configuration, the split by work, the versions.

Everything here is deterministic and needs neither music21 nor FluidSynth (mido only, for
:func:`make_version_midi`); :mod:`aria_tda_experiments.audio.corpus` converts the works, renders
the versions this module plans and keeps the corpus on disk.

- :class:`AudioCorpusConfig` — what corpus to build (every field is part of the cache key);
  :data:`GENRES`, :data:`DEFAULT_COLLECTIONS`, :data:`INSTRUMENT_FAMILIES`,
  :data:`TRACK_COLUMNS`.
- :func:`plan_versions` — the split by work, stratified by collection: a seeded
  ``round(test_fraction * n)`` of each collection's works (at least one and at most ``n - 1``;
  none when a collection has a single work) are *test* works. ``planted_works`` training works
  (seeded, taken round-robin over the collections) get one extra held-out version, split
  ``"planted"``: the version is not in training, its work is (clipped to the number of
  training works). Work ``w``'s versions come from ``default_rng([seed, 2, crc32(w)])``: a
  permutation of the ``INSTRUMENT_FAMILIES`` (so the versions of a work have *distinct* GM
  families), one program of each family, a tempo scale uniform in ``[tempo_min, tempo_max]``
  (3 decimals) and a transposition in ``[-max_transpose, max_transpose]`` semitones. Version
  ``k`` uses draw ``k`` whatever the other settings are, so adding works or versions never
  changes an existing version.
- :func:`make_version_midi` — one version's MIDI: every part gets its own MIDI channel
  (music21 puts all parts on one, so unisons cut each other) and the version's program; times
  are divided by ``tempo_scale``; notes are transposed (a note pushed outside 0-127 is
  dropped); a work shorter than the track is **looped** (repeated after its last note-off plus
  ``LOOP_GAP`` seconds), a longer one **cut** (its opening is kept).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from aria_tda._options import Options, option
from aria_tda.errors import DataError, ParameterError, expected

__all__ = [
    "DEFAULT_COLLECTIONS",
    "GENRES",
    "INSTRUMENT_FAMILIES",
    "TRACK_COLUMNS",
    "AudioCorpusConfig",
    "make_version_midi",
    "plan_versions",
    "version_rng",
]

SR = 24_000
TRACK_SECONDS = 30.0
LOOP_GAP = 0.5  # seconds of silence between repeats of a looped work
_TICKS_PER_SECOND = 960  # output MIDI: 480 ticks per beat at 120 bpm
#: Genre label of each music21 collection known to load and render (others: the folder name).
GENRES: dict[str, str] = {
    "bach": "chorale",
    "ryansMammoth": "fiddle tune",
    "palestrina": "renaissance mass",
    "monteverdi": "madrigal",
    "trecento": "ars nova",
    "josquin": "renaissance motet",
    "essenFolksong": "folk song",
    "oneills1850": "irish dance tune",
    "airdsAirs": "scottish air",
    "haydn": "string quartet",
    "mozart": "string quartet",
    "beethoven": "string quartet",
    "joplin": "ragtime",
}
#: Five genres whose works convert in ~0.2-2 s each (cold work cache) and render reliably.
DEFAULT_COLLECTIONS = ("bach", "ryansMammoth", "palestrina", "monteverdi", "trecento")
#: GM instrument families and the programs drawn from each (melodic, sustained enough).
INSTRUMENT_FAMILIES: dict[str, tuple[int, ...]] = {
    "piano": (0, 1, 2, 4),  # acoustic grand, bright, electric grand, e-piano
    "chromatic_percussion": (8, 11, 12, 13),  # celesta, vibraphone, marimba, xylophone
    "organ": (16, 17, 19, 21),  # drawbar, percussive, church organ, accordion
    "guitar": (24, 25, 26, 27),  # nylon, steel, jazz, clean electric
    "strings": (40, 41, 42, 46),  # violin, viola, cello, harp
    "ensemble": (48, 49, 52, 53),  # string ensembles 1-2, choir aahs, voice oohs
    "brass": (56, 57, 60, 61),  # trumpet, trombone, french horn, brass section
    "reed": (64, 65, 68, 71),  # soprano sax, alto sax, oboe, clarinet
    "pipe": (72, 73, 74, 75),  # piccolo, flute, recorder, pan flute
    "synth_lead": (80, 81, 82, 87),  # square, sawtooth, calliope, bass + lead
    "synth_pad": (88, 89, 90, 91),  # new age, warm, polysynth, choir
}
_FAMILIES = tuple(INSTRUMENT_FAMILIES)
TRACK_COLUMNS = (
    "track_id", "work_id", "version", "split", "genre", "collection", "instrument_family",
    "program", "tempo_scale", "transpose", "path", "duration",
)


def _check_collections(name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not value:
        raise ParameterError(expected(name, "a non-empty tuple of music21 folder names", value))
    out = tuple(value)
    if not all(isinstance(c, str) and c for c in out) or len(set(out)) != len(out):
        raise ParameterError(expected(name, "distinct, non-empty folder names", value))
    return out


@dataclass(frozen=True)
class AudioCorpusConfig(Options):
    """What audio corpus to build (every field is part of the cache key)."""

    collections: tuple[str, ...] = option(
        DEFAULT_COLLECTIONS, help="music21 corpus folders, one genre each (see GENRES)",
        check=_check_collections)
    works_per_collection: int = option(
        8, help="works taken from each collection (seeded order)", min_value=1)
    versions_per_work: int = option(
        3, help="versions (instrument family, tempo, key) of every work (one family each, so "
        f"at most {len(_FAMILIES)} with the planted one)", min_value=2, max_value=len(_FAMILIES))
    planted_works: int = option(
        5, help="training works that get one extra held-out (planted) version", min_value=0)
    test_fraction: float = option(
        0.25, help="fraction of each collection's works held out entirely",
        min_value=0.0, max_value=0.9, min_inclusive=False)
    tempo_min: float = option(0.85, help="lowest tempo scale of a version",
                              min_value=0.25, max_value=4.0)
    tempo_max: float = option(1.2, help="highest tempo scale of a version",
                              min_value=0.25, max_value=4.0)
    max_transpose: int = option(3, help="versions are transposed by up to this many semitones",
                                min_value=0, max_value=12)
    sr: int = option(SR, help="sample rate of the tracks in Hz", min_value=8000,
                     max_value=192_000)
    track_seconds: float = option(TRACK_SECONDS, help="length of every track in seconds",
                                  min_value=0.0, max_value=600.0, min_inclusive=False)
    seed: int = option(0, help="seeds work choice, split, planted works and versions",
                       min_value=0)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.versions_per_work + (self.planted_works > 0) > len(_FAMILIES):
            raise ParameterError(expected(
                "versions_per_work", f"at most {len(_FAMILIES) - 1} with planted works (a "
                f"planted version needs an instrument family of its own; {len(_FAMILIES)} "
                "families)", self.versions_per_work))
        if self.tempo_max < self.tempo_min:
            raise ParameterError(expected("tempo_max", f">= tempo_min={self.tempo_min}",
                                          self.tempo_max))
        n = self.track_seconds * self.sr
        if abs(n - round(n)) > 1e-6:
            raise ParameterError(expected(
                "track_seconds", f"a whole number of samples at sr={self.sr}",
                self.track_seconds))

    @property
    def n_samples(self) -> int:
        """Samples per track."""
        return round(self.track_seconds * self.sr)

    def digest(self) -> str:
        """A short digest of the configuration."""
        text = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


# --------------------------------------------------------------------------------------------
# Versions
# --------------------------------------------------------------------------------------------


def _genre(collection: str) -> str:
    return GENRES.get(collection, collection)


def version_rng(seed: int, stream: int, key: str) -> np.random.Generator:
    """An independent generator per ``(seed, stream, key)`` (the key hashed with CRC-32).

    Parameters
    ----------
    seed : int
        The corpus's seed.
    stream : int
        What the draws are for (one number per use).
    key : str
        Whose draws they are (a collection, a work).

    Returns
    -------
    numpy.random.Generator
    """
    return np.random.default_rng([seed, stream, zlib.crc32(key.encode())])


def _version_draws(work_id: str, config: AudioCorpusConfig) -> list[dict[str, Any]]:
    """One draw per instrument family (version k = draw k), independent of the other works."""
    rng = version_rng(config.seed, 2, work_id)
    n = len(_FAMILIES)
    fams = rng.permutation(n)
    picks = rng.integers(0, 1 << 16, size=n)
    tempos = rng.uniform(config.tempo_min, config.tempo_max, size=n)
    shifts = rng.integers(-config.max_transpose, config.max_transpose + 1, size=n)
    out = []
    for k in range(n):
        fam = _FAMILIES[int(fams[k])]
        progs = INSTRUMENT_FAMILIES[fam]
        out.append({"instrument_family": fam, "program": progs[int(picks[k]) % len(progs)],
                    "tempo_scale": round(float(tempos[k]), 3), "transpose": int(shifts[k])})
    return out


def plan_versions(works: pd.DataFrame, *, config: AudioCorpusConfig) -> pd.DataFrame:
    """The split and the versions of every work (deterministic for ``config.seed``).

    Parameters
    ----------
    works : pandas.DataFrame
        One row per usable work, columns ``work_id`` (unique) and ``collection``.
    config : AudioCorpusConfig
        Split sizes, version ranges and seed.

    Returns
    -------
    pandas.DataFrame
        ``TRACK_COLUMNS`` without ``path`` and ``duration``, sorted by ``work_id``, ``version``.

    Raises
    ------
    DataError
        if the split leaves no training or no test work.
    """
    if works["work_id"].duplicated().any():
        raise DataError("plan_versions: work ids are not unique")
    by_coll: dict[str, list[str]] = {}
    for wid, coll in sorted(zip(works["work_id"], works["collection"], strict=True)):
        by_coll.setdefault(str(coll), []).append(str(wid))
    split: dict[str, str] = {}
    train_by_coll: dict[str, list[str]] = {}
    for coll, ids in by_coll.items():
        n = len(ids)
        n_test = 0 if n < 2 else min(n - 1, max(1, round(config.test_fraction * n)))
        perm = version_rng(config.seed, 1, coll).permutation(n)
        for rank, i in enumerate(perm):
            split[ids[i]] = "test" if rank < n_test else "train"
        train_by_coll[coll] = [ids[i] for i in perm[n_test:]]
    n_train = sum(map(len, train_by_coll.values()))
    if n_train == 0 or n_train == len(split):
        raise DataError(f"audio corpus: {len(split)} usable works give "
                        f"{'no training' if n_train == 0 else 'no test'} work; use more works "
                        "(at least 2 in some collection)")
    # planted: round-robin over collections (in a seeded order), each in its seeded order
    order = version_rng(config.seed, 3, "").permutation(len(by_coll))
    colls = [sorted(train_by_coll)[i] for i in order]
    queue = [train_by_coll[c][r] for r in range(max(map(len, train_by_coll.values())))
             for c in colls if r < len(train_by_coll[c])]
    planted = set(queue[: config.planted_works])
    coll_of = {w: c for c, ids in by_coll.items() for w in ids}
    rows = []
    for wid in sorted(split):
        draws = _version_draws(wid, config)
        n_v = config.versions_per_work
        for k in range(n_v + (wid in planted)):
            rows.append({"track_id": f"{wid}~v{k}", "work_id": wid, "version": k,
                         "split": split[wid] if k < n_v else "planted",
                         "genre": _genre(coll_of[wid]), "collection": coll_of[wid], **draws[k]})
    return pd.DataFrame(rows, columns=list(TRACK_COLUMNS[:-2]))


def make_version_midi(
    midi: Any,
    *,
    program: int,
    tempo_scale: float = 1.0,
    transpose: int = 0,
    seconds: float | None = None,
) -> Any:
    """One version of a work as a type-0 :class:`mido.MidiFile` (see the module docstring).

    Parameters
    ----------
    midi : bytes, path or mido.MidiFile
        The work's MIDI (type 0 or 1).
    program : int
        GM program (0-127) given to every part.
    tempo_scale : float
        Playback speed factor (> 1 is faster); event times are divided by it.
    transpose : int
        Semitones added to every note (notes leaving 0-127 are dropped).
    seconds : float, optional
        Loop the work (after its last note-off plus ``LOOP_GAP``) until it lasts this long and
        drop the events after it; ``None`` plays it once.

    Returns
    -------
    mido.MidiFile
        At 120 bpm, 480 ticks per beat; a program change per channel at time 0.

    Raises
    ------
    DataError
        if the work has no notes.
    """
    import mido

    if isinstance(midi, (bytes, bytearray)):
        src = mido.MidiFile(file=io.BytesIO(bytes(midi)))
    elif isinstance(midi, mido.MidiFile):
        src = midi
    else:
        src = mido.MidiFile(os.fspath(midi))
    channels = [c for c in range(16) if c != 9]  # 9 = GM drums
    chan_of: dict[tuple[int, int], int] = {}
    remapped = mido.MidiFile(type=1, ticks_per_beat=src.ticks_per_beat)
    for ti, track in enumerate(src.tracks):
        new = mido.MidiTrack()
        for msg in track:
            if not msg.is_meta and hasattr(msg, "channel"):
                ch = chan_of.setdefault((ti, msg.channel), channels[len(chan_of) % 15])
                msg = msg.copy(channel=ch)
            new.append(msg)
        remapped.tracks.append(new)
    events: list[tuple[float, Any]] = []
    t, last_off = 0.0, -1.0
    for msg in remapped:  # mido applies the tempo map: msg.time is in seconds
        t += msg.time
        if msg.is_meta or msg.type in ("program_change", "sysex"):
            continue
        if msg.type in ("note_on", "note_off", "polytouch"):
            note = msg.note + transpose
            if not 0 <= note <= 127:
                continue
            msg = msg.copy(note=note)
            if msg.type != "polytouch":
                last_off = t / tempo_scale
        events.append((t / tempo_scale, msg))
    if last_off < 0:
        raise DataError("make_version_midi: the work has no notes")
    repeats = 1 if seconds is None else max(1, math.ceil(seconds / (last_off + LOOP_GAP)))
    out = mido.MidiFile(type=0, ticks_per_beat=_TICKS_PER_SECOND // 2)
    track = mido.MidiTrack()
    track.append(mido.MetaMessage("set_tempo", tempo=500_000, time=0))
    for ch in sorted(set(chan_of.values())):
        track.append(mido.Message("program_change", channel=ch, program=program, time=0))
    prev = 0
    for r in range(repeats):
        offset = r * (last_off + LOOP_GAP)
        for at, msg in events:
            if seconds is not None and at + offset >= seconds:
                break
            tick = round((at + offset) * _TICKS_PER_SECOND)
            track.append(msg.copy(time=tick - prev))
            prev = tick
    out.tracks.append(track)
    return out
