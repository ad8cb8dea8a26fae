"""Reading and writing LAION-CLAP checkpoints: a restricted unpickler and the audio-tower keys.

**The file.** LAION-CLAP's training loop (``training/main.py``) saves
``{"epoch", "name", "state_dict", "optimizer" (or "<group>_optimizer"), ["scaler"]}`` with
``torch.save``; ``state_dict`` is the ``DistributedDataParallel`` model's, so its keys start with
``module.`` (``clap_module/factory.py: load_state_dict`` strips that prefix; so does ARIA, and a
bare state dict without ``state_dict`` is accepted as CLAP accepts it). Its learning-rate
schedule (``training/scheduler.py: cosine_lr``) writes ``numpy.float64`` values into the
optimizer's ``param_groups``, so the pickle holds numpy scalars (``numpy.core.multiarray.scalar``
and ``numpy.dtype``). PyTorch ≥ 2.6 loads with ``weights_only=True`` by default and refuses those
globals ("Unsupported global: GLOBAL numpy.core.multiarray.scalar" — the error users of these
checkpoints report, e.g. github.com/Audio-AGI/AudioSep/pull/51, whose author also found pickle
protocol 4, opcode 149, which torch's weights-only unpickler rejects; ARIA's tests reproduce both
refusals on files written like CLAP's, not on the 2.3 GB file itself). ``weights_only=False``
would run whatever code the pickle names.

**ARIA's loader** therefore never uses ``weights_only=False``: :func:`read_checkpoint` passes
torch a pickle module whose ``find_class`` resolves only tensor-rebuilding functions,
``OrderedDict`` and numpy's scalar/array/dtype constructors (with the old ``numpy.core`` module
names mapped to ``numpy._core``); every other global (an ``argparse.Namespace``, a custom class —
or ``os.system``) becomes an inert placeholder object, so no code named in the file runs, any
pickle protocol works, and only tensors are accepted where weights are expected.

**The keys.** ARIA builds ``audio_branch.*`` and ``audio_projection.*`` and loads them strictly
(every tensor present, nothing unexpected, shapes equal). Ignored on purpose: the text tower and
its heads (``text_branch.*``, ``text_projection.*``, ``text_transform.*``, and the ``transformer``
text model's ``token_embedding``, ``positional_embedding``, ``ln_final.*``), ``audio_transform.*``
(an MLP that ``get_audio_embedding`` does not apply), ``logit_scale_a/t``, and the tower's
sound-event head (``audio_branch.tscam_conv.*``, ``audio_branch.head.*``). The geometry buffers
``relative_position_index`` and ``attn_mask`` are checked against the ones ARIA computes.
"""

from __future__ import annotations

import importlib
import os
import pickle
import types
import zipfile
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from aria_tda._inert_pickle import inert_class
from aria_tda.errors import FileFormatError, expected

__all__ = [
    "AUDIO_PREFIXES", "IGNORED_PREFIXES", "UNUSED_AUDIO_PREFIXES", "load_audio_weights",
    "read_checkpoint", "split_state_dict",
]

AUDIO_PREFIXES = ("audio_branch.", "audio_projection.")
IGNORED_PREFIXES = (
    "text_branch.", "text_projection.", "text_transform.", "token_embedding.",
    "positional_embedding", "ln_final.", "audio_transform.", "logit_scale_a", "logit_scale_t",
)
#: audio-branch tensors of the sound-event head, present in checkpoints, unused by the embedding
UNUSED_AUDIO_PREFIXES = ("tscam_conv.", "head.")
#: fusion-model parts (``630k-fusion``-style checkpoints), named in the refusal
_FUSION_MARKERS = ("fusion_model", "mel_conv1d", "mel_conv2d")

