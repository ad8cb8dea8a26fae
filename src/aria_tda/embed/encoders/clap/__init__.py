"""LAION-CLAP's audio tower (HTSAT-base, non-fusion) as the ``clap`` encoder of ``aria-tda embed``.

ARIA's own implementation of the audio half of LAION-CLAP (github.com/LAION-AI/CLAP), written
from its public code, that loads the published checkpoint
``music_speech_audioset_epoch_15_esc_89.98.pt`` from a local path: no download, no text tower
(RoBERTa) built or fetched, no torchvision. 48 kHz mono in; consecutive 10 s windows; one
L2-normalised 512-d embedding per window (CLAP's ``get_audio_embedding``), averaged over the
track by :meth:`aria_tda.embed.encoders.Encoder.embed`.

Modules: :mod:`.config` (the numbers), :mod:`.frontend` (STFT and log-mel),
:mod:`.htsat` (the Swin tower and projection), :mod:`.checkpoint` (safe reading, key checks),
:mod:`.encoder` (windows and the :class:`~aria_tda.embed.encoders.Encoder`), :mod:`.random_weights`
(random checkpoints in CLAP's format, for tests and benchmarks).
"""

from __future__ import annotations

from aria_tda.embed.encoders.clap.encoder import ClapEncoder, ClapOptions, load_clap
from aria_tda.embed.encoders.clap.random_weights import save_random_checkpoint

__all__ = ["ClapEncoder", "ClapOptions", "load_clap", "save_random_checkpoint"]
