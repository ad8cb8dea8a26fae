"""Symbolic features of the benchmark's token windows → an ARIA feature store.

Each training window is decoded to notes on its own (:func:`aria_tda_experiments.tokenizer.decode`,
with the loudness in effect where the window starts), its length is the sum of its TIME_SHIFTs, and
the 12 paper features (five channels) come from :mod:`aria_tda.features.symbolic` — the same path
as any decoded model segment. The store is segment-level: track ids are the corpus
``segment_id`` values in training-row order, so ``S_track = S_seg`` with no aggregation.

Media (``media_dir``, :mod:`aria_tda_experiments.demo_media`): the store's metadata names each
window's MIDI file in ``source`` — its work's token stream decoded, with the window's
``start``/``end`` seconds in it (``media="work"``, the windows of the corpus as cut), or the
window's own tokens decoded, the whole file: ``start`` 0, ``end`` its last note's end
(``media="window"``, windows re-cut or changed after the corpus, such as the planted demo's,
whose ``start_time``/``end_time`` are seconds in the work, not in that file).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aria_tda.errors import ParameterError, expected
from aria_tda_experiments import tokenizer as tk
from aria_tda_experiments.corpus import Corpus

__all__ = ["build_feature_store", "window_durations", "window_features"]

STORE_METADATA = ("work_id", "collection", "composer", "title", "key", "mode", "meter",
                  "start_token", "start_time", "end_time", "n_note_on")


def window_durations(tokens: np.ndarray) -> np.ndarray:
    """Seconds spanned by each window: the sum of its TIME_SHIFTs, shape ``(n,)``.

    Parameters
    ----------
    tokens : np.ndarray [shape=(n, L)]
        Token windows.
    """
    t = np.asarray(tokens)
    shifts = np.where((t >= tk.TIME_SHIFT) & (t < tk.SET_VELOCITY), t - tk.TIME_SHIFT + 1, 0)
    return shifts.sum(axis=-1) / tk.STEPS_PER_SECOND


def _extract(notes: Sequence[list[tk.Note]], durations: np.ndarray, params: Mapping[str, Any]
             ) -> dict[str, np.ndarray]:
    """The one call into the feature module (kept here so its API is used in one place)."""
    from aria_tda.features.symbolic import symbolic_features_batch

    return symbolic_features_batch(list(notes), durations=durations, **dict(params))


def window_features(
    tokens: np.ndarray,
    *,
    start_velocities: Sequence[int] | np.ndarray | None = None,
    params: Mapping[str, Any] | None = None,
) -> dict[str, np.ndarray]:
    """The symbolic features of each token window (every registry feature, pattern ones too).

    Parameters
    ----------
    tokens : np.ndarray [shape=(n, L)], int
    start_velocities : array [shape=(n,)], optional
        Velocity in effect at each window's start (``start_velocity`` in the corpus/query
        metadata); default ``tokenizer.DEFAULT_VELOCITY``.
    params : mapping, optional
        :class:`aria_tda.features.symbolic.SymbolicParams` fields (default: paper form).

    Returns
    -------
    dict of str to np.ndarray [shape=(n, dim)]
    """
    toks = np.asarray(tokens)
    if toks.ndim != 2:
        raise ParameterError(expected("tokens", "a 2-D array (n, L)", toks.shape))
    vel = (np.full(toks.shape[0], tk.DEFAULT_VELOCITY) if start_velocities is None
           else np.asarray(start_velocities, dtype=np.int64))
    if vel.shape != (toks.shape[0],):
        raise ParameterError(expected("start_velocities", f"{toks.shape[0]} values", vel.shape))
    notes = [tk.decode(row, initial_velocity=int(v)) for row, v in zip(toks, vel, strict=True)]
    return _extract(notes, window_durations(toks), params or {})


def _media_columns(corpus: Corpus, media_dir: Path, media: str) -> dict[str, list[Any]]:
    """``source`` (and ``start``/``end`` for ``media="work"``) per training window."""
    from aria_tda_experiments.demo_media import write_token_midis, write_work_midis

    tm = corpus.train_meta
    if media == "window":
        vel = tm["start_velocity"].to_numpy()
        paths = write_token_midis(corpus.train_tokens, tm["segment_id"].tolist(), media_dir,
                                  start_velocities=vel)
        # the window is the whole file: 0 to its last note's end (stated, so that no reader
        # takes the corpus' start_time/end_time, seconds in the work, for a window of it)
        ends = [max((n.end for n in tk.decode(t, initial_velocity=int(v))), default=np.nan)
                for t, v in zip(corpus.train_tokens, vel, strict=True)]
        return {"source": [str(p) for p in paths], "start": [0.0] * len(paths), "end": ends}
    files = write_work_midis(corpus, tm["work_id"], media_dir)
    return {"source": [str(files[str(w)]) for w in tm["work_id"]],
            "start": tm["start_time"].astype(float).tolist(),
            "end": tm["end_time"].astype(float).tolist()}


def build_feature_store(
    corpus: Corpus,
    path: str | os.PathLike[str],
    *,
    params: Mapping[str, Any] | None = None,
    media_dir: str | os.PathLike[str] | None = None,
    media: str = "work",
) -> Path:
    """Write the segment-level symbolic feature store of ``corpus``'s training windows.

    Track ids = ``corpus.train_meta.segment_id`` (training-row order); metadata per track:
    ``STORE_METADATA`` columns (work, collection, composer, title, position). Returns ``path``.

    Parameters
    ----------
    corpus : Corpus
        The benchmark corpus (its training windows are the store's tracks).
    path : path
        Where to write the feature store.
    params : mapping, optional
        Keyword arguments of the symbolic feature extractor.
    media_dir : path, optional
        Write each window's MIDI here and name it in the metadata (module docstring): columns
        ``source`` (absolute path) and ``start``/``end`` (seconds in it; with
        ``media="window"`` 0 and the file's end).
    media : {"work", "window"}
        One MIDI per work with each window's span in it, or one MIDI per window.
    """
    from aria_tda._checks import check_choice
    from aria_tda.features.store import write_store

    media = check_choice("media", media, ("work", "window"))
    feats = window_features(corpus.train_tokens,
                            start_velocities=corpus.train_meta["start_velocity"], params=params)
    meta = corpus.train_meta.set_index("segment_id")[list(STORE_METADATA)]
    meta.index.name = "track_id"
    if media_dir is not None:
        meta = meta.assign(**_media_columns(corpus, Path(media_dir), media))
    store_params = {
        "source": "aria_tda_experiments",
        "level": "segment",
        "corpus": str(corpus.path),
        "window": int(corpus.config.window),
        "symbolic": dict(params or {}),
    }
    return Path(
        write_store(
            path,
            modality="symbolic",
            track_ids=corpus.train_ids.tolist(),
            features=feats,
            metadata=pd.DataFrame(meta),
            params=store_params,
        )
    )


def build_query_store(tokens: np.ndarray, query_ids: Sequence[str],
                      path: str | os.PathLike[str]) -> Path:
    """Write the queries' own feature store, extracted as the training windows' are.

    It anchors the distinctive reading on each query and says how like the query each
    attributed item is (the study's ``query_features``). One track per query, named by its id.

    Parameters
    ----------
    tokens : np.ndarray [shape=(T, L)]
        The queries' tokens (prompt and continuation).
    query_ids : sequence of str
        One id per row (the queries table's ``query_id``).
    path : path
        Where to write the store.
    """
    from aria_tda.features.store import write_store

    write_store(path, modality="symbolic", track_ids=list(query_ids),
                features=window_features(tokens),
                params={"source": "aria_tda_experiments", "level": "query"})
    return Path(path)
