"""The encoders ``aria embed --encoder NAME`` knows, and :func:`load_encoder`.

Published encoders (weights from their authors, loaded from a local path — never from a hub):

- ``mert`` — MERT-v1-95M (:mod:`aria.encoders.mert`);
- ``clap`` — LAION-CLAP, HTSAT-base audio tower (:mod:`aria.encoders.clap`);
- ``clews`` — CLEWS, the SHS-trained ``shs-clews`` checkpoint (:mod:`aria.encoders.clews`).

Encoders with the same objectives, trained on the audio demo corpus here (no download at all;
:mod:`aria.encoders.offline`, trained by :mod:`aria.bench.audio.encoders`):

- ``clews-style`` — version-contrastive CQT encoder;
- ``mert-style`` — masked-frame predictor of semantic tokens;
- ``clap-style`` — audio–text contrastive encoder with captions from track metadata.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from aria.encoders.base import Encoder, EncoderSpec
from aria.errors import ParameterError, expected

__all__ = ["ENCODERS", "load_encoder"]

ENCODERS: dict[str, EncoderSpec] = {
    s.name: s
    for s in (
        EncoderSpec(
            "mert", "aria.encoders.mert:load_mert", "MERT-v1-95M", 24_000,
            weights_hint="the folder of m-a-p/MERT-v1-95M from the Hugging Face hub "
            "(config.json and model.safetensors or pytorch_model.bin; preprocessor_config.json "
            "optional), e.g. `huggingface-cli download m-a-p/MERT-v1-95M --local-dir "
            "weights/MERT-v1-95M`, then --weights weights/MERT-v1-95M",
        ),
        EncoderSpec(
            "clap", "aria.encoders.clap:load_clap", "LAION-CLAP (HTSAT-base)", 48_000,
            weights_hint="music_speech_audioset_epoch_15_esc_89.98.pt from "
            "https://huggingface.co/lukewys/laion_clap (the file itself, ~2.3 GB), then "
            "--weights PATH/TO/music_speech_audioset_epoch_15_esc_89.98.pt",
        ),
        EncoderSpec(
            "clews", "aria.encoders.clews:load_clews", "CLEWS (shs-clews)", 16_000,
            weights_hint="the shs-clews checkpoint linked from github.com/sony/clews (README, "
            "'checkpoints': a Zenodo record) with the configuration.yaml of its folder, then "
            "--weights PATH/TO/checkpoint.ckpt",
        ),
        EncoderSpec(
            "clews-style", "aria.encoders.offline:load_offline", "clews-style (demo corpus)",
            16_000,
            weights_hint="a checkpoint written by `aria demo audio` (its encoders/ folder) "
            "or aria.bench.audio.encoders.train_demo_encoders",
        ),
        EncoderSpec(
            "mert-style", "aria.encoders.offline:load_offline", "mert-style (demo corpus)",
            24_000,
            weights_hint="a checkpoint written by `aria demo audio` (its encoders/ folder) "
            "or aria.bench.audio.encoders.train_demo_encoders",
        ),
        EncoderSpec(
            "clap-style", "aria.encoders.offline:load_offline", "clap-style (demo corpus)",
            24_000,
            weights_hint="a checkpoint written by `aria demo audio` (its encoders/ folder) "
            "or aria.bench.audio.encoders.train_demo_encoders",
        ),
    )
}


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
