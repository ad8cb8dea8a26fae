r"""The CLEWS network (Serrà et al. 2025, github.com/sony/clews ``models/clews.py``), ARIA's code.

Read from the authors' source (MIT) and ``config/shs-clews.yaml``; module names follow theirs so
their state dict loads strictly (``cqt.0.*``, ``frontend.*``, ``backbone.N.*``, ``pool.p``,
``proj.*``). For one segment of 20 s at 16 kHz (``shs-clews``):

1. **CQT** (:class:`~aria_tda.embed.encoders.clews.cqt.ConstantQ`): 84 bins = 7 octaves × 12 from
   32.70 Hz, hop 20 ms (320 samples), filter scale 1 → ``(84, 1001)``; then average pooling
   over 5 frames (stride 5) → ``(84, 200)`` at 100 ms.
2. **Front end**: ``CQTPrepare`` — :math:`\sqrt{\max(C, 0)}` (power 0.5), min–max normalised
   over the whole segment, plus :math:`10^{-6}` uniform noise and normalised again, then a
   learned scalar gain and bias; Conv2d(1→128, kernel 12×3, stride (1, 2)) → BatchNorm → ReLU →
   Conv2d(128→256, 12×3, stride 2), no biases.
3. **Backbone**: 3 + 4 + 6 + 3 pre-activation "IBN" residual blocks with 256, 512, 1024, 2048
   channels and strides 1, 2, 2, 1 (first block of each stage). A block is
   :math:`h \mapsto g\cdot F(h) + S(h)` with a learned scalar :math:`g` (initialised 0),
   :math:`F` = IBN(half BatchNorm, half InstanceNorm) → ReLU → conv3×3 (stride) → BN → ReLU →
   conv3×3 with half the larger width inside, and :math:`S` the identity or BN → ReLU →
   conv3×3 (stride) when the shape changes.
4. **GeM pooling** over frequency × time with one learned exponent :math:`p = 1 +
   \operatorname{softplus}(\theta)` (initialised 3): :math:`(\operatorname{mean} \max(h,
   10^{-6})^p)^{1/p}`, then BatchNorm1d(2048) → Linear(2048→2048, no bias): the 2048-d segment
   embedding (not normalised).

Determinism: the authors draw the :math:`10^{-6}` noise afresh on every call; ARIA draws it from
a generator seeded with ``noise_seed``, once per segment shape, so a segment's embedding does
not depend on the call, the batch or the segment's position (the noise only matters for
constant — e.g. silent — segments, where it is all that is left after normalisation).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import torch
from torch import nn

from aria_tda.embed.encoders.clews.cqt import ConstantQ
from aria_tda.errors import DataError, FileFormatError, expected

__all__ = ["ClewsConfig", "ClewsNet", "shingle"]


@dataclass(frozen=True)
class ClewsConfig:
    """The architecture numbers of a CLEWS model (``model:`` and ``data.samplerate`` of the
    authors' ``configuration.yaml``); the defaults are ``config/shs-clews.yaml``'s."""

    sample_rate: int = 16_000
    shingle_len: float = 20.0
    shingle_hop: float = 20.0
    cqt_hop: float = 0.02
    cqt_octaves: int = 7
    cqt_bins_per_octave: int = 12
    cqt_filter_scale: float = 1.0
    cqt_pool: int = 5
    cqt_pow: float = 0.5
    frontend_channels: tuple[int, int] = (128, 256)
    blocks: tuple[int, ...] = (3, 4, 6, 3)
    channels: tuple[int, ...] = (256, 512, 1024, 2048)
    down: tuple[int, ...] = (1, 2, 2, 1)
    zdim: int = 2048

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any], *, source: str = "configuration") -> ClewsConfig:
        """Read the authors' configuration layout (``{"data": {...}, "model": {...}}``).

        Parameters
        ----------
        conf : mapping
            The parsed ``configuration.yaml`` (or the ``conf`` stored in a checkpoint).
        source : str
            How to name it in errors.
        """
        try:
            model = conf["model"]
            if str(model.get("name", "clews")) != "clews":
                raise FileFormatError(expected(source, "model.name 'clews'", model.get("name")))
            cqt, front, back = model["cqt"], model["frontend"], model["backbone"]
            sr = int(conf.get("data", {}).get("samplerate", cls.sample_rate))
            return cls(
                sample_rate=sr,
                shingle_len=float(model["shingling"]["len"]),
                shingle_hop=float(model["shingling"]["hop"]),
                cqt_hop=float(cqt["hoplen"]),
                cqt_octaves=int(cqt["noctaves"]),
                cqt_bins_per_octave=int(cqt["nbinsoct"]),
                cqt_filter_scale=float(cqt["fscale"]),
                cqt_pool=int(cqt["pool"]),
                cqt_pow=float(front["cqtpow"]),
                frontend_channels=(int(front["channels"][0]), int(front["channels"][1])),
                blocks=tuple(int(v) for v in back["blocks"]),
                channels=tuple(int(v) for v in back["channels"]),
                down=tuple(int(v) for v in back["down"]),
                zdim=int(model["zdim"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise FileFormatError(
                expected(
                    source,
                    "a CLEWS configuration (model.cqt, model.frontend, "
                    "model.backbone, model.shingling, model.zdim)",
                    repr(exc),
                )
            ) from exc

    def to_conf(self) -> dict[str, Any]:
        """The authors' configuration layout (every part their ``Model`` constructor reads)."""
        return {
            "data": {"samplerate": self.sample_rate},
            "model": {
                "name": "clews",
                "shingling": {"len": self.shingle_len, "hop": self.shingle_hop},
                "cqt": {
                    "hoplen": self.cqt_hop,
                    "noctaves": self.cqt_octaves,
                    "nbinsoct": self.cqt_bins_per_octave,
                    "fscale": self.cqt_filter_scale,
                    "pool": self.cqt_pool,
                },
                "frontend": {"cqtpow": self.cqt_pow, "channels": list(self.frontend_channels)},
                "backbone": {
                    "blocks": list(self.blocks),
                    "channels": list(self.channels),
                    "down": list(self.down),
                },
                "zdim": self.zdim,
                # read by the authors' Model constructor (training only); shs-clews's values
                "loss": {"redux": {"pos": "bpwr-5", "neg": "min"}, "gamma": 5, "epsilon": 1e-6},
            },
        }

    @property
    def segment_samples(self) -> int:
        """Samples in one segment (``int(sr * shingling.len)``, as the authors round)."""
        return int(self.sample_rate * self.shingle_len)


class CQTPrepare(nn.Module):
    """Power, min–max normalisation, tiny seeded noise, learned gain and bias (authors' names).

    Parameters
    ----------
    power : float
        Exponent applied to the clamped CQT magnitude.
    eps : float
        Noise amplitude and normalisation guard.
    """

    def __init__(self, power: float = 0.5, eps: float = 1e-6) -> None:
        super().__init__()
        self.power = power
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(1))
        self.bias = nn.Parameter(torch.zeros(1))
        self.noise_seed = 0

    def _normalize(self, h: torch.Tensor) -> torch.Tensor:
        h = h - h.amin(dim=(2, 3), keepdim=True)
        return h / (h.amax(dim=(2, 3), keepdim=True) + self.eps)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """Prepare a batch of CQTs.

        Parameters
        ----------
        h : torch.Tensor [shape=(B, 1, n_bins, n_frames)]
            CQT magnitudes.
        """
        h = self._normalize(h.clamp(min=0).pow(self.power))
        gen = torch.Generator().manual_seed(self.noise_seed)
        noise = torch.rand((1, *h.shape[1:]), generator=gen, dtype=h.dtype).to(h.device)
        h = self._normalize(h + self.eps * noise)
        return self.gain * h + self.bias


