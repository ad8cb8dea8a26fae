"""Checkpoints of the offline encoders: one ``.pt`` file with a manifest-like header.

A checkpoint is a ``torch.save`` of a plain dict (loaded with ``weights_only=True``: no
pickled code runs)::

    {"format": "aria_tda_experiments.encoders", "format_version": 1,
     "header": {"name", "config", "corpus_digest", "seed", "training": {...}, "extra": {...}},
     "state_dict": {...}}

``config`` is the encoder config as a dict (:mod:`aria_tda_experiments.encoders.config`),
``corpus_digest`` a digest of the training audio and its labels (who trained it on what),
``training`` the loss curve and timings, ``extra`` what the architecture needs besides the
config (clap-style: the caption vocabulary). The header carries no timestamp, so the same
training writes byte-identical files (the SHA-256 that embedding stores record is stable).

:func:`load_offline` is the registry's loader (``aria_tda_experiments.encoders:load_offline``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from aria_tda._io import atomic_path
from aria_tda.embed.encoders.base import file_sha256
from aria_tda.errors import FileFormatError, ParameterError, expected
from aria_tda_experiments.encoders.config import CONFIGS, OfflineConfig
from aria_tda_experiments.encoders.encoder import OfflineEncoder, build_model

__all__ = ["FORMAT", "load_offline", "read_checkpoint", "save_checkpoint"]

FORMAT = "aria_tda_experiments.encoders"
FORMAT_VERSION = 1


def save_checkpoint(
    path: str | os.PathLike[str], *, name: str, config: OfflineConfig,
    model: torch.nn.Module, corpus_digest: str, seed: int,
    training: dict[str, Any] | None = None, extra: dict[str, Any] | None = None,
) -> Path:
    """Write a checkpoint atomically; return its path.

    Parameters
    ----------
    path : path
        The ``.pt`` file (parent folders created).
    name : str
        Encoder name (a key of :data:`~aria_tda_experiments.encoders.config.CONFIGS`).
    config : ClewsStyleConfig or MertStyleConfig or ClapStyleConfig
        Its config.
    model : torch.nn.Module
        The trained architecture.
    corpus_digest : str
        Digest of the training data.
    seed : int
        Training seed.
    training : dict, optional
        Losses, timings (JSON-able).
    extra : dict, optional
        Architecture inputs besides the config (JSON-able).
    """
    if name not in CONFIGS or not isinstance(config, CONFIGS[name]):
        raise ParameterError(expected("config", f"a {name} config", type(config).__name__))
    header = {"name": name, "config": config.to_dict(), "corpus_digest": str(corpus_digest),
              "seed": int(seed), "training": dict(training or {}), "extra": dict(extra or {})}
    state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp:
        torch.save({"format": FORMAT, "format_version": FORMAT_VERSION, "header": header,
                    "state_dict": state}, tmp)
    return out


def read_checkpoint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a checkpoint: ``{"header": ..., "state_dict": ...}`` (checked).

    Parameters
    ----------
    path : path
        A file written by :func:`save_checkpoint`.

    Raises
    ------
    FileFormatError
        if the file is not an offline-encoder checkpoint.
    """
    p = Path(path)
    if not p.is_file():
        raise ParameterError(expected("weights", "an offline-encoder checkpoint file (.pt)",
                                      str(p)))
    try:
        blob = torch.load(p, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise FileFormatError(f"{str(p)!r}: not a readable torch checkpoint ({exc})") from None
    if not isinstance(blob, dict) or blob.get("format") != FORMAT:
        raise FileFormatError(f"{str(p)!r}: not an offline-encoder checkpoint (format "
                              f"{FORMAT!r} expected)")
    if blob.get("format_version") != FORMAT_VERSION:
        raise FileFormatError(f"{str(p)!r}: checkpoint format version "
                              f"{blob.get('format_version')!r}, expected {FORMAT_VERSION}")
    header = blob.get("header")
    if not isinstance(header, dict) or header.get("name") not in CONFIGS:
        raise FileFormatError(f"{str(p)!r}: checkpoint header names no offline encoder")
    return {"header": header, "state_dict": blob["state_dict"]}


def load_offline(
    *, name: str, weights: str | os.PathLike[str] | None, layer: int | None = None,
    device: str = "cpu", **options: Any,
) -> OfflineEncoder:
    """Build a trained offline encoder from its checkpoint (the registry's loader).

    Parameters
    ----------
    name : str
        ``clews-style``, ``mert-style`` or ``clap-style``; must match the checkpoint.
    weights : path
        The checkpoint (``<name>.pt`` written by
        :func:`aria_tda_experiments.audio.encoders.train_demo_encoders`).
    layer : int, optional
        mert-style: hidden state ``0..n_layers`` (default: the config's ``default_layer``,
        the last); the others have one output and take none.
    device : str
        Torch device.
    **options : Any
        None are accepted (an unknown option is an error, never ignored).

    Returns
    -------
    OfflineEncoder
    """
    if options:
        raise ParameterError(expected("options", f"no encoder options for {name}",
                                      ", ".join(sorted(options))))
    if name not in CONFIGS:
        raise ParameterError(expected("name", "one of " + ", ".join(CONFIGS), name))
    if weights is None:
        raise ParameterError(f"weights: encoder {name!r} needs its checkpoint, written by "
                             "`aria-tda demo audio` (its encoders/ folder) or "
                             "aria_tda_experiments.audio.encoders.train_demo_encoders")
    ck = read_checkpoint(weights)
    header = ck["header"]
    if header["name"] != name:
        raise ParameterError(expected("weights", f"a {name} checkpoint",
                                      f"a {header['name']} checkpoint ({weights})"))
    try:
        config = CONFIGS[name].from_mapping(header["config"], what=f"{name} checkpoint config")
        vocab = list(header.get("extra", {}).get("vocab", []))
        model = build_model(config, vocab_size=len(vocab))
        model.load_state_dict(ck["state_dict"], strict=True)
    except (ParameterError, RuntimeError, KeyError, TypeError) as exc:
        raise FileFormatError(f"{str(weights)!r}: checkpoint does not fit its {name} config "
                              f"({exc})") from None
    info = {"weights": os.fspath(weights), "weights_sha256": file_sha256(weights),
            "training": {"corpus_digest": header["corpus_digest"], "seed": header["seed"],
                         **{k: v for k, v in header.get("training", {}).items()
                            if k != "losses"}}}
    return OfflineEncoder(name, config, model, layer=layer, device=device, info=info)
