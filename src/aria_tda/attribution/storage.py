"""Saving attribution score matrices with their manifest.

One function, :func:`save_attribution`, writes every score matrix this package produces. It
delegates to :func:`aria_tda.scores.save_scores` (``.npy`` / ``.zarr`` by suffix, manifest written
atomically, orientation ``(n_train, n_queries)``) and records the method, its parameters and
the seed, so :func:`aria_tda.manifest.check_manifest` can refuse silent reuse, and, when they
were run, the matrix's sanity checks under :data:`SANITY_KEY`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda.errors import DataError, ParameterError, expected
from aria_tda.manifest import SANITY_KEY

__all__ = ["SANITY_KEY", "STAGE", "load_attribution", "save_attribution"]

#: The ``stage`` recorded in attribution manifests (the symbolic benchmark has one stage).
STAGE = "-"


def save_attribution(
    scores: Any,
    path: str | os.PathLike[str],
    *,
    method: str,
    parameters: dict[str, Any] | None = None,
    seed: int | None = None,
    row_ids: Any = None,
    extra: dict[str, Any] | None = None,
    sanity: dict[str, Any] | None = None,
) -> Path:
    """Write a ``(n_train, n_test)`` score matrix and its manifest.

    Parameters
    ----------
    scores : array [shape=(n_train, n_test)]
        Higher = more influential.
    path : path
        ``.npy`` or ``.zarr``.
    method : str
        E.g. ``"TRAK"``.
    parameters : dict, optional
        Hyper-parameters (JSON-able). ``extra`` (e.g. wall time) is stored under
        ``parameters["run"]``.
    seed : int, optional
        The projection seed.
    row_ids : array of str [shape=(n_train,)], optional
        Training-segment ids of the rows.
    extra : dict, optional
        Run facts that do not change the numbers (wall time, ...).
    sanity : dict, optional
        The sanity checks of the matrix (:func:`aria_tda.attribution.sanity_checks`),
        stored under the manifest's ``"sanity"`` key (read back with
        :func:`aria_tda.attribution.read_sanity`).

    Returns
    -------
    Path
    """
    from aria_tda.scores import save_scores

    if not isinstance(method, str) or not method:
        raise ParameterError(expected("method", "a non-empty string", method))
    arr = np.asarray(scores)
    if arr.ndim != 2:
        raise DataError(expected("scores", "a 2-D (n_train, n_test) matrix", arr.shape))
    if sanity is not None and not isinstance(sanity, dict):
        raise ParameterError(expected("sanity", "a dict or None", type(sanity).__name__))
    params = dict(parameters or {})
    if extra:
        params["run"] = dict(extra)
    out = Path(save_scores(arr, path, method=method, stage=STAGE, parameters=params, seed=seed,
                           row_ids=row_ids))
    if sanity is not None:
        from aria_tda.manifest import read_manifest, write_manifest

        manifest = read_manifest(out) or {}
        manifest[SANITY_KEY] = dict(sanity)
        write_manifest(out, manifest)
    return out


def load_attribution(
    path: str | os.PathLike[str], *, method: str | None = None
) -> tuple[np.ndarray, dict[str, Any]]:
    """Read a matrix written by :func:`save_attribution`: ``(scores, manifest)``.

    Parameters
    ----------
    path : path
        ``.npy`` or ``.zarr`` written by :func:`save_attribution`.
    method : str, optional
        The method the matrix must come from.

    Raises
    ------
    ManifestMismatchError
        if ``method`` is given and differs from the stored one.
    """
    from aria_tda.manifest import check_manifest
    from aria_tda.scores import open_scores

    if method is not None:
        check_manifest(path, {"method": method})
    src = open_scores(path)
    return src.to_numpy(), dict(src.manifest or {})
