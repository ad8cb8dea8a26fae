"""Size presets of ``aria-tda demo audio`` and how they map to the paper's audio experiment.

The paper (§4.2, appendix "Audio Experimental Details") trains a MusicLM-style model with
three 24-layer stages on 67,219 FMA tracks (M_sem 200,798 / M_crs 469,347 / M_fin 1,005,520
segments, 7,148 queries per stage) and attributes it on 4 × A100 in 84 hours. The demo keeps
the *structure* — three independently attributable stages with the paper's windows (10 / 4 /
2 s), token types (semantic k-means units, acoustic RVQ levels 1–3 / 4–8, quantised
conditioning), methods and hyperparameters — at a size two CPU cores run in minutes:

=========================  ======================  ===================  ===================
quantity                   paper                   ``default``          ``quick``
=========================  ======================  ===================  ===================
training tracks            67,219 (FMA, 30 s)      ~90 (music21, 30 s)  ~30
queries per stage          7,148                   held-out + planted   held-out + planted
token rate                 50 Hz sem., 75 Hz ac.   12.5 Hz              12.5 Hz
semantic vocabulary        1,024 (MERT k-means)    128                  64
acoustic RVQ               8 × 1,024 (EnCodec)     8 × 64               8 × 32
conditioning               12 × 1,024 (CLAP-RVQ)   4 × 16               4 × 8
stage model                24 layers, d 1,024      2 layers, d 64       2 layers, d 64
embedding encoders         MERT, CLAP, CLEWS       3 "-style", full     3 "-style", 80 st.
=========================  ======================  ===================  ===================

The 12.5 Hz token rate (the paper's rates divided by 4 and 6) keeps the stage sequences at
130 / 205 / 205 tokens; at 25 Hz training and attribution cost about 4× and 2.3× more
(measured), which does not fit the default's budget.

**Embedding baselines.** The paper's MERT, CLAP and CLEWS are published checkpoints
(``aria-tda demo audio --encoders`` uses them when given); without them the demo trains encoders
with the same three objectives on its own training tracks
(:mod:`aria_tda_experiments.audio.encoders`) (``default``: the step count and batch of
:mod:`aria_tda_experiments.encoders.config`; ``quick`` trains 80 steps of 16 clips to stay within
its budget, ``tiny`` 3 steps).

**K-sweep.** The paper's K = 20 … 500 are 0.03–0.7 % of its 67,219 tracks; at ~90 tracks the
same fractions are less than one track. The demo keeps the sweep's seven points and the
position of K_report (the fifth, as 300 is in the paper) and spans them linearly from 3 to
a quarter of the training tracks (:func:`audio_ks`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from aria_tda._options import Options, option
from aria_tda.errors import ParameterError, expected
from aria_tda_experiments.audio.tokenizers import TokenizerConfig
from aria_tda_experiments.audio.versions import AudioCorpusConfig

__all__ = ["AUDIO_PRESETS", "AudioPreset", "audio_ks", "audio_preset"]


@dataclass(frozen=True)
class AudioPreset(Options):
    """Sizes of one ``aria-tda demo audio`` run (besides the corpus and tokenizer configs)."""

    name: str = option("default", help="preset name")
    frame_hz: float = option(12.5, help="token frame rate (Hz)", min_value=1.0)
    d_model: int = option(64, help="stage model width", min_value=8)
    n_layers: int = option(2, help="stage model depth", min_value=1)
    n_heads: int = option(2, help="attention heads per stage model", min_value=1)
    d_ff: int = option(256, help="feed-forward width", min_value=8)
    epochs: int = option(5, help="training epochs per stage model", min_value=1)
    lr: float = option(3e-3, help="peak learning rate (AdamW, cosine, warm-up)", min_value=0.0,
                       min_inclusive=False)
    batch_size: int = option(16, help="training batch size", min_value=1)
    n_ensemble: int = option(3, help="TRAK ensemble members per stage", min_value=1)
    prompt_seconds: float = option(2.0, help="seconds of the held-out track used as the "
                                   "semantic prompt", min_value=0.0)
    proj_dim: int = option(512, help="TRAK / GradCos projection dimension", min_value=1)
    block_proj_dim: int = option(256, help="LoGra / FactGraSS projection dimension (per "
                                 "nn.Linear)", min_value=4)
    n_lds_subsets: int = option(32, help="random halves per stage for LDS (with --lds)",
                                min_value=2)
    B: int = option(200, help="random reference groups per K", min_value=2)
    n_bootstrap: int = option(1000, help="bootstrap resamples of the queries", min_value=0)
    semantic_k: int = option(128, help="semantic vocabulary (k-means units)", min_value=2)
    rvq_codebook: int = option(64, help="acoustic RVQ codebook size", min_value=2)
    cond_codebook: int = option(16, help="conditioning RVQ codebook size", min_value=2)
    works_per_collection: int = option(8, help="music21 works per collection", min_value=1)
    versions_per_work: int = option(3, help="rendered versions per work", min_value=2)
    planted_works: int = option(6, help="training works with a held-out planted version",
                                min_value=0)
    encoder_steps: int | None = option(None, kind="int", help="optimiser steps of each "
                                       "demo-trained embedding encoder (clap-/clews-/mert-"
                                       "style; default: the encoder config's own)", min_value=1)
    encoder_batch: int | None = option(None, kind="int", help="clips per step of the "
                                       "demo-trained encoders (default: the config's own)",
                                       min_value=2)
    query_audio_iters: int = option(32, help="Griffin-Lim iterations of the query audio "
                                    "(generated tokens -> waveform)", min_value=0)

    def corpus_config(self, seed: int) -> AudioCorpusConfig:
        """The audio corpus of this preset.

        Parameters
        ----------
        seed : int
            Seeds the work choice, split, planted works and versions.
        """
        return AudioCorpusConfig(
            works_per_collection=self.works_per_collection,
            versions_per_work=self.versions_per_work, planted_works=self.planted_works,
            seed=seed,
        )

    def tokenizer_config(self, seed: int) -> TokenizerConfig:
        """The tokenizers of this preset.

        Parameters
        ----------
        seed : int
            Seeds k-means and the RVQ codebooks.
        """
        return TokenizerConfig(frame_hz=self.frame_hz, semantic_k=self.semantic_k,
                               rvq_codebook=self.rvq_codebook, cond_codebook=self.cond_codebook,
                               seed=seed)


AUDIO_PRESETS: dict[str, AudioPreset] = {
    "default": AudioPreset(),
    "quick": AudioPreset(
        name="quick", epochs=4, n_ensemble=2, works_per_collection=3, versions_per_work=3,
        planted_works=4, semantic_k=64, rvq_codebook=32, cond_codebook=8, B=100,
        n_bootstrap=500, n_lds_subsets=32, encoder_steps=80, encoder_batch=16,
    ),
    "tiny": AudioPreset(
        name="tiny", epochs=2, n_ensemble=1, works_per_collection=2, versions_per_work=2,
        planted_works=1, semantic_k=16, rvq_codebook=8, cond_codebook=4, B=20, n_bootstrap=50,
        d_model=32, d_ff=64, proj_dim=64, block_proj_dim=16, n_lds_subsets=4,
        encoder_steps=3, encoder_batch=4, query_audio_iters=8,
    ),
}


def audio_preset(name: str, **changes: Any) -> AudioPreset:
    """A preset by name, optionally with some sizes changed.

    Parameters
    ----------
    name : {"default", "quick", "tiny"}
        The preset.
    **changes : Any
        :class:`AudioPreset` fields to override.
    """
    if name not in AUDIO_PRESETS:
        raise ParameterError(expected("preset", "one of " + ", ".join(AUDIO_PRESETS), name))
    return replace(AUDIO_PRESETS[name], **changes) if changes else AUDIO_PRESETS[name]


def audio_ks(n_tracks: int, n_points: int = 7) -> tuple[list[int], int]:
    """The demo's K-sweep for ``n_tracks`` training tracks and its report K.

    Seven points spaced linearly from 3 to ``n_tracks // 4`` (distinct, at least 2 points);
    the report K is the fifth of the seven (the paper reports K = 300, the fifth of
    20 … 500), or the largest when fewer points remain.

    Parameters
    ----------
    n_tracks : int
        Training tracks with features (the pool).
    n_points : int
        Points of the sweep.
    """
    hi = max(4, n_tracks // 4)
    lo = min(3, hi - 1)
    ks = sorted({round(lo + (hi - lo) * i / (n_points - 1)) for i in range(n_points)})
    if len(ks) < 2 or ks[-1] >= n_tracks:
        raise ParameterError(expected("n_tracks", "at least 8 training tracks", n_tracks))
    report = ks[4] if len(ks) >= 5 else ks[-1]
    return ks, report
