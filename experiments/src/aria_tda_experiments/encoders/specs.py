"""The encoders this package trains on the audio demo corpus, as ``aria-tda embed`` encoders.

Registered with the library through the ``aria_tda.encoders`` entry-point group (see
``experiments/pyproject.toml``); importing this module imports nothing heavy.
"""

from __future__ import annotations

from aria_tda.embed.encoders.base import EncoderSpec

__all__ = ["ENCODER_SPECS"]

#: ``clews-style``, ``mert-style`` and ``clap-style`` (:mod:`aria_tda_experiments.encoders`).
ENCODER_SPECS: tuple[EncoderSpec, ...] = (
    EncoderSpec(
        "clews-style", "aria_tda_experiments.encoders:load_offline", "clews-style (demo corpus)",
        16_000,
        weights_hint="a checkpoint written by `aria-tda demo audio` (its encoders/ folder) "
        "or aria_tda_experiments.audio.encoders.train_demo_encoders",
    ),
    EncoderSpec(
        "mert-style", "aria_tda_experiments.encoders:load_offline", "mert-style (demo corpus)",
        24_000,
        weights_hint="a checkpoint written by `aria-tda demo audio` (its encoders/ folder) "
        "or aria_tda_experiments.audio.encoders.train_demo_encoders",
    ),
    EncoderSpec(
        "clap-style", "aria_tda_experiments.encoders:load_offline", "clap-style (demo corpus)",
        24_000,
        weights_hint="a checkpoint written by `aria-tda demo audio` (its encoders/ folder) "
        "or aria_tda_experiments.audio.encoders.train_demo_encoders",
    ),
)
