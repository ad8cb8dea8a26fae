"""The body of :mod:`~aria_tda.features.audio.jit`'s probe process: extract a short synthetic
clip, which compiles (or loads) every librosa kernel an extraction uses.

A module of its own, run by name in the probe's ``python -c``: the extraction imports
:mod:`~aria_tda.features.audio.jit` (its first use in a process runs under the cache's lock),
so the probe body cannot live there without an import cycle.
"""

from __future__ import annotations

import sys

import numpy as np

from aria_tda.errors import MissingDependencyError
from aria_tda.features.audio.jit import PROBE_NOT_APPLICABLE

__all__ = ["warm"]


def warm() -> None:  # pragma: no cover - runs in the probe process
    """Extract a 3 s synthetic clip; exit with ``PROBE_NOT_APPLICABLE`` when librosa is missing."""
    try:
        from aria_tda.features.audio.extract import extract_audio

        sr = 48000
        t = np.arange(3 * sr) / sr
        pulse = (np.sin(2 * np.pi * 2.0 * t) > 0.9).astype(np.float64)
        y = 0.2 * np.sin(2 * np.pi * 220.0 * t) + 0.2 * np.sin(2 * np.pi * 330.0 * t) + 0.3 * pulse
        extract_audio(y.astype(np.float32), sr)
    except MissingDependencyError:
        sys.exit(PROBE_NOT_APPLICABLE)
