"""A hand-built user study for the media tests (what a user of their own study already has).

Two MIDI files (one with a tempo change), one WAV rendered from MIDI with FluidSynth, a feature
store whose metadata names each track's ``source`` (absolute and relative paths, one missing
file, a window in seconds and one in ticks), a segment map with windows in seconds and in ticks,
a queries file with a ``media`` column (one file missing) and a ``results.json`` naming them, as
``aria-tda run`` writes it.
"""

from __future__ import annotations

from pathlib import Path

import mido
import numpy as np
import pandas as pd

from aria_tda.features.audio.render import midi_from_notes, render_file
from aria_tda.features.store import write_store
from aria_tda.results import write_results_meta

TPQ = 480


def small_soundfont() -> str | None:
    """pretty_midi's small GM soundfont (fast to load), else None (the default is used)."""
    import importlib.util

    spec = importlib.util.find_spec("pretty_midi")
    if spec is None or not spec.origin:
        return None
    p = Path(spec.origin).parent / "TimGM6mb.sf2"
    return str(p) if p.is_file() else None


def tempo_change_midi(path: Path) -> Path:
    """4 beats at 120 bpm then 60 bpm; a C-major scale of quarter notes on channel 0
    (program 40, violin, from beat 2) and a held bass note on channel 1."""
    mid = mido.MidiFile(type=1, ticks_per_beat=TPQ)
    conductor = mido.MidiTrack()
    conductor.append(mido.MetaMessage("set_tempo", tempo=500_000, time=0))
    conductor.append(mido.MetaMessage("set_tempo", tempo=1_000_000, time=4 * TPQ))
    mid.tracks.append(conductor)
    events = [(0, mido.Message("program_change", channel=0, program=0)),
              (2 * TPQ, mido.Message("program_change", channel=0, program=40)),
              (0, mido.Message("control_change", channel=0, control=7, value=100))]
    for i, pitch in enumerate((60, 62, 64, 65, 67, 69, 71, 72)):
        events.append((i * TPQ, mido.Message("note_on", channel=0, note=pitch, velocity=90)))
        events.append(((i + 1) * TPQ, mido.Message("note_off", channel=0, note=pitch)))
    events.append((0, mido.Message("program_change", channel=1, program=32)))
    events.append((TPQ, mido.Message("note_on", channel=1, note=36, velocity=70)))
    events.append((7 * TPQ, mido.Message("note_off", channel=1, note=36)))
    events.sort(key=lambda e: (e[0], e[1].type != "note_off"))
    track, last = mido.MidiTrack(), 0
    for tick, msg in events:
        track.append(msg.copy(time=tick - last))
        last = tick
    mid.tracks.append(track)
    mid.save(path)
    return path


def make_user_study(root: Path) -> dict[str, Path]:
    """Write the hand-built study of the module docstring under ``root``; return its paths."""
    corpus = root / "corpus"
    corpus.mkdir()
    tempo = tempo_change_midi(corpus / "tempo.mid")
    plain = corpus / "plain.mid"
    midi_from_notes([(b * 0.5, 0.5, 48 + (b * 5) % 24, 80) for b in range(16)],
                    bpm=120).save(plain)
    wav = render_file(plain, corpus / "plain.wav", sr=22050, soundfont=small_soundfont(),
                      duration=8.0)
    ids = ["t-tempo", "t-plain", "t-wav", "t-gone", "t-blank"]
    meta = pd.DataFrame({
        "track_id": ids,
        "source": [str(tempo), "corpus/plain.mid", str(wav), str(corpus / "gone.wav"), ""],
        "start": [None, 1.0, None, None, None],
        "end": [None, 3.0, None, None, None],
        "start_tick": [2 * TPQ, None, None, None, None],
        "end_tick": [6 * TPQ, None, None, None, None],
        "genre": ["a", "b", "a", "b", "a"],
    })
    store = write_store(root / "store", modality="symbolic", track_ids=ids,
                        features={"f": np.zeros((len(ids), 2))}, metadata=meta)
    segments = pd.DataFrame({
        "segment_id": ["t-wav#0", "t-wav#1", "t-tempo#0", "t-tempo#1", "t-zzz#0"],
        "track_id": ["t-wav", "t-wav", "t-tempo", "t-tempo", "t-zzz"],
        "start": ["0", "2.5", "", "", "0"],
        "end": ["2.5", "5", "", "", "1"],
        "start_tick": ["", "", str(TPQ), str(5 * TPQ), ""],
        "end_tick": ["", "", str(3 * TPQ), str(7 * TPQ), ""],
    })
    seg_path = root / "segments.csv"
    segments.to_csv(seg_path, index=False)
    qdir = root / "queries"
    qdir.mkdir()
    (qdir / "gen").mkdir()
    midi_from_notes([(b, 1.0, 60 + b, 100) for b in range(6)]).save(qdir / "gen" / "q0.mid")
    render_file(qdir / "gen" / "q0.mid", qdir / "gen" / "q1.wav", sr=22050,
                soundfont=small_soundfont())
    queries = pd.DataFrame({
        "query": [0, 1, 2, 3],
        "query_id": ["q0", "q1", "q2", "q3"],
        "media": ["gen/q0.mid", "gen/q1.wav", "gen/q2-missing.mid", ""],
        "start": ["", "0.5", "", ""],
        "end": ["", "2.0", "", ""],
    })
    qpath = qdir / "queries.csv"
    queries.to_csv(qpath, index=False)
    results = root / "results"
    results.mkdir()
    write_results_meta(results, {
        "study": {"name": "user", "modality": "symbolic", "feature_store": str(store),
                  "queries": str(qpath)},
        "settings": [{"name": "seg", "method": "TRAK", "stage": "-", "segments": str(seg_path)},
                     {"name": "plain", "method": "TRAK", "stage": "-", "segments": None}],
    })
    return {"results": results, "store": store, "segments": seg_path, "queries": qpath,
            "tempo": tempo, "plain": plain, "wav": wav, "corpus": corpus, "qdir": qdir}
