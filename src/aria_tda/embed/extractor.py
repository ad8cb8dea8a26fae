"""The per-file extractor that ``aria-tda embed`` plugs into the extraction engine.

:func:`aria_tda.features.extract.extract_to_store` imports this module (``extractor=
"aria_tda.embed.extractor"``) in this process or in each worker process and calls
:func:`extract_file_record` (one row per track) or :func:`extract_file_segments` (one row per
segment). Both load the encoder once per process — :func:`encoder_for` caches it under its
loader and checkpoint — read the file as mono at the encoder's rate (:mod:`aria_tda.embed.audio`)
and return the time-averaged embedding (:meth:`aria_tda.embed.encoders.Encoder.embed`).

Keyword arguments (the engine passes the recorded ``params`` and the unrecorded ``options``
together): ``encoder`` (the manifest's encoder record, checked against the loaded
encoder's rate and dimension), ``audio`` (how audio is read, recorded), and ``loader``
(``"module:function"``), ``weights``, ``layer``, ``device``, ``name``, ``threads`` (how to
build the encoder, not recorded). The loader is the registry entry's, resolved in the parent
process, so workers do not consult the registry (an entry added at run time, as tests do,
works in workers too).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import numpy as np

from aria_tda.embed.audio import load_mono, segment_bounds
from aria_tda.embed.encoders.base import Encoder
from aria_tda.errors import DataError

__all__ = [
    "RESERVED_METADATA",
    "encoder_for",
    "extract_file_record",
    "extract_file_segments",
    "loader_kwargs",
    "remember",
    "versions",
]

#: metadata columns this extractor records itself (user columns with these names are refused)
RESERVED_METADATA = ("duration",)

_CACHE: dict[tuple[Any, ...], Encoder] = {}


def loader_kwargs(
    loader: str, *, weights: Any, layer: int | None, device: str, name: str
) -> dict[str, Any]:
    """The keyword arguments :func:`aria_tda.embed.encoders.load_encoder` gives ``loader``.

    Parameters
    ----------
    loader : str
        ``"module:function"``.
    weights : path or None
        Checkpoint.
    layer : int or None
        Hidden layer.
    device : str
        Torch device.
    name : str
        Registry name (passed to the offline encoders' shared loader).
    """
    kwargs: dict[str, Any] = {"weights": weights, "layer": layer, "device": device}
    if loader.endswith(":load_offline"):
        kwargs["name"] = name
    return kwargs


def _key(loader: str, weights: Any, layer: Any, device: str, name: str) -> tuple[Any, ...]:
    return (loader, None if weights is None else os.fspath(weights), layer, device, name)


def remember(encoder: Encoder, *, loader: str, weights: Any, layer: Any, device: str,
             name: str) -> None:
    """Cache an encoder built in this process (the parent's, reused by an in-process run).

    Parameters
    ----------
    encoder : Encoder
        The loaded encoder.
    loader, weights, layer, device, name
        What it was built from (:func:`encoder_for`'s cache key).
    """
    _CACHE.clear()
    _CACHE[_key(loader, weights, layer, device, name)] = encoder


def encoder_for(*, loader: str, weights: Any, layer: Any, device: str, name: str,
                threads: int | None = None) -> Encoder:
    """The encoder of this process, built on first use and cached.

    Parameters
    ----------
    loader : str
        ``"module:function"`` of the registry entry.
    weights : path or None
        Checkpoint.
    layer : int or None
        Hidden layer.
    device : str
        Torch device.
    name : str
        Registry name.
    threads : int, optional
        Torch intra-op threads of this process (set when torch is loaded; workers share cores).
    """
    key = _key(loader, weights, layer, device, name)
    enc = _CACHE.get(key)
    if enc is None:
        mod_name, fn_name = loader.split(":")
        fn = getattr(importlib.import_module(mod_name), fn_name)
        enc = fn(**loader_kwargs(loader, weights=weights, layer=layer, device=device, name=name))
        if not isinstance(enc, Encoder):
            raise TypeError(f"{loader} returned {type(enc).__name__}, not an Encoder")
        _CACHE.clear()
        _CACHE[key] = enc
        if threads is not None and "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(int(threads))
    return enc


def _check(enc: Encoder, encoder: dict[str, Any]) -> None:
    for k, have in (("sample_rate", enc.sample_rate), ("dim", enc.dim)):
        want = encoder.get(k)
        if want is not None and int(want) != int(have):
            raise RuntimeError(f"{enc.name}: {k} {have} in this worker, {want} in the manifest")


def _embed(enc: Encoder, y: np.ndarray, path: str) -> np.ndarray:
    e = np.asarray(enc.embed(y), dtype=np.float64)
    if not np.all(np.isfinite(e)):
        raise DataError(f"embedding: {enc.name} gave NaN/inf for {path!r}")
    return e


def extract_file_record(
    path: str, *, encoder: dict[str, Any], audio: Any = None, loader: str, weights: Any = None,
    layer: Any = None, device: str = "cpu", name: str, threads: int | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The time-averaged embedding of one file and its duration (s).

    Parameters
    ----------
    path : str
        Audio file.
    encoder : dict
        The recorded encoder fields (rate and dim are checked).
    audio : Any
        The recorded audio-reading settings (documentation only).
    loader, weights, layer, device, name, threads
        How to build the encoder (:func:`encoder_for`).
    """
    enc = encoder_for(loader=loader, weights=weights, layer=layer, device=device, name=name,
                      threads=threads)
    _check(enc, encoder)
    y = load_mono(path, enc.sample_rate)
    return {"embedding": _embed(enc, y, path)}, {"duration": y.shape[0] / enc.sample_rate}


def extract_file_segments(
    path: str, *, seconds: float, encoder: dict[str, Any], audio: Any = None, loader: str,
    weights: Any = None, layer: Any = None, device: str = "cpu", name: str,
    threads: int | None = None,
) -> tuple[dict[str, np.ndarray], list[dict[str, Any]]]:
    """Time-averaged embeddings of the ``seconds``-long segments of one file.

    Parameters
    ----------
    path : str
        Audio file.
    seconds : float
        Segment length (:func:`aria_tda.embed.audio.segment_bounds`).
    encoder : dict
        The recorded encoder fields (rate and dim are checked).
    audio : Any
        The recorded audio-reading settings (documentation only).
    loader, weights, layer, device, name, threads
        How to build the encoder (:func:`encoder_for`).

    Returns
    -------
    (dict, list of dict)
        ``{"embedding": (n_segments, dim)}`` and per segment ``segment``, ``start``, ``end`` (s).
    """
    enc = encoder_for(loader=loader, weights=weights, layer=layer, device=device, name=name,
                      threads=threads)
    _check(enc, encoder)
    y = load_mono(path, enc.sample_rate)
    rows, metas = [], []
    for k, (s, e) in enumerate(segment_bounds(y.shape[0], enc.sample_rate, seconds)):
        rows.append(_embed(enc, y[s:e], path))
        metas.append({"segment": k, "start": s / enc.sample_rate, "end": e / enc.sample_rate})
    return {"embedding": np.stack(rows)}, metas


def versions() -> dict[str, str]:
    """Versions of the packages that compute embeddings (recorded in the store's manifest)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("torch", "transformers", "safetensors", "soundfile", "scipy"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            continue
    return out
