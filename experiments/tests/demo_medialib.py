"""Checks of the demos' media shared by the end-to-end demo tests (symbolic, audio, planted):
each query's file and each training item's source exist, are real MIDI/audio and hold their
windows; and the library's resolver (:mod:`aria_tda.media.sources`) finds them playable."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

TOL = 1e-3  # one MIDI tick (1 ms) of the demos' files


def midi_seconds(path: str | Path) -> float:
    """Length of a MIDI file in seconds (mido opens it: a real Standard MIDI File)."""
    import mido

    return float(mido.MidiFile(str(path)).length)


def audio_seconds(path: str | Path) -> float:
    """Length of an audio file in seconds (soundfile reads it)."""
    import soundfile as sf

    info = sf.info(str(path))
    return float(info.frames) / float(info.samplerate)


def media_seconds(path: str | Path) -> float:
    p = Path(path)
    assert p.is_file(), p
    if p.suffix.lower() in (".mid", ".midi"):
        return midi_seconds(p)
    return audio_seconds(p)


def check_queries_media(queries_csv: Path) -> pd.DataFrame:
    """Every query names a real media file (relative to the queries file) of positive length,
    and any ``start``/``end`` window lies within it. Returns the table, ``file`` resolved."""
    q = pd.read_csv(queries_csv, keep_default_na=False)
    assert "media" in q.columns and len(q)
    files = [(queries_csv.parent / m).resolve() for m in q["media"]]
    assert all(not Path(m).is_absolute() for m in q["media"])
    lengths = [media_seconds(f) for f in files]
    assert min(lengths) > 0
    if "start" in q.columns:
        start, end = q["start"].astype(float), q["end"].astype(float)
        assert (start >= 0).all() and (start < end).all()
        assert (end <= np.asarray(lengths) + TOL).all()
    return q.assign(file=files)


def check_store_sources(store: Path, *, windows: str) -> pd.DataFrame:
    """Every training item of the feature store names an existing file (absolute path) of
    positive length, and its window: ``"within"`` — ``start``/``end`` lie within the file;
    ``"whole"`` — they span the whole file (0 to its length); ``"none"`` — no window columns."""
    from aria_tda.features.store import FeatureStore

    meta = FeatureStore.open(store).metadata
    assert "source" in meta.columns and meta["source"].map(lambda s: Path(s).is_absolute()).all()
    length = {s: media_seconds(s) for s in meta["source"].unique()}
    assert min(length.values()) > 0
    file_length = meta["source"].map(length)
    if windows == "none":
        assert not {"start", "end"} & set(meta.columns)
        return meta
    start, end = meta["start"].astype(float), meta["end"].astype(float)
    assert (start >= 0).all() and (start < end).all()
    if windows == "within":
        assert (end <= file_length + TOL).all()
    else:
        assert (start == 0).all() and np.allclose(end, file_length, atol=TOL)
    return meta


def check_resolves(results: Path, item_ids: list[str], *, setting: str | None = None) -> None:
    """The library's media resolver finds every query and the given training items playable
    (skipped while :mod:`aria_tda.media.sources` does not exist yet)."""
    try:
        from aria_tda.media.sources import resolve_media
    except ImportError:
        return
    index = resolve_media(results, setting=setting)
    queries = pd.read_csv(results / "queries.csv", keep_default_na=False)
    ids = (queries["query_id"].astype(str).tolist() if "query_id" in queries.columns
           else list(range(len(queries))))
    for qid in ids:
        ref = index.query(qid)
        assert ref.missing is None and ref.path is not None and ref.path.is_file(), ref
    for item in item_ids:
        ref = index.train(str(item))
        assert ref.missing is None and ref.path is not None and ref.path.is_file(), ref
        if ref.start is not None:
            assert ref.end is not None and 0 <= ref.start < ref.end


def top_items(results: Path, setting: str, n: int = 3) -> list[str]:
    """The ``n`` highest-scored training items of the first query under ``setting``."""
    from aria_tda.results import read_results_meta
    from aria_tda.scores import open_scores

    meta = read_results_meta(results)
    spec = next(s for s in meta["settings"] if s["name"] == setting)
    src = open_scores(Path(results) / spec["scores"])  # recorded relative to the results folder
    col = src.to_numpy()[:, 0]
    return [str(src.row_ids[i]) for i in np.argsort(-col)[:n]]
