r"""CLEWS (Serrà, Araz, Bogdanov & Mitsufuji, ICML 2025) from its published checkpoint.

CLEWS is a musical-version (cover) matching model trained on SHS100K: 16 kHz mono audio is cut
into 20 s segments, each turned into a constant-Q spectrogram, a residual CNN and GeM pooling,
and a 2048-d embedding. ARIA implements the architecture itself (read from the authors' MIT
code at github.com/sony/clews; :mod:`~.model`), with nnAudio's CQT
re-implemented exactly (:mod:`~.cqt`), and loads the authors' checkpoint
strictly (:mod:`~.checkpoint`) — no nnAudio, einops, OmegaConf or Lightning
at run time, and no download: the checkpoint (``checkpoint_best.ckpt`` from the Zenodo record
linked in the authors' README, with its ``configuration.yaml``) must be local.

Embedding of a track
--------------------
:meth:`ClewsEncoder.embed_frames` returns one row per 20 s segment, cut as the authors'
``Model.prepare`` cuts (repeat-padding, :func:`~.model.shingle`) with a hop
of 5 s — the default of their ``inference.py`` and ``test.py`` (training uses a 20 s hop; option
``hop_seconds``, by default a quarter of the segment length); a track shorter than 20 s is looped
to one segment. :meth:`~aria_tda.embed.encoders.base.Encoder.embed` averages
the segment embeddings over time. Note: CLEWS's authors compare two tracks by reductions of
their *segment-pair* distances (e.g. the mean of the best pairs without replacement,
``bpwr-10``), not by one averaged vector; the paper's embedding baseline — and ARIA — use the
cosine similarity of time-averaged embeddings, the same rule for every encoder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._optional import require

require("torch", "embed", purpose="the CLEWS encoder")

import torch  # noqa: E402

from aria_tda._options import Options, option  # noqa: E402
from aria_tda.embed.encoders.base import Encoder, file_sha256  # noqa: E402
from aria_tda.embed.encoders.clews.checkpoint import (  # noqa: E402
    read_checkpoint,
    resolve_config,
    write_checkpoint,
)
from aria_tda.embed.encoders.clews.model import ClewsConfig, ClewsNet, shingle  # noqa: E402
from aria_tda.errors import DataError, FileFormatError, ParameterError, expected  # noqa: E402

__all__ = ["ClewsEncoder", "ClewsOptions", "load_clews", "save_random_checkpoint"]

#: authors' inference hop between 20 s segments (inference.py --hop_size, test.py qshop/cshop),
#: as a fraction of the segment length
DEFAULT_HOP_FRACTION = 0.25

_SMALL = ClewsConfig(
    shingle_len=4.0,
    shingle_hop=4.0,
    frontend_channels=(8, 16),
    blocks=(1, 1, 1, 1),
    channels=(16, 16, 32, 32),
    zdim=32,
)


@dataclass(frozen=True)
class ClewsOptions(Options):
    """Options of :func:`load_clews` (``aria-tda embed --encoder clews``)."""

    hop_seconds: float | None = option(
        None,
        help="hop between segments in seconds (default: a quarter of the segment length, "
        "5 s for CLEWS's 20 s segments as in the authors' inference)",
        min_value=0.0,
        min_inclusive=False,
        kind="float",
    )
    batch_size: int = option(4, help="segments per forward pass", min_value=1)
    noise_seed: int = option(0, help="seed of the front end's 1e-6 noise", min_value=0)
    config: str | None = option(
        None,
        help="configuration.yaml of the checkpoint (default: the one beside it)",
        check=lambda name, value: _path_or_none(name, value),
    )


def _path_or_none(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str | os.PathLike):
        raise ParameterError(expected(name, "a path to a configuration.yaml", value))
    return os.fspath(value)


class ClewsEncoder(Encoder):
    """A loaded CLEWS model: signal at 16 kHz → one embedding per 20 s segment.

    Parameters
    ----------
    net : ClewsNet
        The network, weights loaded, in eval mode.
    weights : path
        The checkpoint it came from.
    options : ClewsOptions
        Segmenting and batching.
    config_source : str
        Where the architecture was read from.
    device : str
        Torch device.
    """

    name = "clews"

    def __init__(
        self,
        net: ClewsNet,
        *,
        weights: str | os.PathLike[str],
        options: ClewsOptions,
        config_source: str,
        device: str = "cpu",
    ) -> None:
        self.net = net
        self.config = net.config
        self.sample_rate = net.config.sample_rate
        self.dim = net.config.zdim
        self.weights = Path(weights)
        self.weights_sha256 = file_sha256(self.weights)
        self.options = options
        self.config_source = config_source
        self.device = device
        self.hop_seconds = (
            options.hop_seconds
            if options.hop_seconds is not None
            else DEFAULT_HOP_FRACTION * net.config.shingle_len
        )
        self.hop = int(self.sample_rate * self.hop_seconds)
        net.set_noise_seed(options.noise_seed)

    def segments(self, y: np.ndarray) -> np.ndarray:
        """The 20 s segments the model sees, ``(S, segment_samples)`` float32.

        Parameters
        ----------
        y : numpy.ndarray [shape=(n_samples,)]
            Mono audio at 16 kHz.
        """
        x = np.asarray(y, dtype=np.float32)
        if x.ndim != 1 or x.size == 0:
            raise DataError(expected("y", "a non-empty mono signal (n_samples,)", x.shape))
        if not np.isfinite(x).all():
            raise DataError(expected("y", "finite samples", "NaN or infinite values"))
        return shingle(x, self.config.segment_samples, self.hop)

    def embed_frames(self, y: np.ndarray) -> np.ndarray:
        """One 2048-d embedding per 20 s segment (5 s hop), ``(S, dim)`` float32.

        Parameters
        ----------
        y : numpy.ndarray [shape=(n_samples,)]
            Mono float32 audio at :attr:`sample_rate`.
        """
        segs = self.segments(y)
        out = []
        with torch.inference_mode():
            for i in range(0, len(segs), self.options.batch_size):
                x = torch.from_numpy(segs[i : i + self.options.batch_size]).to(self.device)
                out.append(self.net(x).float().cpu().numpy())
        return np.concatenate(out, axis=0)

    def info(self) -> dict[str, Any]:
        """What a manifest records about this encoder."""

        def version(pkg: str) -> str | None:
            try:
                return metadata.version(pkg)
            except metadata.PackageNotFoundError:
                return None

        return {
            "encoder": self.name,
            "weights": str(self.weights),
            "weights_sha256": self.weights_sha256,
            "layer": None,
            "sample_rate": self.sample_rate,
            "window_seconds": self.config.shingle_len,
            "hop_seconds": self.hop_seconds,
            "dim": self.dim,
            "pooling": "mean of segment embeddings",
            "config_source": self.config_source,
            "noise_seed": self.options.noise_seed,
            "versions": {
                "aria-tda": version("aria-tda"),
                "torch": torch.__version__,
                "numpy": np.__version__,
            },
        }


def load_clews(
    *,
    weights: str | os.PathLike[str] | None,
    layer: int | None = None,
    device: str = "cpu",
    **options: Any,
) -> ClewsEncoder:
    """Load the published CLEWS checkpoint (authors' Fabric format) as an ARIA encoder.

    Parameters
    ----------
    weights : path
        The checkpoint file (``checkpoint_best.ckpt``; ``configuration.yaml`` beside it is
        read when present, else the configuration stored in the checkpoint).
    layer : None
        CLEWS has no layer choice (its output is the projected GeM pool); must be ``None``.
    device : str
        Torch device.
    **options : Any
        :class:`ClewsOptions` (``hop_seconds``, ``batch_size``, ``noise_seed``, ``config``).

    Returns
    -------
    ClewsEncoder
    """
    if weights is None:
        raise ParameterError(
            "weights: CLEWS needs its checkpoint and ARIA never downloads one; obtain the "
            "shs-clews checkpoint (checkpoint_best.ckpt and its configuration.yaml) linked from "
            "github.com/sony/clews ('checkpoints'), then --weights PATH/TO/checkpoint_best.ckpt"
        )
    if layer is not None:
        raise ParameterError(expected("layer", "None (CLEWS has no layer choice)", layer))
    opts = ClewsOptions.from_mapping(options, what="clews options")
    state, conf = read_checkpoint(weights)
    config, source = resolve_config(weights, conf, opts.config)
    with torch.device("meta"):
        net = ClewsNet(config)
    _check_keys(net, state, weights)
    net.load_state_dict(state, strict=True, assign=True)
    net = net.to(device).eval()
    return ClewsEncoder(net, weights=weights, options=opts, config_source=source, device=device)


def _check_keys(net: ClewsNet, state: dict[str, torch.Tensor], weights: Any) -> None:
    want = {k: tuple(v.shape) for k, v in net.state_dict().items()}
    missing = sorted(set(want) - set(state))
    unexpected = sorted(set(state) - set(want))
    wrong = sorted(k for k in set(want) & set(state) if tuple(state[k].shape) != want[k])
    if not (missing or unexpected or wrong):
        return

    def show(keys: list[str]) -> str:
        return ", ".join(keys[:12]) + (f", … ({len(keys)} in all)" if len(keys) > 12 else "")

    parts = []
    if missing:
        parts.append(f"missing keys: {show(missing)}")
    if unexpected:
        parts.append(f"unexpected keys: {show(unexpected)}")
    if wrong:
        parts.append(
            "shape mismatches: "
            + show([f"{k} {tuple(state[k].shape)} vs {want[k]}" for k in wrong])
        )
    raise FileFormatError(
        f"weights: {weights} does not fit the CLEWS architecture of its configuration; "
        + "; ".join(parts)
    )


def save_random_checkpoint(
    path: str | os.PathLike[str], *, seed: int = 0, small: bool = False, write_config: bool = True
) -> Path:
    """Write a CLEWS checkpoint with random weights in the authors' format (for tests).

    Every parameter and buffer is random (residual gains, normalisation statistics included,
    so every weight affects the output); the CQT kernels are the real ones.

    Parameters
    ----------
    path : path
        Checkpoint file to write.
    seed : int
        Seed of the weights.
    small : bool
        A narrow network for fast tests (same CQT, 4 s segments, widths 8–32, one block per
        stage, 32-d output); ``False``: the full ``shs-clews`` architecture.
    write_config : bool
        Also write ``configuration.yaml`` beside the checkpoint (the authors' layout).

    Returns
    -------
    pathlib.Path
    """
    config = _SMALL if small else ClewsConfig()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = ClewsNet(config)
        with torch.no_grad():
            for name, t in net.named_parameters():
                if name.endswith("gain") and t.numel() == 1 and "frontend" not in name:
                    t.uniform_(0.3, 1.0)
                elif t.ndim == 1 or name.endswith(".p"):
                    t.add_(0.1 * torch.randn_like(t))
            for name, b in net.named_buffers():
                if name.endswith("running_mean"):
                    b.normal_(0.0, 0.1)
                elif name.endswith("running_var"):
                    b.uniform_(0.5, 1.5)
    return write_checkpoint(path, net, write_config=write_config)
