"""Helpers that write small MIDI files with mido for the feature tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mido
import numpy as np


def on(tick: int, pitch: int, vel: int = 100, ch: int = 0) -> tuple[int, Any]:
    return tick, mido.Message("note_on", channel=ch, note=pitch, velocity=vel)


def off(tick: int, pitch: int, ch: int = 0, *, zero_on: bool = False) -> tuple[int, Any]:
    if zero_on:
        return tick, mido.Message("note_on", channel=ch, note=pitch, velocity=0)
    return tick, mido.Message("note_off", channel=ch, note=pitch, velocity=64)


def cc7(tick: int, value: int, ch: int = 0) -> tuple[int, Any]:
    return tick, mido.Message("control_change", channel=ch, control=7, value=value)


def tempo(tick: int, mpq: int) -> tuple[int, Any]:
    return tick, mido.MetaMessage("set_tempo", tempo=mpq)


def note(start: int, end: int, pitch: int, vel: int = 100, ch: int = 0) -> list[tuple[int, Any]]:
    return [on(start, pitch, vel, ch), off(end, pitch, ch)]


def make_midi(
    tracks: Sequence[Sequence[tuple[int, Any]]], *, tpq: int = 96, end: Sequence[int] | None = None
) -> mido.MidiFile:
    """A type-1 file; each track is a list of (absolute tick, message) in the order given
    (stable-sorted by tick). ``end[i]`` places track i's End of Track (default: last event)."""
    mid = mido.MidiFile(type=1, ticks_per_beat=tpq)
    for i, events in enumerate(tracks):
        tr = mido.MidiTrack()
        last = 0
        for tick, msg in sorted(events, key=lambda e: e[0]):
            tr.append(msg.copy(time=tick - last))
            last = tick
        eot = last if end is None else max(last, end[i])
        tr.append(mido.MetaMessage("end_of_track", time=eot - last))
        mid.tracks.append(tr)
    return mid


def save(mid: mido.MidiFile, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    mid.save(str(path))
    return path


def reload(mid: mido.MidiFile, tmp_path: Path, name: str = "x.mid") -> Path:
    """Save and return the path (what a user would hand ARIA)."""
    return save(mid, tmp_path / name)


def random_midi(
    rng: np.random.Generator,
    *,
    tpq: int,
    n_tracks: int = 3,
    n_events: int = 60,
    span_quarters: int = 8,
) -> mido.MidiFile:
    """Adversarial random file: overlapping same-key notes, Note Off on other channels and
    tracks, velocity-0 Note Ons, CC7 and tempo changes in any track, drums."""
    tracks = []
    for _ in range(n_tracks):
        events = []
        for _ in range(n_events):
            t = int(rng.integers(0, span_quarters * tpq))
            ch = int(rng.choice([0, 1, 9]))
            p = int(rng.integers(55, 70))
            u = rng.random()
            if u < 0.45:
                events.append(on(t, p, int(rng.integers(1, 128)), ch))
            elif u < 0.7:
                events.append(off(t, p, ch))
            elif u < 0.9:
                events.append(off(t, p, ch, zero_on=True))
            elif u < 0.95:
                events.append(cc7(t, int(rng.integers(0, 128)), ch))
            else:
                events.append(tempo(t, int(rng.integers(300_000, 900_000))))
        tracks.append(events)
    return make_midi(tracks, tpq=tpq)
