"""The shape of LAION-CLAP's audio tower: :class:`HTSATConfig`, its published values, and how a
checkpoint's tensors determine it.

Conventions (numbers read from LAION-CLAP's public code, github.com/LAION-AI/CLAP,
``src/laion_clap/clap_module``): ``model_configs/HTSAT-base.json`` gives the audio front end —
48 kHz, ``clip_samples`` 480,000 (10 s), ``window_size`` (n_fft) 1024, ``hop_size`` 480, 64 mel
bins, ``fmin`` 50 Hz, ``fmax`` 14 kHz — and ``embed_dim`` 1024, the input width of the audio
projection. ``htsat.py: create_htsat_model`` builds the "base" tower with ``spec_size`` 256,
``patch_size`` 4, ``patch_stride`` (4, 4), ``embed_dim`` 128, ``depths`` [2, 2, 12, 2],
``num_heads`` [4, 8, 16, 32], ``window_size`` 8 (``mlp_ratio`` 4, ``qkv_bias``, LayerNorm,
``patch_norm``, no absolute position embedding: the class defaults). The tower's output width is
``128 * 2**3 = 1024`` = the projection's input. ``model.py: CLAP`` projects with
``Linear(1024, 512) → ReLU → Linear(512, 512)`` (``joint_embed_shape`` 512, ``mlp_act`` "relu")
and ``get_audio_embedding`` L2-normalises the result.

The widths and depths of a checkpoint are read from its tensors (:func:`config_from_state_dict`),
so the published checkpoint and the small random ones the tests write load through the same code;
the front-end constants that no tensor records (rate, hop, ``spec_size``) are CLAP's.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aria_tda.errors import FileFormatError

__all__ = ["BASE", "SMALL", "HTSATConfig", "config_from_state_dict"]


@dataclass(frozen=True)
class HTSATConfig:
    """Hyper-parameters of the HTSAT audio tower and its projection (CLAP's names in brackets).

    Attributes
    ----------
    sample_rate : int
        Input rate in Hz [``sample_rate``].
    clip_samples : int
        Samples per window [``clip_samples``]: 10 s at 48 kHz.
    n_fft : int
        STFT window and FFT length [``window_size``].
    hop : int
        STFT hop [``hop_size``].
    mel_bins : int
        Mel bands [``mel_bins``].
    fmin, fmax : float
        Mel filterbank range in Hz.
    spec_size : int
        Side of the square "image" the spectrogram is folded into.
    patch_size : int
        Patch side (= patch stride).
    embed_dim : int
        Width of the first Swin stage (doubles per stage).
    depths : tuple of int
        Swin blocks per stage.
    num_heads : tuple of int
        Attention heads per stage.
    window_size : int
        Swin attention window side.
    mlp_ratio : float
        Hidden width of each block's MLP over its width.
    joint_dim : int
        Width of the projected (joint audio–text) embedding [``joint_embed_shape``].
    """

    sample_rate: int = 48_000
    clip_samples: int = 480_000
    n_fft: int = 1024
    hop: int = 480
    mel_bins: int = 64
    fmin: float = 50.0
    fmax: float = 14_000.0
    spec_size: int = 256
    patch_size: int = 4
    embed_dim: int = 128
    depths: tuple[int, ...] = (2, 2, 12, 2)
    num_heads: tuple[int, ...] = (4, 8, 16, 32)
    window_size: int = 8
    mlp_ratio: float = 4.0
    joint_dim: int = 512

    @property
    def num_features(self) -> int:
        """Width of the tower's output (the projection's input): 1024 for HTSAT-base."""
        return self.embed_dim * 2 ** (len(self.depths) - 1)

    @property
    def freq_ratio(self) -> int:
        """How many time chunks are stacked along frequency: ``spec_size // mel_bins`` (4)."""
        return self.spec_size // self.mel_bins

    @property
    def window_seconds(self) -> float:
        """Length of one input window in seconds (10)."""
        return self.clip_samples / self.sample_rate

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-serialisable mapping (tuples as lists)."""
        fields = dataclasses.asdict(self).items()
        return {k: list(v) if isinstance(v, tuple) else v for k, v in fields}


#: LAION-CLAP HTSAT-base, non-fusion (``music_speech_audioset_epoch_15_esc_89.98.pt``).
BASE = HTSATConfig()
#: A narrow, shallow tower with CLAP's front end and geometry, for fast tests.
SMALL = HTSATConfig(embed_dim=8, depths=(2, 2, 2, 2), num_heads=(1, 2, 2, 4), joint_dim=16)

_BLOCK = re.compile(r"^layers\.(\d+)\.blocks\.(\d+)\.norm1\.weight$")


def config_from_state_dict(tower: Mapping[str, Any], projection: Mapping[str, Any]) -> HTSATConfig:
    """Read the tower's widths and depths from its tensors (CLAP's front-end constants kept).

    Parameters
    ----------
    tower : mapping
        The audio tower's tensors, keys without the ``audio_branch.`` prefix.
    projection : mapping
        The projection's tensors, keys without the ``audio_projection.`` prefix.

    Returns
    -------
    HTSATConfig
    """

    def shape(where: Mapping[str, Any], key: str, prefix: str) -> tuple[int, ...]:
        if key not in where:
            raise FileFormatError(f"weights: the checkpoint has no {prefix}{key}")
        return tuple(where[key].shape)

    a = "audio_branch."
    embed_dim, _, patch, _ = shape(tower, "patch_embed.proj.weight", a)
    n_freq, mel_bins = shape(tower, "logmel_extractor.melW", a)
    blocks: dict[int, int] = {}
    for key in tower:
        m = _BLOCK.match(key)
        if m:
            stage, block = int(m.group(1)), int(m.group(2))
            blocks[stage] = max(blocks.get(stage, 0), block + 1)
    if not blocks or sorted(blocks) != list(range(len(blocks))):
        raise FileFormatError(
            f"weights: expected Swin stages {a}layers.0..N.blocks.*, found stages {sorted(blocks)}"
        )
    depths = tuple(blocks[i] for i in range(len(blocks)))
    heads = tuple(
        shape(tower, f"layers.{i}.blocks.0.attn.relative_position_bias_table", a)[1]
        for i in range(len(depths))
    )
    table = shape(tower, "layers.0.blocks.0.attn.relative_position_bias_table", a)[0]
    window = (math.isqrt(table) + 1) // 2
    if (2 * window - 1) ** 2 != table:
        raise FileFormatError(f"weights: relative-position table of {table} rows is not square")
    joint_dim = shape(projection, "2.weight", "audio_projection.")[0]
    hidden = shape(tower, "layers.0.blocks.0.mlp.fc1.weight", a)[0]
    return dataclasses.replace(
        BASE,
        n_fft=2 * (n_freq - 1),
        mel_bins=mel_bins,
        patch_size=patch,
        embed_dim=embed_dim,
        depths=depths,
        num_heads=heads,
        window_size=window,
        mlp_ratio=hidden / embed_dim,
        joint_dim=joint_dim,
    )
