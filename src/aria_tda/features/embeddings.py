"""Embedding stores: reading them, refusing to compare two encoders, their cosine score matrix.

An embedding store is a feature store (:mod:`aria_tda.features.store`) of modality
``"embedding"`` with one vector feature, ``"embedding"``: the time-averaged encoder embedding
of each track (or of each segment, rows ``"<track>#<k:04d>"``). ``aria-tda embed``
(:mod:`aria_tda.embed`) writes it; its manifest's ``params["encoder"]`` identifies the encoder
(registry name, checkpoint SHA-256, layer, rate, window, dim) and ``params["segments"]``
the segmentation (``{"seconds": S}``; absent for one row per track).

This module lives in the storage layer so that both ``aria-tda retrieve`` (:mod:`aria_tda.embed`)
and a study naming embedding stores directly (:mod:`aria_tda.study`) use one implementation:

- :func:`embedding_info` — what a store holds, from its manifest alone (no Parquet read);
- :func:`check_comparable` — training and query stores must come from the same encoder;
- :func:`write_cosine_scores` — the track-level cosine score matrix (training tracks ×
  queries, Eq. emb) through the streaming kernel :func:`aria_tda.scores.retrieval.cosine_scores`
  into ARIA's score format, with a manifest naming both stores, their encoder and the ids.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import DataError, FileFormatError

__all__ = [
    "EMBEDDING_FEATURE",
    "ENCODER_KEYS",
    "check_comparable",
    "embedding_info",
    "queries_table_path",
    "read_embeddings",
    "write_cosine_scores",
]

#: the one vector feature of an embedding store
EMBEDDING_FEATURE = "embedding"
#: the encoder fields that must agree for two stores to be compared
ENCODER_KEYS = ("encoder", "weights_sha256", "layer", "sample_rate", "window_seconds", "dim")


def embedding_info(path: str | os.PathLike[str], *, name: str = "embeddings") -> dict[str, Any]:
    """What an embedding store holds, read from its manifest only.

    Parameters
    ----------
    path : path
        An embedding store (written by ``aria-tda embed``).
    name : str
        How errors name the store (a parameter or study key).

    Returns
    -------
    dict
        ``path``, ``encoder`` (the manifest's encoder record), ``label`` (the encoder's
        registry name), ``dim``, ``n_tracks``, ``segment_seconds``, ``digest`` (a
        fingerprint that changes whenever the store does).
    """
    from aria_tda._stages import file_fingerprint
    from aria_tda.features.store import _read_manifest
    from aria_tda.manifest import manifest_path

    p = Path(path)
    mpath = manifest_path(p)
    if not p.exists():
        raise FileFormatError(f"{name}: no such embedding store: {str(p)!r}")
    if not mpath.is_file():
        raise FileFormatError(f"{name}: {str(p)!r} has no manifest; not an embedding store")
    man = _read_manifest(mpath)
    if man.get("modality") != "embedding":
        raise DataError(
            f"{name}: expected an embedding store (written by 'aria-tda embed'), got a "
            f"{man.get('modality')} feature store ({str(p)!r})"
        )
    params = man.get("params") or {}
    enc = dict(params.get("encoder") or {})
    spec = (man.get("features") or {}).get(EMBEDDING_FEATURE) or {}
    return {
        "path": str(p),
        "encoder": enc,
        "label": str(enc.get("encoder", "embedding")),
        "dim": int(spec.get("dim", enc.get("dim", 0)) or 0),
        "n_tracks": int(man.get("n_tracks", 0)),
        "segment_seconds": (params.get("segments") or {}).get("seconds"),
        "digest": file_fingerprint(p)["digest" if p.is_dir() else "mtime_ns"],
    }


def check_comparable(train: dict[str, Any], queries: dict[str, Any]) -> None:
    """Refuse to score two embedding stores made by different encoders (or dimensions).

    Parameters
    ----------
    train, queries : dict
        :func:`embedding_info` of the two stores.

    Raises
    ------
    DataError
        naming each differing encoder field with both values.
    """
    diffs = [
        f"{k}: {train['encoder'].get(k)!r} vs {queries['encoder'].get(k)!r}"
        for k in ENCODER_KEYS
        if train["encoder"].get(k) != queries["encoder"].get(k)
    ]
    if train["dim"] != queries["dim"] and not any(d.startswith("dim:") for d in diffs):
        diffs.append(f"dim: {train['dim']} vs {queries['dim']}")
    if diffs:
        raise DataError(
            f"queries: the training embeddings ({train['path']!r}) and the query embeddings "
            f"({queries['path']!r}) come from different encoders; cosine scores across "
            "encoders mean nothing (" + "; ".join(diffs) + ")"
        )
    if train["n_tracks"] < 1 or queries["n_tracks"] < 1:
        empty = train if train["n_tracks"] < 1 else queries
        raise DataError(f"embeddings: the store {empty['path']!r} holds no embeddings")


def read_embeddings(path: str | os.PathLike[str]) -> tuple[np.ndarray, np.ndarray, Any]:
    """Track ids, float32 embeddings ``(n, dim)`` and metadata of an embedding store.

    Parameters
    ----------
    path : path
        An embedding store.
    """
    from aria_tda.features.store import FeatureStore

    store = FeatureStore.open(path)
    x = store.vectors(EMBEDDING_FEATURE).astype(np.float32)
    return np.asarray(store.track_ids).astype(str), x, store.metadata


def write_cosine_scores(
    train: str | os.PathLike[str],
    queries: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    block_rows: int | None = None,
    progress: bool | None = None,
    method: str | None = None,
) -> Path:
    """The cosine score matrix of two embedding stores, written as a track-level score file.

    Rows are the training store's tracks (their ids are the matrix's row ids), columns the
    query store's tracks in store order. Besides the matrix (``.npy`` or ``.zarr``,
    :mod:`aria_tda.scores.writers`, kind ``"track_scores"``) a queries table
    ``OUT.queries.csv`` (column ``query`` = column index, ``track_id``, the query store's
    metadata) is written for a study's ``queries = ...``.

    Parameters
    ----------
    train, queries : path
        Embedding stores of the training tracks and of the queries (same encoder).
    out : path
        ``.npy`` or ``.zarr``.
    block_rows : int, optional
        Training rows per streamed block (:func:`aria_tda.scores.retrieval.cosine_scores`).
    progress : bool, optional
        Progress bar.
    method : str, optional
        Method label in the manifest (default: the encoder's registry name).

    Returns
    -------
    pathlib.Path
        ``out``.
    """
    import pandas as pd

    from aria_tda._io import atomic_path
    from aria_tda.scores.retrieval import cosine_scores
    from aria_tda.scores.writers import ScoreWriter, check_output_path

    t_info = embedding_info(train, name="train")
    q_info = embedding_info(queries, name="queries")
    check_comparable(t_info, q_info)
    out_path = check_output_path("out", out)
    t_ids, a, _ = read_embeddings(train)
    q_ids, b, q_meta = read_embeddings(queries)
    label = method or t_info["label"]

    def store_record(info: dict[str, Any]) -> dict[str, Any]:
        return {k: info[k] for k in ("path", "n_tracks", "segment_seconds", "digest")}

    with ScoreWriter(
        out_path,
        shape=(a.shape[0], b.shape[0]),
        dtype=np.float32,
        kind="track_scores",
        row_ids=t_ids,
        method=label,
        stage="-",
        parameters={"score": "cosine", "encoder": t_info["encoder"]},
        seed=None,
        train_embeddings=store_record(t_info),
        query_embeddings=store_record(q_info),
        query_ids=q_ids.tolist(),
    ) as writer:
        cosine_scores(a, b, block_rows=block_rows, out=writer, train_ids=t_ids,
                      query_ids=q_ids, progress=progress)
    table = q_meta.reset_index(drop=True) if q_meta is not None else None
    frame = pd.DataFrame({"query": np.arange(len(q_ids)), "track_id": q_ids})
    if table is not None and len(table) == len(q_ids):
        extra = table.drop(columns=[c for c in table.columns if c in frame.columns])
        frame = pd.concat([frame, extra], axis=1)
    with atomic_path(queries_table_path(out_path)) as tmp:
        frame.to_csv(tmp, index=False)
    return out_path


def queries_table_path(out: str | os.PathLike[str]) -> Path:
    """Where :func:`write_cosine_scores` puts the queries table of ``out``: ``OUT.queries.csv``.

    Parameters
    ----------
    out : path
        The score matrix.
    """
    p = Path(out)
    return p.with_name(p.name + ".queries.csv")
