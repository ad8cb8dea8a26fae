"""Encoders that run offline here, trained on the audio demo corpus (no download at all).

Three small encoders with the objectives of the paper's three embedding baselines, named for
what they are — "clews-style, trained on the demo corpus", not CLEWS:

- ``clews-style`` — log-CQT (16 kHz) → conv net → GeM → 128-d; renderings (versions) of the
  same work are positives (CLEWS's version-contrastive objective);
- ``mert-style`` — log-mel (24 kHz) → conv stem at the token rate → transformer; predicts the
  semantic k-means token of masked frames (HuBERT/MERT's objective); its embedding is a hidden
  state's frames;
- ``clap-style`` — log-mel (24 kHz) → conv net → 128-d, trained against a bag-of-words caption
  tower on captions made from track metadata (CLAP's audio–text contrastive objective); its
  embedding is the audio tower's projected vector.

This package holds what does not depend on the demo: front ends (:mod:`.frontends`),
architectures (:mod:`.models`), configs (:mod:`.config`), generic training loops
(:mod:`.train`), the :class:`~aria_tda.embed.Encoder` wrapper (:mod:`.encoder`) and checkpoints
with a manifest-like header (:mod:`.checkpoint`). Which tracks, labels and captions they are
trained on is the demo's business: :mod:`aria_tda_experiments.audio.encoders`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aria_tda._lazy import lazy_exports

#: Public name -> module that defines it, imported on first use: the ``aria_tda.encoders``
#: entry point loads :mod:`.specs` through this package, and every ``aria-tda`` command reads
#: that entry point, so importing torch here would cost every command seconds.
_LAZY = {
    "load_offline": "aria_tda_experiments.encoders.checkpoint",
    "read_checkpoint": "aria_tda_experiments.encoders.checkpoint",
    "save_checkpoint": "aria_tda_experiments.encoders.checkpoint",
    "CONFIGS": "aria_tda_experiments.encoders.config",
    "ClapStyleConfig": "aria_tda_experiments.encoders.config",
    "ClewsStyleConfig": "aria_tda_experiments.encoders.config",
    "MertStyleConfig": "aria_tda_experiments.encoders.config",
    "OfflineEncoder": "aria_tda_experiments.encoders.encoder",
    "build_model": "aria_tda_experiments.encoders.encoder",
    "front_end": "aria_tda_experiments.encoders.encoder",
}

__all__ = [
    "CONFIGS",
    "ClapStyleConfig",
    "ClewsStyleConfig",
    "MertStyleConfig",
    "OfflineEncoder",
    "build_model",
    "front_end",
    "load_offline",
    "read_checkpoint",
    "save_checkpoint",
]

if TYPE_CHECKING:  # typed re-exports for mypy and IDEs
    from aria_tda_experiments.encoders.checkpoint import (
        load_offline,
        read_checkpoint,
        save_checkpoint,
    )
    from aria_tda_experiments.encoders.config import (
        CONFIGS,
        ClapStyleConfig,
        ClewsStyleConfig,
        MertStyleConfig,
    )
    from aria_tda_experiments.encoders.encoder import OfflineEncoder, build_model, front_end


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
