"""A study's inputs held in memory: saved once, by content, then read like any file.

From Python a setting may name its score matrix as a NumPy array or a torch tensor and its
segment map as a pandas DataFrame (:class:`~aria_tda.study.config.SettingSpec`), as a notebook
has them. Everything after the study file is read — the checks before any work, the content
fingerprints of the cache, ``results.json``, the report and the dossiers, which reopen the
inputs later — works on files, so :func:`save_in_memory_inputs` writes each such input once
to ``$ARIA_CACHE_DIR/inputs/`` under the digest of its content (``scores-<digest>.npy``,
``segments-<digest>.csv``) and hands the study the path: the same array gives the same file,
so a rerun finds its cache and writes nothing. The files are written atomically; the folder
can be emptied at any time (a later run writes them again).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._fingerprint import cache_dir
from aria_tda._io import write_text
from aria_tda.errors import ParameterError, expected
from aria_tda.study.config import SettingSpec, StudySpec, in_memory

__all__ = ["inputs_dir", "save_in_memory_inputs"]


def inputs_dir() -> Path:
    """``$ARIA_CACHE_DIR/inputs``: where in-memory study inputs are saved."""
    return cache_dir() / "inputs"


def _ready_dir() -> Path:
    """:func:`inputs_dir`, created; a file or link in its place is refused, never written
    through."""
    d = inputs_dir()
    if d.is_symlink() or (d.exists() and not d.is_dir()):
        raise ParameterError(expected(
            "ARIA_CACHE_DIR", f"a cache folder whose 'inputs' is a folder ARIA makes ({d})",
            "a symbolic link" if d.is_symlink() else "a file"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def _as_array(name: str, value: Any) -> np.ndarray:
    """A host NumPy copy of an array or tensor (a torch tensor on any device)."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    arr = np.ascontiguousarray(np.asarray(value))
    if arr.ndim != 2 or arr.dtype.kind not in "fiu":
        raise ParameterError(expected(name, "a 2-D array of real numbers", arr))
    return arr


def _save_scores(name: str, value: Any) -> Path:
    from aria_tda.scores import save_scores

    arr = _as_array(name, value)
    h = hashlib.sha256(f"{arr.dtype.str}{arr.shape}".encode())
    h.update(arr.tobytes())  # one copy; the array is about to be written anyway
    path = inputs_dir() / f"scores-{h.hexdigest()[:32]}.npy"
    if path.exists():
        try:  # a copy saved before: used when it still holds these values
            if np.array_equal(np.load(path, mmap_mode="r"), arr):
                return path
        except (OSError, ValueError):
            pass  # damaged: written again
    _ready_dir()
    save_scores(arr, path)
    return path


def _save_table(table: Any) -> Path:
    buf = io.StringIO()
    table.to_csv(buf, index=False)
    text = buf.getvalue()
    path = inputs_dir() / f"segments-{hashlib.sha256(text.encode()).hexdigest()[:32]}.csv"
    if not (path.is_file() and path.read_text(encoding="utf-8", errors="replace") == text):
        _ready_dir()
        write_text(path, text)
    return path


def save_in_memory_inputs(spec: StudySpec) -> StudySpec:
    """``spec`` with every in-memory ``scores`` and ``segments`` replaced by the path of its
    saved copy (the spec itself when it has none).

    Parameters
    ----------
    spec : StudySpec
        The study, as built in Python.

    Returns
    -------
    StudySpec
    """
    settings: list[SettingSpec] = []
    changed = False
    for s in spec.settings:
        change: dict[str, Any] = {}
        if in_memory(s.scores):
            change["scores"] = _save_scores(f"setting {s.name!r}: scores", s.scores)
        if in_memory(s.segments):
            change["segments"] = _save_table(s.segments)
        changed = changed or bool(change)
        settings.append(dataclasses.replace(s, **change) if change else s)
    return dataclasses.replace(spec, settings=tuple(settings)) if changed else spec
