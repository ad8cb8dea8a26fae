"""Embedding stores: what one holds, reading it, refusing to compare two encoders.

An embedding store is a feature store (:mod:`aria_tda.features.store`) of modality
``"embedding"`` with one vector feature, ``"embedding"``: the time-averaged encoder embedding
of each track (or of each segment, rows ``"<track>#<k:04d>"``). ``aria-tda embed``
(:mod:`aria_tda.embed`) writes it; its manifest's ``params["encoder"]`` identifies the encoder
(registry name, checkpoint SHA-256, layer, rate, window, dim) and ``params["segments"]``
the segmentation (``{"seconds": S}``; absent for one row per track).

This module lives in the storage layer (it imports neither torch nor an encoder) so that both
``aria-tda retrieve`` (:mod:`aria_tda.embed.retrieval`) and a study naming embedding stores
directly (:mod:`aria_tda.study`) use one implementation:

- :func:`embedding_info` — what a store holds, from its manifest alone (no Parquet read);
- :func:`check_comparable` — training and query stores must come from the same encoder;
- :func:`read_embeddings` — track ids, embeddings and metadata.

Their cosine score matrix is :func:`aria_tda.embed.retrieval.write_cosine_scores`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._paths import input_path
from aria_tda.errors import DataError, FileFormatError

__all__ = [
    "EMBEDDING_FEATURE",
    "ENCODER_KEYS",
    "check_comparable",
    "embedding_info",
    "read_embeddings",
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
    from aria_tda._steps import file_fingerprint
    from aria_tda.features.store_format import read_manifest
    from aria_tda.manifest import manifest_path

    p = Path(path)
    mpath = manifest_path(p)
    input_path(p, name, missing="no such embedding store")  # a FIFO: refused, never opened
    if not mpath.is_file():
        raise FileFormatError(f"{name}: {str(p)!r} has no manifest; not an embedding store")
    man = read_manifest(mpath)
    if man.get("modality") != "embedding":
        raise DataError(
            f"{name}: expected an embedding store (written by 'aria-tda embed'), got a "
            f"{man.get('modality')} feature store ({str(p)!r})"
        )
    params = man.get("params") or {}
    for key in ("encoder", "segments"):
        if not isinstance(params.get(key) or {}, dict):
            raise FileFormatError(
                f"{name}: malformed manifest {str(mpath)!r}: expected params[{key!r}] to be an "
                f"object, got {params[key]!r:.80}"
            )
    enc = dict(params.get("encoder") or {})
    spec = (man.get("features") or {}).get(EMBEDDING_FEATURE) or {}
    return {
        "path": str(p),
        "encoder": enc,
        "label": str(enc.get("encoder", "embedding")),
        "dim": int(spec.get("dim", enc.get("dim", 0)) or 0),
        "n_tracks": int(man.get("n_tracks", 0)),
        "segment_seconds": (params.get("segments") or {}).get("seconds"),
        "digest": file_fingerprint(p)["digest"],
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