class _IBN(nn.Module):
    """Half the channels batch-normalised, half instance-normalised (authors' IBN)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.bn = nn.BatchNorm2d(channels // 2)
        self.inst = nn.InstanceNorm2d(channels // 2, affine=True)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        a, b = torch.chunk(h, 2, dim=1)
        return torch.cat([self.bn(a), self.inst(b)], dim=1)


class _PadConv(nn.Module):
    """3×3 convolution with "same" padding, no bias (key ``conv.weight``)."""

    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.conv(h)


class _ResBlock(nn.Module):
    """The authors' ``MyIBNResBlock`` (ibn="pre", no squeeze-excitation)."""

    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        mid = max(1, int(max(cin, cout) * 0.5))
        mid += mid % 2
        self.convs = nn.Sequential(
            _IBN(cin),
            nn.ReLU(),
            _PadConv(cin, mid, stride),
            nn.BatchNorm2d(mid),
            nn.ReLU(),
            _PadConv(mid, cout),
        )
        self.skip: nn.Module = (
            nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(), _PadConv(cin, cout, stride))
            if cin != cout or stride != 1
            else nn.Identity()
        )
        self.gain = nn.Parameter(torch.zeros(1))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.gain * self.convs(h) + self.skip(h)


class _GeM(nn.Module):
    """Generalised-mean pooling over all positions with a learned exponent (key ``p``)."""

    def __init__(self, init: float = 3.0, eps: float = 1e-6) -> None:
        super().__init__()
        self.p = nn.Parameter(torch.full((1, 1, 1), math.log(math.exp(init - 1) - 1)))
        self.eps = eps

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = h.flatten(start_dim=2)
        p = 1 + nn.functional.softplus(self.p)
        return h.clamp(min=self.eps).pow(p).mean(-1).pow(1 / p.squeeze(-1))


