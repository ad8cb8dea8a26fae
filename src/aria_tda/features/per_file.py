"""Per-file extraction: what one worker (a local process, a pool worker, a Dask task) does with
one file of :func:`aria_tda.features.extract.extract_to_store`.

:func:`extract_task` runs the extractor module on one file and returns a result record —
``("ok", track_ids, features, metadata rows, n)`` or ``("error", path, track_id, message)``;
it never raises for a bad file. :func:`configure_jit_cache` points numba's cache at ARIA's
directory before any kernel compiles. The engine (:mod:`aria_tda.features.extract`), the local
pool's callers and the Dask tasks (:mod:`aria_tda.features._dask_extract`) all import them from
here, below each of them.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

__all__ = ["configure_jit_cache", "extract_task"]


def extract_task(
    task: tuple[str, str, str, dict[str, Any], dict[str, Any] | None, str],
) -> tuple[Any, ...]:
    """Worker: extract one file; never raises for a bad file (returns an error record).

    Parameters
    ----------
    task : tuple
        ``(modality, path, track_id, params, segments, module)``: ``module`` is the extractor
        module's name (imported here, so the task pickles small); ``segments`` the keyword
        arguments of its ``extract_file_segments`` (``None``: one record per file, through
        ``extract_file_record`` or ``extract_file``).

    Returns
    -------
    tuple
        ``("ok", track_ids, features, metadata rows, n)`` (a feature of one file stacked as
        one row) or ``("error", path, track_id, message)`` (the message on one line, at most
        500 characters).
    """
    modality, path, tid, params, segments, module = task
    try:
        mod = importlib.import_module(module)
        if segments:
            feats, metas = mod.extract_file_segments(path, **segments, **params)
            n = len(metas)
            ids = [f"{tid}#{m['segment']:04d}" for m in metas]
            rows = [{"source_track": tid, "source": path, **m} for m in metas]
            return ("ok", ids, {k: np.asarray(v) for k, v in feats.items()}, rows, n)
        if hasattr(mod, "extract_file_record"):
            feats, meta = mod.extract_file_record(path, **params)
        else:
            feats, meta = mod.extract_file(path, **params), {}
        meta = {"source": path, **dict(meta)}
        kinds = _registry_kinds(modality)
        stacked = {}
        for k, v in feats.items():
            kind = kinds.get(k, "vector" if _is_vector(v) else "sequence")
            stacked[k] = (
                np.asarray(v, dtype=np.float64).reshape(1, -1)
                if kind == "vector"
                else [np.asarray(v, dtype=np.int64).reshape(-1)]
            )
        return ("ok", [tid], stacked, [meta], 1)
    except Exception as exc:  # a corrupt / silent / empty file is recorded, never fatal
        msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
        return ("error", path, tid, msg)


def _registry_kinds(modality: str) -> dict[str, str]:
    from aria_tda.features.registry import MODALITIES, features

    if modality not in MODALITIES:  # no registry (embeddings): kinds are inferred
        return {}
    return {spec.name: spec.kind for spec in features(modality)}


def _is_vector(v: Any) -> bool:
    a = np.asarray(v)
    return a.dtype.kind == "f" or a.ndim == 0


def configure_jit_cache() -> None:
    """Point numba's cache at ARIA's directory (symbolic and audio kernels alike)."""
    try:
        from aria_tda.features.audio.jit import configure_numba_cache
    except ImportError:  # the audio package is absent from this installation
        return
    configure_numba_cache()
