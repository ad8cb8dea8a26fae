"""The encoders ``aria-tda embed --encoder NAME`` knows, and :func:`load_encoder`.

Published encoders (weights from their authors, loaded from a local path — never from a hub):

- ``mert`` — MERT-v1-95M (:mod:`aria_tda.embed.encoders.mert`);
- ``clap`` — LAION-CLAP, HTSAT-base audio tower (:mod:`aria_tda.embed.encoders.clap`);
- ``clews`` — CLEWS, the SHS-trained ``shs-clews`` checkpoint
  (:mod:`aria_tda.embed.encoders.clews`).

Other installed packages add encoders through the ``aria_tda.encoders`` entry-point group
(:data:`ENTRY_POINT_GROUP`); the experiments package ``aria-tda-experiments`` adds the three
encoders it trains on its audio corpus (``clews-style``, ``mert-style``, ``clap-style``).
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from aria_tda.embed.encoders.base import Encoder, EncoderSpec
from aria_tda.errors import ParameterError, expected

__all__ = ["ENCODERS", "ENTRY_POINT_GROUP", "load_encoder"]

#: Entry-point group through which other installed packages add encoders: each entry point
#: names an iterable of :class:`~aria_tda.embed.encoders.base.EncoderSpec` (the experiments package
#: registers its demo-trained encoders this way).
ENTRY_POINT_GROUP = "aria_tda.encoders"

_PUBLISHED: tuple[EncoderSpec, ...] = (
        EncoderSpec(
            "mert", "aria_tda.embed.encoders.mert:load_mert", "MERT-v1-95M", 24_000,
            weights_hint="the folder of m-a-p/MERT-v1-95M from the Hugging Face hub "
            "(config.json and model.safetensors or pytorch_model.bin; preprocessor_config.json "
            "optional), e.g. `huggingface-cli download m-a-p/MERT-v1-95M --local-dir "
            "weights/MERT-v1-95M`, then --weights weights/MERT-v1-95M",
        ),
        EncoderSpec(
            "clap", "aria_tda.embed.encoders.clap:load_clap", "LAION-CLAP (HTSAT-base)", 48_000,
            weights_hint="music_speech_audioset_epoch_15_esc_89.98.pt from "
            "https://huggingface.co/lukewys/laion_clap (the file itself, ~2.3 GB), then "
            "--weights PATH/TO/music_speech_audioset_epoch_15_esc_89.98.pt",
        ),
        EncoderSpec(
            "clews", "aria_tda.embed.encoders.clews:load_clews", "CLEWS (shs-clews)", 16_000,
            weights_hint="the shs-clews checkpoint linked from github.com/sony/clews (README, "
            "'checkpoints': a Zenodo record) with the configuration.yaml of its folder, then "
            "--weights PATH/TO/checkpoint.ckpt",
        ),
)


def _registered() -> dict[str, EncoderSpec]:
    """The published encoders and those that installed packages register (entry points)."""
    from importlib.metadata import entry_points

    specs = {s.name: s for s in _PUBLISHED}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        for spec in ep.load():
            specs.setdefault(spec.name, spec)
    return specs


#: Every encoder ``aria-tda embed --encoder NAME`` knows, by name.
ENCODERS: dict[str, EncoderSpec] = _registered()


def load_encoder(
    name: str,
    *,
    weights: str | os.PathLike[str] | None = None,
    layer: int | None = None,
    device: str = "cpu",
    **options: Any,
) -> Encoder:
    """Build an encoder by registry name from a local checkpoint.

    Parameters
    ----------
    name : str
        A key of :data:`ENCODERS`.
    weights : path, optional
        Checkpoint file or folder (required by every encoder; the error names the file to get).
    layer : int, optional
        Hidden layer whose output is pooled (encoders with layers; default: the encoder's).
    device : str
        Torch device.
    **options : Any
        Encoder-specific options.

    Returns
    -------
    Encoder
    """
    if name not in ENCODERS:
        raise ParameterError(expected("encoder", "one of " + ", ".join(ENCODERS), name))
    spec = ENCODERS[name]
    if weights is None and spec.needs_weights:
        raise ParameterError(
            f"weights: encoder {name!r} ({spec.label}) needs its checkpoint and ARIA never "
            f"downloads one; obtain {spec.weights_hint}"
        )
    mod_name, fn_name = spec.loader.split(":")
    fn = getattr(importlib.import_module(mod_name), fn_name)
    kwargs: dict[str, Any] = {"weights": weights, "layer": layer, "device": device, **options}
    if spec.loader.endswith(":load_offline"):
        kwargs["name"] = name
    enc = fn(**kwargs)
    if not isinstance(enc, Encoder):  # pragma: no cover - a loader bug
        raise TypeError(f"{spec.loader} returned {type(enc).__name__}, not an Encoder")
    return enc