_ALLOWED: dict[tuple[str, str], Any] = {
    ("collections", "OrderedDict"): OrderedDict,
    ("numpy", "dtype"): np.dtype,
    ("numpy", "ndarray"): np.ndarray,
    ("_codecs", "encode"): __import__("codecs").encode,  # protocol-2 pickles of bytes
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "bytearray"): bytearray,
}
try:  # numpy >= 2 (numpy.core is a deprecated alias there); numpy 1.x has only numpy.core
    _multiarray = importlib.import_module("numpy._core.multiarray")
except ImportError:  # pragma: no cover - numpy 1.x
    _multiarray = importlib.import_module("numpy.core.multiarray")
for _mod in ("numpy.core.multiarray", "numpy._core.multiarray"):
    _ALLOWED[(_mod, "scalar")] = _multiarray.scalar
    _ALLOWED[(_mod, "_reconstruct")] = _multiarray._reconstruct
for _name in ("_rebuild_tensor", "_rebuild_tensor_v2", "_rebuild_tensor_v3", "_rebuild_parameter",
              "_rebuild_parameter_with_state"):
    if hasattr(torch._utils, _name):
        _ALLOWED[("torch._utils", _name)] = getattr(torch._utils, _name)
_DTYPES = ("Float64DType", "Float32DType", "Float16DType", "Int64DType", "Int32DType", "BoolDType")
for _dt in _DTYPES:
    if hasattr(np, "dtypes") and hasattr(np.dtypes, _dt):
        _ALLOWED[("numpy.dtypes", _dt)] = getattr(np.dtypes, _dt)


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        hit = _ALLOWED.get((module, name))
        if hit is not None:
            return hit
        return inert_class(module, name)


#: a pickle "module" for ``torch.load(pickle_module=...)``
_restricted_pickle = types.ModuleType("aria_restricted_pickle")
_restricted_pickle.Unpickler = _RestrictedUnpickler  # type: ignore[attr-defined]
_restricted_pickle.load = lambda f, **kw: _RestrictedUnpickler(f, **kw).load()  # type: ignore[attr-defined]


def read_checkpoint(path: str | os.PathLike[str]) -> dict[str, torch.Tensor]:
    """The state dict of a CLAP checkpoint, read without running code from the file.

    Parameters
    ----------
    path : path
        A ``.pt`` file written by LAION-CLAP (``{"state_dict": ...}``) or a bare state dict.

    Returns
    -------
    dict
        Key (``module.`` prefix removed) → tensor (CPU).
    """
    p = Path(path)
    if not p.is_file():
        raise FileFormatError(expected("weights", "a LAION-CLAP checkpoint file (.pt)", str(p)))
    try:
        # zip-format files are memory-mapped: only the audio tensors are read from disk, not
        # the text tower and optimizer state that make up most of the published 2.3 GB
        obj = torch.load(
            p, map_location="cpu", weights_only=False, pickle_module=_restricted_pickle,
            mmap=zipfile.is_zipfile(p),
        )
    except Exception as exc:  # torch raises many types for a corrupt file
        raise FileFormatError(f"weights: {p} is not a readable torch checkpoint ({exc})") from exc
    sd = obj.get("state_dict", obj) if isinstance(obj, Mapping) else obj
    if not isinstance(sd, Mapping) or not sd:
        raise FileFormatError(
            expected("weights", "a checkpoint holding a 'state_dict' mapping", type(sd).__name__)
        )
    out: dict[str, torch.Tensor] = {}
    for key, value in sd.items():
        key = str(key)
        if key.startswith("module."):
            key = key[len("module."):]
        if not isinstance(value, torch.Tensor):
            raise FileFormatError(f"weights: state_dict entry {key!r} is not a tensor ({value!r})")
        out[key] = value
    return out


