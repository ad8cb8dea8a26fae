r"""Generic training loops of the offline encoders, one per objective (front-end features in).

All three take per-track front-end features
(:func:`~aria_tda_experiments.encoders.encoder.front_end`, ``(n_frames, n_bins)``), crop random
windows of ``window_seconds``, and optimise with AdamW (linear warm-up over the first 5 % of
``steps``, cosine decay to zero, gradients clipped to norm 1). Deterministic per seed: the weights
come from ``torch.manual_seed(seed)`` and every batch from ``numpy.random.default_rng([seed,
stream])``; torch runs on ``threads`` threads.

Objectives
----------
- :func:`train_version_contrastive` (CLEWS): a batch holds ``P = batch_size // views`` groups
  (works), ``views`` views each, cycling through the group's tracks (versions) in a random
  order — different versions whenever the group has them — each view randomly time-stretched
  (``±stretch``, linear interpolation), pitch-shifted (``±max_shift`` CQT bins, and with
  probability ``octave_shift`` 1 to ``max_octaves`` octaves up or down besides) and equalised
  (a random smooth curve of ``±eq_db``); with ``family_negatives``, that share of a batch's
  works comes in pairs whose first views share an instrument family. Supervised contrastive
  InfoNCE over the views (with two views, NT-Xent): for view :math:`i` with positives
  :math:`P(i)` (the other views of its group), :math:`\ell_i = -\frac{1}{|P(i)|}\sum_{j \in
  P(i)} \log \frac{e^{s_{ij}/\tau}}{\sum_{k \ne i} e^{s_{ik}/\tau}}`, :math:`s` the cosine
  similarity.
  With ``n_models > 1``, that many members are trained alike, member ``k`` with seed
  ``seed + k``, into an :class:`~aria_tda_experiments.encoders.models.EnsembleEncoder`.
- :func:`train_masked_prediction` (HuBERT/MERT): spans of ``mask_span`` token frames start at
  each frame with probability ``mask_prob / mask_span``; their stem outputs are replaced by the
  mask embedding; cross-entropy of the frame's token on the masked frames only.
- :func:`train_audio_text` (CLAP/CLIP): ``batch_size`` tracks and their captions; logits
  :math:`e^{t}\, a_i \cdot c_j` with a learned :math:`t`; symmetric cross-entropy whose target
  spreads evenly over the captions equal to the track's own (a batch often holds several
  tracks with one caption: they are all positives).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import numpy as np
import torch
from torch import nn

from aria_tda._progress import progress
from aria_tda.errors import DataError, ParameterError, expected
from aria_tda_experiments.encoders.config import ClapStyleConfig, ClewsStyleConfig, MertStyleConfig
from aria_tda_experiments.encoders.encoder import (
    build_model,
    frames_per_second,
    input_bins,
    moving_average,
)
from aria_tda_experiments.encoders.models import EnsembleEncoder

__all__ = ["caption_vocab", "train_audio_text", "train_masked_prediction",
           "train_version_contrastive"]


@contextmanager
def _torch_threads(n: int) -> Iterator[None]:
    old = torch.get_num_threads()
    torch.set_num_threads(max(1, int(n)))
    try:
        yield
    finally:
        torch.set_num_threads(old)


def _crop(feats: np.ndarray, size: int, rng: np.random.Generator,
          at: float | None = None) -> tuple[np.ndarray, int]:
    """A crop of ``size`` frames, random or starting near ``at`` (edge-padded when the track
    is shorter); and its start."""
    n = feats.shape[0]
    if n <= size:
        return np.pad(feats, ((0, size - n), (0, 0)), mode="edge"), 0
    a = int(rng.integers(0, n - size + 1)) if at is None else min(max(round(at), 0), n - size)
    return feats[a:a + size], a


def _fit(
    params: Sequence[nn.Parameter], loss_of: Callable[[int], torch.Tensor], *, steps: int,
    lr: float, weight_decay: float, progress_bar: bool | None, desc: str,
) -> tuple[list[float], float]:
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    warm = max(1, steps // 20)

    def factor(s: int) -> float:
        if s < warm:
            return (s + 1) / warm
        return 0.5 * (1.0 + math.cos(math.pi * (s - warm) / max(1, steps - warm)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    losses: list[float] = []
    t0 = time.perf_counter()
    for s in progress(range(steps), total=steps, desc=desc, unit="step", enabled=progress_bar):
        loss = loss_of(s)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    return losses, time.perf_counter() - t0


def _check_features(feats: Sequence[np.ndarray], n_bins: int) -> list[np.ndarray]:
    out = [np.asarray(f, dtype=np.float32) for f in feats]
    if not out:
        raise DataError(expected("features", "at least one training track", "none"))
    for i, f in enumerate(out):
        if f.ndim != 2 or f.shape[1] != n_bins or f.shape[0] < 1:
            raise ParameterError(expected(f"features[{i}]", f"shape (n_frames, {n_bins})",
                                          f.shape))
    return out


def _stretch_shift(x: np.ndarray, size: int, rate: float, shift: int) -> np.ndarray:
    """Resample a crop to ``size`` frames (time stretch) and roll it ``shift`` bins."""
    t = torch.from_numpy(np.ascontiguousarray(x.T))[None]  # (1, bins, frames)
    t = nn.functional.interpolate(t, size=size, mode="linear", align_corners=False)[0]
    if shift:
        fill = float(t.min())
        t = torch.roll(t, shift, dims=0)
        if shift > 0:
            t[:shift] = fill
        else:
            t[shift:] = fill
    return t.numpy()


def _draw_shift(rng: np.random.Generator, max_shift: int, octave_shift: float,
                bins_per_octave: int, max_octaves: int = 1) -> int:
    """A view's pitch shift in bins: uniform in ``±max_shift``, plus, with probability
    ``octave_shift``, 1 to ``max_octaves`` octaves (uniformly) up or down (no extra draw when
    ``octave_shift`` is 0, nor for the size when ``max_octaves`` is 1)."""
    shift = int(rng.integers(-max_shift, max_shift + 1))
    if octave_shift > 0 and rng.random() < octave_shift:
        n = 1 if max_octaves == 1 else int(rng.integers(1, max_octaves + 1))
        shift += n * bins_per_octave * (1 if rng.random() < 0.5 else -1)
    return shift


def _register(x: np.ndarray, gains: np.ndarray, bins_per_octave: int,
              whiten_bins: int) -> np.ndarray:
    """Add copies of a view's magnitudes an octave down and at harmonics 2-4, then re-whiten.

    ``x`` is a whitened log-CQT view ``(n_bins, n_frames)`` in dB; ``gains`` one gain per copy
    (octave down, harmonics 2, 3, 4); bins shifted past an edge are dropped.
    """
    lin = 10.0 ** (x.astype(np.float64) / 20.0)
    out = lin.copy()
    n = len(lin)
    offsets = [-bins_per_octave] + [round(bins_per_octave * math.log2(h)) for h in (2, 3, 4)]
    for g, off in zip(gains, offsets, strict=True):
        if off >= n or -off >= n:
            continue
        if off > 0:
            out[off:] += g * lin[:-off]
        else:
            out[:off] += g * lin[-off:]
    db = 20.0 * np.log10(out)
    if whiten_bins > 1:
        db = db - moving_average(db.T, whiten_bins).T
    return db.astype(np.float32)


def _same_family_firsts(tracks: Sequence[np.ndarray], families: np.ndarray, n_pairs: int,
                        rng: np.random.Generator) -> list[int | None]:
    """First views that pair works ``2i`` and ``2i+1`` (``i < n_pairs``) in a shared family.

    ``tracks[j]`` are the track indices of the batch's ``j``-th work; returns, per work, the
    track its first view must come from (a track in a family the pair's other work also has,
    chosen at random), or None (free: no pair, or the pair shares no family).
    """
    out: list[int | None] = [None] * len(tracks)
    for i in range(min(n_pairs, len(tracks) // 2)):
        a, b = tracks[2 * i], tracks[2 * i + 1]
        common = sorted(set(families[a]) & set(families[b]))
        if not common:
            continue
        f = common[int(rng.integers(len(common)))]
        out[2 * i] = int(rng.choice(a[families[a] == f]))
        out[2 * i + 1] = int(rng.choice(b[families[b] == f]))
    return out


def _supcon(z: torch.Tensor, labels: np.ndarray, temperature: float) -> torch.Tensor:
    """Supervised contrastive loss (Khosla et al. 2020, "out"): NT-Xent with two views."""
    lab = torch.from_numpy(labels).to(z.device)
    eye = torch.eye(len(lab), dtype=torch.bool, device=z.device)
    pos = (lab[:, None] == lab[None, :]) & ~eye
    logp = torch.log_softmax((z @ z.T / temperature).masked_fill(eye, float("-inf")), dim=1)
    return -(logp.masked_fill(~pos, 0.0).sum(dim=1) / pos.sum(dim=1)).mean()


def train_version_contrastive(
    features: Sequence[np.ndarray], groups: Sequence[int], *, config: ClewsStyleConfig,
    rates: Sequence[float] | None = None, families: Sequence[str] | None = None,
    seed: int = 0, threads: int = 1, progress_bar: bool | None = None, device: str = "cpu",
) -> tuple[nn.Module, dict[str, Any]]:
    """Train a clews-style encoder: views of the same group (work) are positives.

    Parameters
    ----------
    features : sequence of numpy.ndarray [shape=(n_frames, n_bins)]
        Front-end output (log-CQT) of each training track.
    groups : sequence of int
        Group (work) of each track; at least two groups.
    rates : sequence of float, optional
        Playback rate of each track relative to its group (a version's tempo scale). Given,
        the second view of a pair starts at the same musical position as the first (frame
        ``t·rate_a / rate_b``), so positives show the same passage; else crops are
        independent.
    families : sequence of str, optional
        Instrument family of each track; needed when ``config.family_negatives > 0``: then
        that share of each batch's works comes in pairs whose first views are in one family
        (two works, one timbre: negatives that timbre alone cannot tell apart).
    config : ClewsStyleConfig
        Sizes and training settings.
    seed : int
        Seeds the weights and the batches.
    threads : int
        Torch threads.
    progress_bar : bool, optional
        Draw a progress bar.
    device : str
        Torch device of the training (the batches are made on the CPU either way; the model
        comes back on the CPU). Default CPU, which the checkpoints of the demo are trained on.

    Returns
    -------
    (torch.nn.Module, dict)
        The trained :class:`~aria_tda_experiments.encoders.models.ConvEncoder` (an
        :class:`~aria_tda_experiments.encoders.models.EnsembleEncoder` of them with ``n_models >
        1``; eval mode) and the training record: ``losses`` per step (the members' mean),
        ``seconds`` (all members), ``steps``, ``n_tracks``, ``n_groups``, ``n_models``.
    """
    feats = _check_features(features, input_bins(config))
    g = np.asarray(groups)
    if g.shape != (len(feats),):
        raise ParameterError(expected("groups", f"one group per track ({len(feats)})", g.shape))
    r = None if rates is None else np.asarray(rates, dtype=np.float64)
    if r is not None and (r.shape != g.shape or not np.all(r > 0)):
        raise ParameterError(expected("rates", f"{len(feats)} positive rates", r.shape))
    fam = None
    if config.family_negatives > 0:
        if families is None or len(families) != len(feats):
            raise ParameterError(expected(
                "families", f"one instrument family per track ({len(feats)}) with "
                f"family_negatives={config.family_negatives}",
                None if families is None else len(families)))
        fam = np.asarray([str(f) for f in families])
    members = [np.flatnonzero(g == v) for v in np.unique(g)]
    if len(members) < 2:
        raise DataError(expected("groups", "at least two groups (works)", len(members)))
    size = max(4, round(config.window_seconds * frames_per_second(config)))
    n_views = config.views
    n_groups = min(len(members), max(2, config.batch_size // n_views))

    def train_one(member_seed: int) -> tuple[nn.Module, list[float], float]:
        rng = np.random.default_rng([member_seed, 11])
        torch.manual_seed(member_seed)
        model = build_model(config.replace(n_models=1)).to(dev)
        model.train()

        def view(track: int, at: float | None = None) -> tuple[np.ndarray, int]:
            rate = 1.0 + float(rng.uniform(-config.stretch, config.stretch))
            crop, start = _crop(feats[track], max(2, round(size * rate)), rng, at)
            shift = _draw_shift(rng, config.max_shift, config.octave_shift,
                                config.bins_per_octave, config.max_octaves)
            out = _stretch_shift(crop, size, rate, 0 if config.fold_octaves else shift)
            if config.fold_octaves and shift:  # a transposition rolls the pitch classes
                b = config.bins_per_octave
                out = np.tile(np.roll(out[:b], shift, axis=0), (2, 1))
            if config.registration > 0:
                out = _register(out, rng.uniform(0.0, config.registration, size=4),
                                config.bins_per_octave, config.whiten_bins)
            if config.eq_db > 0:
                k = np.arange(out.shape[0]) / out.shape[0]
                curve = sum(rng.uniform(-1, 1) * np.cos(np.pi * j * k) for j in range(1, 4))
                out = out + (config.eq_db / 3.0 * curve)[:, None].astype(np.float32)
            return out, start

        n_pairs = round(config.family_negatives * n_groups / 2)

        def loss_of(step: int) -> torch.Tensor:
            pick = rng.choice(len(members), size=n_groups, replace=False)
            firsts: list[int | None] = [None] * len(pick)
            if fam is not None and n_pairs:
                firsts = _same_family_firsts([members[gi] for gi in pick], fam, n_pairs, rng)
            xs = []
            for gi, first in zip(pick, firsts, strict=True):
                m = rng.permutation(members[gi])
                if first is not None:  # the paired first view, then the others in order
                    m = np.concatenate([[first], m[m != first]])
                a = int(m[0])
                va, start = view(a)
                xs.append(va)
                for k in range(1, n_views):
                    b = int(m[k % len(m)])
                    at = None if r is None else start * r[a] / r[b]
                    xs.append(view(b, at)[0])
            z = model(torch.from_numpy(np.stack(xs)).to(dev))
            return _supcon(z, np.repeat(np.arange(len(pick)), n_views), config.temperature)

        losses, secs = _fit(list(model.parameters()), loss_of, steps=config.steps, lr=config.lr,
                            weight_decay=config.weight_decay, progress_bar=progress_bar,
                            desc="clews-style")
        model.eval()
        return model.cpu(), losses, secs

    dev = torch.device(device)
    with _torch_threads(threads):
        runs = [train_one(seed + k) for k in range(config.n_models)]
    if config.n_models == 1:
        model, losses, secs = runs[0]
    else:
        model = EnsembleEncoder([m for m, _, _ in runs]).eval()
        losses = [float(v) for v in np.mean([lo for _, lo, _ in runs], axis=0)]
        secs = sum(t for _, _, t in runs)
    return model, {"losses": losses, "seconds": round(secs, 3), "steps": config.steps,
                   "n_tracks": len(feats), "n_groups": len(members),
                   "n_models": config.n_models}


def train_masked_prediction(
    features: Sequence[np.ndarray], tokens: Sequence[np.ndarray], *, config: MertStyleConfig,
    seed: int = 0, threads: int = 1, progress_bar: bool | None = None,
) -> tuple[nn.Module, dict[str, Any]]:
    """Train a mert-style encoder: predict the token of masked frames.

    Parameters
    ----------
    features : sequence of numpy.ndarray [shape=(n_frames, n_mels)]
        Front-end output (log-mel) of each training track.
    tokens : sequence of numpy.ndarray [shape=(n_frames // stem_stride,)]
        The token of each token frame (``0 <= token < config.vocab``), frame ``i`` covering
        front-end frames ``[i·stride, (i+1)·stride)``.
    config : MertStyleConfig
        Sizes and training settings.
    seed : int
        Seeds the weights, the batches and the masks.
    threads : int
        Torch threads.
    progress_bar : bool, optional
        Draw a progress bar.

    Returns
    -------
    (torch.nn.Module, dict)
        The trained :class:`~aria_tda_experiments.encoders.models.MaskedFrameModel` and the record:
        ``losses``, ``masked_accuracy`` (last 10 % of steps), ``seconds``, ``steps``,
        ``n_tracks``.
    """
    feats = _check_features(features, config.n_mels)
    s = config.stem_stride
    toks = [np.asarray(t, dtype=np.int64) for t in tokens]
    if len(toks) != len(feats):
        raise ParameterError(expected("tokens", f"one array per track ({len(feats)})", len(toks)))
    for i, (f, t) in enumerate(zip(feats, toks, strict=True)):
        if t.ndim != 1 or len(t) < 1 or len(t) > f.shape[0] // s:
            raise ParameterError(expected(f"tokens[{i}]", f"1 to {f.shape[0] // s} frames",
                                          t.shape))
        if t.min() < 0 or t.max() >= config.vocab:
            raise ParameterError(expected(f"tokens[{i}]", f"tokens in 0..{config.vocab - 1}",
                                          f"{t.min()}..{t.max()}"))
    size = max(1, round(config.window_seconds * frames_per_second(config) / s))
    rng = np.random.default_rng([seed, 12])
    p_start = config.mask_prob / config.mask_span
    hits: list[float] = []
    with _torch_threads(threads):
        torch.manual_seed(seed)
        model = build_model(config)
        model.train()

        def loss_of(step: int) -> torch.Tensor:
            mels, tgts = [], []
            for i in rng.integers(0, len(feats), size=config.batch_size):
                t = toks[i]
                n = min(size, len(t))
                a = int(rng.integers(0, len(t) - n + 1))
                mels.append(np.pad(feats[i][a * s:(a + n) * s], ((0, (size - n) * s), (0, 0)),
                                   mode="edge"))
                tgts.append(np.pad(t[a:a + n], (0, size - n), constant_values=-100))
            starts = rng.random((len(mels), size)) < p_start
            mask = np.zeros_like(starts)
            for k in range(config.mask_span):
                mask[:, k:] |= starts[:, : size - k]
            target = torch.from_numpy(np.stack(tgts))
            m = torch.from_numpy(mask) & (target >= 0)
            if not bool(m.any()):
                m[0, 0] = target[0, 0] >= 0
            logits = model(torch.from_numpy(np.stack(mels)), torch.from_numpy(mask))
            if step >= config.steps - max(1, config.steps // 10):
                hits.append(float((logits[m].argmax(-1) == target[m]).float().mean()))
            return nn.functional.cross_entropy(logits[m], target[m])

        losses, secs = _fit(list(model.parameters()), loss_of, steps=config.steps, lr=config.lr,
                            weight_decay=config.weight_decay, progress_bar=progress_bar,
                            desc="mert-style")
    model.eval()
    return model, {"losses": losses, "masked_accuracy": round(float(np.mean(hits)), 4),
                   "seconds": round(secs, 3), "steps": config.steps, "n_tracks": len(feats)}


def caption_vocab(captions: Sequence[str]) -> list[str]:
    """The vocabulary of the captions: ``["<unk>", *sorted words]`` (lower-cased, split on
    spaces and commas).

    Parameters
    ----------
    captions : sequence of str
        Training captions.
    """
    words = {w for c in captions for w in _words(c)}
    return ["<unk>", *sorted(words)]


def _words(caption: str) -> list[str]:
    return [w for w in caption.lower().replace(",", " ").split() if w]


def caption_ids(captions: Sequence[str], vocab: Sequence[str]) -> tuple[torch.Tensor,
                                                                         torch.Tensor]:
    """Word ids and offsets of captions for
    :class:`~aria_tda_experiments.encoders.models.TextTower`.

    Parameters
    ----------
    captions : sequence of str
        Captions (unknown words map to id 0).
    vocab : sequence of str
        From :func:`caption_vocab`.
    """
    index = {w: i for i, w in enumerate(vocab)}
    ids: list[int] = []
    offsets: list[int] = []
    for c in captions:
        offsets.append(len(ids))
        ids += [index.get(w, 0) for w in _words(c)] or [0]
    return torch.tensor(ids, dtype=torch.long), torch.tensor(offsets, dtype=torch.long)


def train_audio_text(
    features: Sequence[np.ndarray], captions: Sequence[str], *, config: ClapStyleConfig,
    seed: int = 0, threads: int = 1, progress_bar: bool | None = None,
) -> tuple[nn.Module, dict[str, Any]]:
    """Train a clap-style encoder: audio and caption towers, symmetric InfoNCE.

    Parameters
    ----------
    features : sequence of numpy.ndarray [shape=(n_frames, n_mels)]
        Front-end output (log-mel) of each training track.
    captions : sequence of str
        One caption per track.
    config : ClapStyleConfig
        Sizes and training settings.
    seed : int
        Seeds the weights and the batches.
    threads : int
        Torch threads.
    progress_bar : bool, optional
        Draw a progress bar.

    Returns
    -------
    (torch.nn.Module, dict)
        The trained ``ModuleDict`` (``audio``, ``text``, ``scale``) and the record: ``losses``,
        ``seconds``, ``steps``, ``n_tracks``, ``n_captions`` and ``vocab`` (the caption words,
        needed to rebuild the text tower).
    """
    feats = _check_features(features, config.n_mels)
    caps = [str(c) for c in captions]
    if len(caps) != len(feats):
        raise ParameterError(expected("captions", f"one per track ({len(feats)})", len(caps)))
    vocab = caption_vocab(caps)
    cap_index = {c: i for i, c in enumerate(sorted(set(caps)))}
    cap_of = np.array([cap_index[c] for c in caps])
    size = max(4, round(config.window_seconds * frames_per_second(config)))
    rng = np.random.default_rng([seed, 13])
    with _torch_threads(threads):
        torch.manual_seed(seed)
        model = cast(nn.ModuleDict, build_model(config, vocab_size=len(vocab)))
        model.train()
        audio, text = model["audio"], model["text"]
        log_scale = cast(nn.ParameterDict, model["scale"])["log_scale"]

        def loss_of(step: int) -> torch.Tensor:
            pick = rng.choice(len(feats), size=min(config.batch_size, len(feats)),
                              replace=False)
            xs = np.stack([_crop(feats[i], size, rng)[0].T for i in pick])
            a = audio(torch.from_numpy(np.ascontiguousarray(xs)))
            ids, offsets = caption_ids([caps[i] for i in pick], vocab)
            t = text(ids, offsets)
            logits = a @ t.T * log_scale.clamp(max=math.log(100.0)).exp()
            same = torch.from_numpy(cap_of[pick][:, None] == cap_of[pick][None, :]).float()
            target = same / same.sum(dim=1, keepdim=True)
            return 0.5 * (nn.functional.cross_entropy(logits, target)
                          + nn.functional.cross_entropy(logits.T, target))

        losses, secs = _fit(list(model.parameters()), loss_of, steps=config.steps, lr=config.lr,
                            weight_decay=config.weight_decay, progress_bar=progress_bar,
                            desc="clap-style")
    model.eval()
    return model, {"losses": losses, "seconds": round(secs, 3), "steps": config.steps,
                   "n_tracks": len(feats), "n_captions": len(cap_index), "vocab": vocab}
