"""A hand-built user study with real media, for the listening-room tests.

What a user of their own study has: MIDI files (made with mido) and audio files rendered from
them with FluidSynth, a feature store whose metadata names each track's file (``source``) and
window (``start``/``end`` seconds), a queries file with a ``media`` column, two settings (one
query-dependent, one collapsed). The study runs with the library API (:func:`run_study`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

N_TRACKS, N_QUERIES = 24, 6
#: track ids: plain ones and one hostile id (markup must stay text)
HOSTILE = "t<script>alert(1)</script>"

_PROGRESSIONS = (  # root motions that differ per cluster (C major key)
    (60, 65, 67, 60),
    (57, 62, 64, 57),
    (60, 67, 69, 65),
    (62, 67, 60, 65),
)


def _track_ids() -> list[str]:
    ids = [f"t{i:03d}" for i in range(N_TRACKS)]
    ids[5] = HOSTILE
    return ids


def _phrase(cluster: int, seed: int):
    """A 4-bar phrase: block chords of the cluster's progression and a small melody."""
    from aria_tda.features.audio.render import Note, midi_from_notes

    rng = np.random.default_rng(seed)
    notes = []
    for bar, root in enumerate(_PROGRESSIONS[cluster]):
        for iv in (0, 4, 7):
            notes.append(Note(4.0 * bar, 3.8, root - 12 + iv, 70))
        for beat in range(4):
            notes.append(Note(4.0 * bar + beat, 0.9, root + 12 + int(rng.choice([0, 2, 4, 7])),
                              int(rng.integers(70, 110))))
    return midi_from_notes(notes, bpm=120.0)


def make_user_study(root: Path, *, audio_tracks=(1, 2, 6), missing_track=3, queries_audio=(1,),
                    missing_query=2) -> Path:
    """Write the study under ``root`` and run it; return the results folder."""
    import pandas as pd
    import soundfile as sf

    from aria_tda.features.audio.render import render_midi
    from aria_tda.features.registry import features as registry_features
    from aria_tda.features.store import write_store
    from aria_tda.scores import save_scores
    from aria_tda.study import run_study

    rng = np.random.default_rng(7)
    media = root / "media"
    media.mkdir(parents=True)
    ids = _track_ids()
    cluster = np.arange(N_TRACKS) % 4
    sources = []
    for i in range(N_TRACKS):
        mid = _phrase(int(cluster[i]), seed=i)
        path = media / f"train_{i:03d}.mid"
        mid.save(str(path))
        if i in audio_tracks:
            wav = media / f"train_{i:03d}.wav"
            sf.write(str(wav), render_midi(str(path), sr=22050), 22050)
            path = wav
        if i == missing_track:
            path = media / "gone" / f"train_{i:03d}.mid"
        sources.append(str(path.relative_to(root)) if i % 2 else str(path))
    qmedia = []
    for q in range(N_QUERIES):
        mid = _phrase(q % 4, seed=100 + q)
        path = media / f"query_{q}.mid"
        mid.save(str(path))
        if q in queries_audio:
            wav = media / f"query_{q}.wav"
            sf.write(str(wav), render_midi(str(path), sr=22050), 22050)
            path = wav
        if q == missing_query:
            path = media / f"query_{q}_missing.mid"
        qmedia.append(str(path.relative_to(root)))

    feats = {}
    for spec in registry_features("symbolic", feature_set="paper"):
        x = rng.normal(size=(N_TRACKS, spec.dim))
        if spec.channel == "harmony":
            centers = rng.normal(scale=4.0, size=(4, spec.dim))
            x = centers[cluster] + 0.3 * x
        feats[spec.name] = x
    extra = np.random.default_rng(7)  # the pattern features: their own draws, the rest as is
    for spec in registry_features("symbolic"):
        if spec.name not in feats:
            feats[spec.name] = extra.normal(size=(N_TRACKS, spec.dim))
    meta = pd.DataFrame({
        "track_id": ids,
        "title": [f"piece {i}" for i in range(N_TRACKS)],
        "source": sources,
        "start": [2.0 if i % 3 == 0 else np.nan for i in range(N_TRACKS)],
        "end": [6.0 if i % 3 == 0 else np.nan for i in range(N_TRACKS)],
    })
    write_store(root / "store", modality="symbolic", track_ids=ids, features=feats,
                metadata=meta)
    target = np.arange(N_QUERIES) % 4
    good = (cluster[:, None] == target[None, :]).astype(float) * 3.0
    good += rng.normal(size=good.shape)
    save_scores(good.astype(np.float32), root / "good.npy", method="planted")
    u = rng.normal(size=N_TRACKS)
    flat = np.outer(u, 1.0 + 0.01 * rng.normal(size=N_QUERIES))
    save_scores(flat.astype(np.float32), root / "flat.npy", method="flat")
    pd.DataFrame({"segment": np.arange(N_TRACKS), "track_id": ids}).to_csv(
        root / "segments.csv", index=False)
    pd.DataFrame({
        "query": np.arange(N_QUERIES),
        "query_id": [f"gen{q:02d}" for q in range(N_QUERIES)],
        "label": [f"generated <b>{q}</b>" for q in range(N_QUERIES)],
        "media": qmedia,
    }).to_csv(root / "queries.csv", index=False)
    (root / "study.toml").write_text(
        """
name = "listening room test"
modality = "symbolic"
feature_store = "store"
output = "results"
K = [3, 5]
K_report = 5
B = 20
seed = 1
n_bootstrap = 20
queries = "queries.csv"
report = false

[[setting]]
method = "Planted"
scores = "good.npy"
segments = "segments.csv"
normalize = "zscore"

[[setting]]
method = "Flat"
scores = "flat.npy"
segments = "segments.csv"
normalize = "zscore"
"""
    )
    return run_study(root / "study.toml", quiet=True, progress=False)