class ClewsNet(nn.Module):
    """CLEWS: a batch of segments ``(S, T)`` at 16 kHz → embeddings ``(S, zdim)``.

    Parameters
    ----------
    config : ClewsConfig
        Architecture numbers.
    """

    def __init__(self, config: ClewsConfig) -> None:
        super().__init__()
        c = config
        self.config = c
        self.cqt = nn.Sequential(
            ConstantQ(
                c.sample_rate,
                int(c.cqt_hop * c.sample_rate),
                n_bins=c.cqt_octaves * c.cqt_bins_per_octave,
                bins_per_octave=c.cqt_bins_per_octave,
                filter_scale=c.cqt_filter_scale,
            ),
            nn.AvgPool1d(c.cqt_pool, stride=c.cqt_pool),
        )
        c0, c1 = c.frontend_channels
        self.frontend = nn.Sequential(
            CQTPrepare(power=c.cqt_pow),
            nn.Conv2d(1, c0, (12, 3), stride=(1, 2), bias=False),
            nn.BatchNorm2d(c0),
            nn.ReLU(),
            nn.Conv2d(c0, c1, (12, 3), stride=2, bias=False),
        )
        blocks: list[nn.Module] = []
        cin = c1
        for n, cout, stride in zip(c.blocks, c.channels, c.down, strict=True):
            blocks.append(_ResBlock(cin, cout, stride=stride))
            blocks.extend(_ResBlock(cout, cout) for _ in range(n - 1))
            cin = cout
        self.backbone = nn.Sequential(*blocks)
        self.pool = _GeM()
        self.proj = nn.Sequential(nn.BatchNorm1d(cin), nn.Linear(cin, c.zdim, bias=False))

    def set_noise_seed(self, seed: int) -> None:
        """Seed of the front end's :math:`10^{-6}` noise.

        Parameters
        ----------
        seed : int
            Generator seed.
        """
        prep = cast(CQTPrepare, self.frontend[0])
        prep.noise_seed = int(seed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Embed a batch of segments.

        Parameters
        ----------
        x : torch.Tensor [shape=(S, T)]
            Segments of ``config.segment_samples`` samples.
        """
        h = self.cqt(x).unsqueeze(1)
        h = self.backbone(self.frontend(h))
        return self.proj(self.pool(h))


def shingle(y: np.ndarray, length: int, hop: int) -> np.ndarray:
    """Cut a signal into segments as CLEWS's ``prepare`` does (``get_frames``, repeat padding).

    The signal is extended by repeating it whole, then cut, to
    ``max(ceil((T - length) / hop), 0) * hop + length`` samples — so a short track is looped up
    to one full segment and the last segment of a long one is completed from its start — and
    framed with ``length`` and ``hop``.

    Parameters
    ----------
    y : numpy.ndarray [shape=(T,)]
        Mono signal, ``T >= 1``.
    length : int
        Segment length in samples.
    hop : int
        Hop between segment starts in samples.

    Returns
    -------
    numpy.ndarray [shape=(S, length)]
        Segments (a copy).
    """
    x = np.asarray(y)
    if x.ndim != 1 or len(x) < 1:
        raise DataError(expected("y", "a non-empty mono signal", x.shape))
    total = max(math.ceil((len(x) - length) / hop), 0) * hop + length
    if len(x) < total:
        x = np.tile(x, math.ceil(total / len(x)))
    x = x[:total]
    n = (total - length) // hop + 1
    return np.stack([x[i * hop : i * hop + length] for i in range(n)])