def split_state_dict(
    sd: Mapping[str, torch.Tensor],
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """Separate the audio tower and projection from what is ignored; refuse anything unknown.

    Parameters
    ----------
    sd : mapping
        A CLAP state dict (``module.`` removed).

    Returns
    -------
    (dict, dict)
        ``audio_branch`` tensors and ``audio_projection`` tensors, keys relative to their prefix;
        the sound-event head (``tscam_conv``, ``head``) is dropped from the first.
    """
    tower: dict[str, torch.Tensor] = {}
    projection: dict[str, torch.Tensor] = {}
    unknown: list[str] = []
    for key, value in sd.items():
        if key.startswith("audio_branch."):
            rest = key[len("audio_branch."):]
            if not rest.startswith(UNUSED_AUDIO_PREFIXES):
                tower[rest] = value
        elif key.startswith("audio_projection."):
            projection[key[len("audio_projection."):]] = value
        elif not key.startswith(IGNORED_PREFIXES):
            unknown.append(key)
    if not tower:
        raise FileFormatError(
            "weights: the checkpoint has no audio_branch.* tensors — not a LAION-CLAP checkpoint "
            f"(first keys: {', '.join(list(sd)[:5])})"
        )
    if unknown:
        raise FileFormatError(
            f"weights: {len(unknown)} unexpected top-level tensor(s) for a LAION-CLAP checkpoint: "
            + ", ".join(unknown[:8])
        )
    fusion = [k for k in tower if any(m in k for m in _FUSION_MARKERS)]
    if fusion:
        raise FileFormatError(
            "weights: this is a feature-fusion CLAP checkpoint (audio_branch." + fusion[0] + "); "
            "ARIA's clap encoder is the non-fusion HTSAT-base model of "
            "music_speech_audioset_epoch_15_esc_89.98.pt"
        )
    return tower, projection


def load_audio_weights(
    model: torch.nn.Module,
    tower: Mapping[str, torch.Tensor],
    projection: Mapping[str, torch.Tensor],
    derived: Mapping[str, torch.Tensor],
) -> None:
    """Load the tower and projection strictly; check the geometry buffers.

    Parameters
    ----------
    model : ClapAudio
        The built model (:class:`aria_tda.embed.encoders.clap.htsat.ClapAudio`).
    tower, projection : mapping
        From :func:`split_state_dict`.
    derived : mapping
        ``audio_branch``-relative geometry buffers the model computed
        (:func:`aria_tda.embed.encoders.clap.htsat.derived_buffers`).
    """
    wanted = {f"audio_branch.{k}": v for k, v in tower.items() if k not in derived}
    wanted.update({f"audio_projection.{k}": v for k, v in projection.items()})
    own = model.state_dict()
    missing = sorted(set(own) - set(wanted))
    extra = sorted(set(wanted) - set(own))
    if missing:
        raise FileFormatError(
            f"weights: the checkpoint lacks {len(missing)} audio tensor(s) that LAION-CLAP's "
            f"HTSAT-base tower has: {', '.join(missing[:6])}" + (" …" if len(missing) > 6 else "")
        )
    if extra:
        raise FileFormatError(
            f"weights: {len(extra)} audio tensor(s) that an HTSAT tower of this shape does not "
            f"have: {', '.join(extra[:6])}" + (" …" if len(extra) > 6 else "")
        )
    for key, value in own.items():
        if tuple(wanted[key].shape) != tuple(value.shape):
            raise FileFormatError(
                expected(f"weights[{key}]", f"shape {tuple(value.shape)}", tuple(wanted[key].shape))
            )
    for key, value in derived.items():
        saved = tower.get(key)
        if saved is None:
            continue  # CLAP always saves them; a pruned file is fine, they are recomputed
        if saved.shape != value.shape or not torch.equal(saved.to(value.dtype), value):
            raise FileFormatError(
                f"weights: audio_branch.{key} differs from the Swin geometry of this tower "
                "(window or resolution mismatch)"
            )
    own_dtypes = {k: v.dtype for k, v in own.items()}
    model.load_state_dict({k: v.to(own_dtypes[k]) for k, v in wanted.items()}, strict=True)
