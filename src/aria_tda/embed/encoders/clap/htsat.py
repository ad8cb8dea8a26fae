"""HTSAT, the Swin-Transformer audio tower of LAION-CLAP, in eval mode, and CLAP's audio projection.

ARIA's own implementation of the architecture in LAION-CLAP's ``clap_module/htsat.py``
(``HTSAT_Swin_Transformer``, non-fusion) and ``model.py`` (``audio_projection``), written from
reading that code; module and parameter names are CLAP's so its ``state_dict`` loads unchanged.
Only what the audio embedding needs is built: no SpecAugment, mixup, random crop or stochastic
depth (CLAP disables them in eval mode), and not the sound-event head (``tscam_conv``, ``head``),
whose output the embedding never uses.

Forward pass of one 10 s window (batch ``B``, HTSAT-base numbers):

1. log-mel ``(B, 1, 1001, 64)`` (:mod:`.frontend`), then ``bn0`` — a ``BatchNorm2d`` over the
   64 mel bins, running statistics;
2. ``reshape_wav2img``: bicubic resampling of the time axis to ``spec_size * freq_ratio = 1024``
   frames (``align_corners=True``), then the four 256-frame chunks stacked along frequency →
   a ``(B, 1, 256, 256)`` image;
3. ``patch_embed``: 4×4 convolution with stride 4 → 64×64 tokens of width 128, LayerNorm;
4. four Swin stages of depths 2, 2, 12, 2 (window 8, every second block shifted by 4 with the
   Swin attention mask; relative-position bias per head), patch merging between stages
   (64² → 32² → 16² → 8² tokens, width 128 → 1024);
5. final LayerNorm, mean over all 64 tokens → ``embedding`` ``(B, 1024)`` (CLAP's
   ``latent_output``; its frequency-group reshape before the mean does not change a mean);
6. ``audio_projection``: ``Linear(1024, 512) → ReLU → Linear(512, 512)``; the encoder then
   L2-normalises, as ``CLAP.get_audio_embedding`` does.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from aria_tda.embed.encoders.clap.config import HTSATConfig
from aria_tda.embed.encoders.clap.frontend import LogMel, Spectrogram

__all__ = ["ClapAudio", "HTSATTower", "derived_buffers"]


def _partition(x: torch.Tensor, w: int) -> torch.Tensor:
    """``(B, H, W, C)`` → ``(B * nW, w * w, C)`` non-overlapping windows, row-major."""
    b, h, wd, c = x.shape
    x = x.view(b, h // w, w, wd // w, w, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, w * w, c)


def _unpartition(windows: torch.Tensor, w: int, h: int, wd: int) -> torch.Tensor:
    """Inverse of :func:`_partition`: ``(B * nW, w * w, C)`` → ``(B, H, W, C)``."""
    c = windows.shape[-1]
    x = windows.view(-1, h // w, wd // w, w, w, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, h, wd, c)


def _relative_position_index(w: int) -> torch.Tensor:
    """Index into the ``(2w-1)²``-row bias table for every pair of positions in a window."""
    coords = torch.stack(torch.meshgrid(torch.arange(w), torch.arange(w), indexing="ij")).flatten(1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (w - 1)
    return rel[:, :, 0] * (2 * w - 1) + rel[:, :, 1]


def _shift_mask(h: int, wd: int, w: int, shift: int) -> torch.Tensor:
    """Swin's mask for shifted windows: 0 within a region, -100 across regions, ``(nW, w², w²)``."""
    label = torch.zeros((1, h, wd, 1))
    cuts = (slice(0, -w), slice(-w, -shift), slice(-shift, None))
    region = 0
    for rows in cuts:
        for cols in cuts:
            label[:, rows, cols, :] = region
            region += 1
    windows = _partition(label, w).squeeze(-1)
    diff = windows[:, None, :] - windows[:, :, None]
    return torch.where(diff != 0, torch.tensor(-100.0), torch.tensor(0.0))


