"""Reference twins of :mod:`aria_tda.scores`: normalisation and track aggregation.

Each fast streaming kernel against its in-memory ``*_reference`` (same signature), with
chunk-size invariance (``chunk_rows``) and permutation invariance: permuting the rows of
``S`` (and its segment map with them) permutes the rows of the normalised matrix and leaves
``S_track`` unchanged; permuting the columns (queries) permutes the result's columns.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aria_tda.scores.aggregation import aggregate, aggregate_reference
from aria_tda.scores.normalization import normalize, normalize_reference
from twinlib import Twin


def _as_array(result: Any) -> np.ndarray:
    return np.asarray(result.to_numpy() if hasattr(result, "to_numpy") else result)


def _matrix(rng: np.random.Generator, m: int = 60, t: int = 9) -> np.ndarray:
    return rng.standard_normal((m, t)) * rng.random(t) * 5 + rng.standard_normal(t) * 20


def _make_normalize(method: str) -> Any:
    def make(rng: np.random.Generator) -> tuple[tuple[Any, ...], dict[str, Any]]:
        s = _matrix(rng)
        if method == "auto":  # heavy tails in some columns
            s[:, :5] = rng.lognormal(0.0, 2.0, (s.shape[0], 5))
        return (s,), {"method": method}

    return make


def _permute_normalize(rng: np.random.Generator, args: Any, kwargs: Any) -> Any:
    s = args[0]
    r, c = rng.permutation(s.shape[0]), rng.permutation(s.shape[1])
    return (s[r][:, c],), dict(kwargs), lambda res: _as_array(res)[r][:, c]


def _make_aggregate(normalize_method: str, residual: bool = False) -> Any:
    def make(rng: np.random.Generator) -> tuple[tuple[Any, ...], dict[str, Any]]:
        s = _matrix(rng, 72, 8)
        tracks = [f"t{i}" for i in range(9)]
        seg = np.array([tracks[i % 9] for i in rng.permutation(72)])
        kwargs = {
            "segments": seg,
            "tracks": tracks,
            "normalize": normalize_method,
            "residual": residual,
        }
        return (s,), kwargs

    return make


def _permute_aggregate(rng: np.random.Generator, args: Any, kwargs: Any) -> Any:
    s = args[0]
    r, c = rng.permutation(s.shape[0]), rng.permutation(s.shape[1])
    new = dict(kwargs)
    new["segments"] = np.asarray(kwargs["segments"])[r]
    return (s[r][:, c],), new, lambda res: _as_array(res)[:, c]


CHUNKS = ("chunk_rows", (1, 7, 1000))

TWINS = [
    Twin(
        name=f"scores.normalize[{method}]",
        fast=normalize,
        reference=normalize_reference,
        make=_make_normalize(method),
        chunk=CHUNKS,
        permute=_permute_normalize,
        rtol=1e-9,
        atol=1e-9,
    )
    for method in ("zscore", "rank", "auto")
] + [
    Twin(
        name=f"scores.aggregate[{method}{', residual' if residual else ''}]",
        fast=aggregate,
        reference=aggregate_reference,
        make=_make_aggregate(method, residual),
        chunk=CHUNKS,
        permute=_permute_aggregate,
        rtol=1e-8,
        atol=1e-8,
    )
    for method, residual in (("zscore", False), ("rank", False), ("zscore", True))
]
