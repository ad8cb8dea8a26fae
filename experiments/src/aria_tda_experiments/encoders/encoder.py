"""The offline encoders as :class:`~aria_tda.embed.Encoder` objects: front end + model + pooling.

:func:`front_end` turns a signal into the model's input (log-CQT for clews-style, log-mel for
the others) — the *same* function feeds training and embedding, so a checkpoint sees at run
time exactly what it was trained on. :func:`build_model` makes the architecture of a config;
:class:`OfflineEncoder` wraps a trained one:

- clews-style and clap-style embed windows of ``window_seconds`` every ``window_hop_seconds``
  (one L2-normalised row per window; a signal shorter than a window is one window), as CLEWS
  embeds 20 s segments and CLAP 10 s windows;
- mert-style returns its hidden state ``layer`` at the token rate (12.5 Hz by default), the
  signal processed in chunks of ``window_seconds`` (the context it was trained on).
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np
import torch

from aria_tda.embed.encoders.base import Encoder
from aria_tda.errors import ParameterError, expected
from aria_tda_experiments.encoders.config import (
    ClapStyleConfig,
    ClewsStyleConfig,
    MertStyleConfig,
    OfflineConfig,
)
from aria_tda_experiments.encoders.frontends import cqt, log_mel
from aria_tda_experiments.encoders.models import (
    ConvEncoder,
    EnsembleEncoder,
    MaskedFrameModel,
    TextTower,
)

__all__ = [
    "OfflineEncoder",
    "build_model",
    "clews_input",
    "frames_per_second",
    "front_end",
    "input_bins",
    "moving_average",
]

_CQT_FLOOR = 1e-5


def front_end(y: np.ndarray, config: OfflineConfig) -> np.ndarray:
    """The model input of one mono signal at ``config.sample_rate``: ``(n_frames, n_bins)``.

    clews-style: :func:`clews_input` of the signal's CQT magnitudes; the others: log-mel in dB.

    Parameters
    ----------
    y : numpy.ndarray [shape=(n,)]
        Mono signal at ``config.sample_rate``.
    config : ClewsStyleConfig or MertStyleConfig or ClapStyleConfig
        The encoder's config.
    """
    if isinstance(config, ClewsStyleConfig):
        return clews_input(cqt(y, sr=config.sample_rate, hop=config.hop, fmin=config.fmin,
                               n_bins=config.n_bins, bins_per_octave=config.bins_per_octave),
                           config)
    return log_mel(y, sr=config.sample_rate, hop=config.hop, n_fft=config.n_fft,
                   n_mels=config.n_mels).astype(np.float32)


def clews_input(magnitudes: np.ndarray, config: ClewsStyleConfig) -> np.ndarray:
    r"""clews-style's model input from CQT magnitudes ``(n_frames, n_bins)``, float32.

    With ``harmonics = H > 1``, bin ``k`` first becomes :math:`\sum_{h=1}^{H} 0.8^{h-1}
    X[k + \mathrm{round}(B \log_2 h)]` (zero above the top bin; ``B`` bins per octave): a
    pitch salience. Then ``20·log10(max(·, 1e-5))`` (dB), whitened (minus its moving average
    over ``whiten_bins`` bins in each frame: the spectral envelope, i.e. much of the timbre,
    goes) and, with ``fold_octaves``, averaged over octaves into pitch classes tiled twice
    (``2·bins_per_octave`` values).

    Parameters
    ----------
    magnitudes : numpy.ndarray [shape=(n_frames, n_bins)]
        :func:`~aria_tda_experiments.encoders.frontends.cqt` of a signal with the config's settings.
    config : ClewsStyleConfig
        The encoder's config.
    """
    c = np.asarray(magnitudes, dtype=np.float64)
    if config.harmonics > 1:
        c = _harmonic_sum(c, config.harmonics, config.bins_per_octave)
    db = 20.0 * np.log10(np.maximum(c, _CQT_FLOOR))
    if config.whiten_bins > 1:
        db = db - moving_average(db, config.whiten_bins)
    if config.fold_octaves:
        b = config.bins_per_octave
        n_oct = config.n_bins // b
        pc = db[:, : n_oct * b].reshape(len(db), n_oct, b).mean(axis=1)
        db = np.concatenate([pc, pc], axis=1)
    return db.astype(np.float32)


def _harmonic_sum(c: np.ndarray, n_harmonics: int, bins_per_octave: int) -> np.ndarray:
    """Weighted sum over harmonics ``h = 1..n_harmonics`` of the bins ``k + round(B log2 h)``."""
    out = np.zeros_like(c)
    n = c.shape[1]
    for h in range(1, n_harmonics + 1):
        off = round(bins_per_octave * math.log2(h))
        if off < n:
            out[:, : n - off] += 0.8 ** (h - 1) * c[:, off:]
    return out


def moving_average(x: np.ndarray, width: int) -> np.ndarray:
    """Centred moving average along the last axis (edge-padded), same shape.

    Parameters
    ----------
    x : numpy.ndarray
        A 2-D array.
    width : int
        The window (frames).

    Returns
    -------
    numpy.ndarray
    """
    left = width // 2
    pad = np.pad(x, ((0, 0), (left, width - 1 - left)), mode="edge")
    c = np.cumsum(np.pad(pad, ((0, 0), (1, 0))), axis=1)
    return (c[:, width:] - c[:, :-width]) / width


def frames_per_second(config: OfflineConfig) -> float:
    """Front-end frames per second.

    Parameters
    ----------
    config : ClewsStyleConfig or MertStyleConfig or ClapStyleConfig
        The encoder's config.
    """
    return config.sample_rate / config.hop


def input_bins(config: OfflineConfig) -> int:
    """Bins per frame of :func:`front_end`'s output.

    Parameters
    ----------
    config : ClewsStyleConfig or MertStyleConfig or ClapStyleConfig
        The encoder's config.
    """
    if isinstance(config, ClewsStyleConfig):
        return 2 * config.bins_per_octave if config.fold_octaves else config.n_bins
    return config.n_mels


def build_model(config: OfflineConfig, *, vocab_size: int = 0) -> torch.nn.Module:
    """The (untrained) architecture of a config.

    Parameters
    ----------
    config : ClewsStyleConfig or MertStyleConfig or ClapStyleConfig
        The encoder's config.
    vocab_size : int
        clap-style only: words of the caption vocabulary (the text tower's size).

    Returns
    -------
    torch.nn.Module
        :class:`ConvEncoder` (clews-style; :class:`EnsembleEncoder` of ``n_models`` of them
        when ``n_models > 1``), :class:`MaskedFrameModel` (mert-style), or a
        ``ModuleDict`` with ``audio`` (:class:`ConvEncoder`), ``text`` (:class:`TextTower`)
        and the learned ``log_scale`` inside ``scale`` (clap-style).
    """
    if isinstance(config, ClewsStyleConfig):
        def member() -> ConvEncoder:
            return ConvEncoder(input_bins(config), config.channels, config.dim,
                               bin_norm=config.bin_norm)

        if config.n_models > 1:
            return EnsembleEncoder([member() for _ in range(config.n_models)])
        return member()
    if isinstance(config, MertStyleConfig):
        return MaskedFrameModel(config.n_mels, config.stem_stride, config.d_model,
                                config.n_layers, config.n_heads, config.d_ff, config.vocab)
    if isinstance(config, ClapStyleConfig):
        if vocab_size < 2:
            raise ParameterError(expected("vocab_size", "at least 2 words", vocab_size))
        scale = torch.nn.ParameterDict(
            {"log_scale": torch.nn.Parameter(torch.tensor(math.log(1.0 / config.temperature)))})
        return torch.nn.ModuleDict({
            "audio": ConvEncoder(config.n_mels, config.channels, config.dim),
            "text": TextTower(vocab_size, config.text_width, config.dim),
            "scale": scale,
        })
    raise ParameterError(expected("config", "an offline encoder config", type(config).__name__))


def _windows(n: int, size: int, hop: int) -> list[tuple[int, int]]:
    if n <= size:
        return [(0, n)]
    starts = list(range(0, n - size + 1, hop))
    if starts[-1] + size < n:
        starts.append(n - size)  # the tail gets a window too
    return [(s, s + size) for s in starts]


class OfflineEncoder(Encoder):
    """A trained offline encoder (see the module docstring); load with ``load_offline``.

    Parameters
    ----------
    name : str
        ``clews-style``, ``mert-style`` or ``clap-style``.
    config : ClewsStyleConfig or MertStyleConfig or ClapStyleConfig
        Its config.
    model : torch.nn.Module
        The trained architecture (:func:`build_model`).
    layer : int, optional
        mert-style: hidden state ``0..n_layers`` (default ``config.default_layer``).
    device : str
        Torch device.
    info : dict, optional
        What :meth:`info` adds (weights path and digest, training header).
    """

    def __init__(self, name: str, config: OfflineConfig, model: torch.nn.Module, *,
                 layer: int | None = None, device: str = "cpu",
                 info: dict[str, Any] | None = None):
        self.name = name
        self.config = config
        self.sample_rate = int(config.sample_rate)
        self.device = torch.device(device)
        self.model = model.to(self.device).eval()
        if isinstance(config, MertStyleConfig):
            n = config.n_layers
            want = config.default_layer if layer is None else layer
            want = n if want == -1 else want
            if not isinstance(want, int) or not 0 <= want <= n:
                raise ParameterError(expected("layer", f"a hidden state 0..{n} of {name}", layer))
            self.layer: int | None = want
            self.dim = config.d_model
        else:
            if layer is not None:
                raise ParameterError(expected("layer", f"None ({name} has one output)", layer))
            self.layer = None
            n_models = config.n_models if isinstance(config, ClewsStyleConfig) else 1
            self.dim = config.dim * n_models
        self._info = dict(info or {})
        fps = frames_per_second(config)
        self._win = max(1, round(config.window_seconds * fps))
        self._hop = max(1, round(config.window_hop_seconds * fps))

    @property
    def audio_tower(self) -> torch.nn.Module:
        """The module that embeds a front-end image (clews-style, clap-style)."""
        return self.model["audio"] if isinstance(self.model, torch.nn.ModuleDict) else self.model

    @torch.no_grad()
    def embed_features(self, feats: np.ndarray) -> np.ndarray:
        """Frame (window) embeddings of a precomputed front-end output.

        Parameters
        ----------
        feats : numpy.ndarray [shape=(n_frames, n_bins)]
            :func:`front_end` of a signal.
        """
        x = torch.from_numpy(np.ascontiguousarray(feats, dtype=np.float32)).to(self.device)
        if isinstance(self.config, MertStyleConfig):
            s = self.config.stem_stride
            n_tok = x.shape[0] // s
            if n_tok < 1:
                raise ParameterError(expected("y", f"at least {s * self.config.hop} samples",
                                              f"{x.shape[0] * self.config.hop}"))
            size = max(1, self._win // s)
            model = cast(MaskedFrameModel, self.model)
            layer = int(self.layer or 0)
            out = [model.hidden_states(x[a * s:b * s][None])[layer][0]
                   for a, b in ((a, min(a + size, n_tok)) for a in range(0, n_tok, size))]
            return torch.cat(out).cpu().numpy().astype(np.float32)
        spans = _windows(x.shape[0], self._win, self._hop)
        tower = self.audio_tower
        if len(spans) > 1 and all(b - a == self._win for a, b in spans):
            batch = torch.stack([x[a:b].T for a, b in spans])
            return tower(batch).cpu().numpy().astype(np.float32)
        return torch.cat([tower(x[a:b].T[None]) for a, b in spans]).cpu().numpy().astype(
            np.float32)

    def embed_frames(self, y: np.ndarray) -> np.ndarray:
        """Frame (window) embeddings of one mono signal at :attr:`sample_rate`.

        Parameters
        ----------
        y : numpy.ndarray [shape=(n_samples,)]
            Mono float audio at :attr:`sample_rate`.
        """
        return self.embed_features(front_end(y, self.config))

    def info(self) -> dict[str, Any]:
        """Manifest entries: encoder, weights, weights_sha256, layer, rate, window, dim, ...."""
        from aria_tda.manifest import package_version

        w = self.config.window_seconds
        return {
            "encoder": self.name,
            "weights": self._info.get("weights"),
            "weights_sha256": self._info.get("weights_sha256"),
            "layer": self.layer,
            "sample_rate": self.sample_rate,
            "window_seconds": w,
            "frame_rate": (frames_per_second(self.config) / self.config.stem_stride
                           if isinstance(self.config, MertStyleConfig) else None),
            "dim": self.dim,
            "n_models": (self.config.n_models if isinstance(self.config, ClewsStyleConfig)
                         else 1),
            "config": self.config.to_dict(),
            "training": self._info.get("training"),
            "versions": {"aria": package_version(),
                         "torch": torch.__version__, "numpy": np.__version__},
        }