class _Attention(nn.Module):
    relative_position_index: torch.Tensor

    def __init__(self, dim: int, window: int, heads: int) -> None:
        super().__init__()
        self.heads, self.window = heads, window
        self.relative_position_bias_table = nn.Parameter(torch.zeros((2 * window - 1) ** 2, heads))
        self.register_buffer("relative_position_index", _relative_position_index(window), False)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        bw, n, c = x.shape  # (batch * windows, tokens per window, width)
        qkv = self.qkv(x).view(bw, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        idx = self.relative_position_index.reshape(-1)
        bias = self.relative_position_bias_table[idx].view(n, n, -1).permute(2, 0, 1)
        if mask is None:
            out = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], attn_mask=bias)
        else:
            nw = mask.shape[0]
            q, k, v = (t.reshape(bw // nw, nw, self.heads, n, -1) for t in qkv)
            full = bias[None, None] + mask[None, :, None]
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=full)
            out = out.reshape(bw, self.heads, n, -1)
        return self.proj(out.transpose(1, 2).reshape(bw, n, c))


class _Mlp(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


class _SwinBlock(nn.Module):
    attn_mask: torch.Tensor | None

    def __init__(self, dim: int, res: int, heads: int, window: int, shift: int, mlp: float) -> None:
        super().__init__()
        if res <= window:  # a window as large as the map: no partition, no shift (as CLAP)
            window, shift = res, 0
        self.res, self.window, self.shift = res, window, shift
        self.norm1 = nn.LayerNorm(dim)
        self.attn = _Attention(dim, window, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = _Mlp(dim, int(dim * mlp))
        mask = _shift_mask(res, res, window, shift) if shift else None
        self.register_buffer("attn_mask", mask, False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        h = self.norm1(x).view(b, self.res, self.res, c)
        if self.shift:
            h = torch.roll(h, shifts=(-self.shift, -self.shift), dims=(1, 2))
        h = self.attn(_partition(h, self.window), self.attn_mask)
        h = _unpartition(h, self.window, self.res, self.res)
        if self.shift:
            h = torch.roll(h, shifts=(self.shift, self.shift), dims=(1, 2))
        x = x + h.reshape(b, n, c)
        return x + self.mlp(self.norm2(x))


class _PatchMerging(nn.Module):
    def __init__(self, dim: int, res: int) -> None:
        super().__init__()
        self.res = res
        self.norm = nn.LayerNorm(4 * dim)
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, _, c = x.shape
        x = x.view(b, self.res, self.res, c)
        # CLAP's (and Swin's) order of the four 2×2 neighbours: (0,0), (1,0), (0,1), (1,1)
        x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]], -1)
        return self.reduction(self.norm(x.view(b, -1, 4 * c)))


class _Stage(nn.Module):
    def __init__(self, cfg: HTSATConfig, i: int, res: int) -> None:
        super().__init__()
        dim = cfg.embed_dim * 2**i
        self.blocks = nn.ModuleList(
            _SwinBlock(dim, res, cfg.num_heads[i], cfg.window_size,
                       0 if j % 2 == 0 else cfg.window_size // 2, cfg.mlp_ratio)
            for j in range(cfg.depths[i])
        )
        last = i == len(cfg.depths) - 1
        self.downsample = None if last else _PatchMerging(dim, res)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x if self.downsample is None else self.downsample(x)


class _PatchEmbed(nn.Module):
    def __init__(self, cfg: HTSATConfig) -> None:
        super().__init__()
        p = cfg.patch_size
        self.proj = nn.Conv2d(1, cfg.embed_dim, kernel_size=p, stride=p)
        self.norm = nn.LayerNorm(cfg.embed_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.proj(x).flatten(2).transpose(1, 2))


class HTSATTower(nn.Module):
    """CLAP's ``audio_branch`` (HTSAT, non-fusion): waveforms ``(B, samples)`` → ``(B, width)``.

    Parameters
    ----------
    cfg : HTSATConfig
        Widths, depths and front-end settings.
    """

    def __init__(self, cfg: HTSATConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.spectrogram_extractor = Spectrogram(cfg.n_fft, cfg.hop)
        self.logmel_extractor = LogMel(cfg.sample_rate, cfg.n_fft, cfg.mel_bins, cfg.fmin, cfg.fmax)
        self.bn0 = nn.BatchNorm2d(cfg.mel_bins)
        self.patch_embed = _PatchEmbed(cfg)
        grid = cfg.spec_size // cfg.patch_size
        self.layers = nn.ModuleList(_Stage(cfg, i, grid // 2**i) for i in range(len(cfg.depths)))
        self.norm = nn.LayerNorm(cfg.num_features)

    def image(self, y: torch.Tensor) -> torch.Tensor:
        """Waveforms ``(B, samples)`` → the normalised spectrogram image ``(B, 1, S, S)``.

        Parameters
        ----------
        y : torch.Tensor
            Waveforms ``(B, clip_samples)``.
        """
        cfg = self.cfg
        x = self.logmel_extractor(self.spectrogram_extractor(y))  # (B, 1, T, mel)
        x = self.bn0(x.transpose(1, 3)).transpose(1, 3)
        target_t = cfg.spec_size * cfg.freq_ratio
        if x.shape[2] > target_t:
            raise ValueError(f"{x.shape[2]} frames exceed the tower's {target_t}")
        if x.shape[2] < target_t:
            x = F.interpolate(x, (target_t, x.shape[3]), mode="bicubic", align_corners=True)
        b = x.shape[0]
        x = x.permute(0, 1, 3, 2).reshape(b, 1, cfg.mel_bins, cfg.freq_ratio, cfg.spec_size)
        return x.permute(0, 1, 3, 2, 4).reshape(b, 1, cfg.freq_ratio * cfg.mel_bins, cfg.spec_size)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        """Waveforms ``(B, clip_samples)`` → CLAP's ``embedding`` ``(B, num_features)``.

        Parameters
        ----------
        y : torch.Tensor
            Waveforms ``(B, clip_samples)``.
        """
        x = self.patch_embed(self.image(y))
        for stage in self.layers:
            x = stage(x)
        return self.norm(x).mean(dim=1)


class ClapAudio(nn.Module):
    """The audio tower and its projection, named as in CLAP's state dict (without ``module.``).

    Parameters
    ----------
    cfg : HTSATConfig
        Architecture.
    """

    def __init__(self, cfg: HTSATConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.audio_branch = HTSATTower(cfg)
        self.audio_projection = nn.Sequential(
            nn.Linear(cfg.num_features, cfg.joint_dim),
            nn.ReLU(),
            nn.Linear(cfg.joint_dim, cfg.joint_dim),
        )

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        """Waveforms ``(B, clip_samples)`` → L2-normalised embeddings ``(B, joint_dim)``.

        Parameters
        ----------
        y : torch.Tensor
            Waveforms ``(B, clip_samples)``.
        """
        return F.normalize(self.audio_projection(self.audio_branch(y)), dim=-1)


def derived_buffers(model: ClapAudio) -> dict[str, torch.Tensor]:
    """The buffers CLAP saves but that follow from the geometry (``audio_branch.``-relative keys):
    each block's ``attn.relative_position_index`` and, for shifted blocks, ``attn_mask``.

    Parameters
    ----------
    model : ClapAudio
        A built model.
    """
    out: dict[str, torch.Tensor] = {}
    for name, buf in model.audio_branch.named_buffers():
        if name.endswith("relative_position_index") or name.endswith("attn_mask"):
            out[name] = buf
    return out
