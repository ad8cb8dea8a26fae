"""Benchmark sizes: ``"default"`` (≤ 15 min demo on 2 CPU cores) and ``"quick"`` (≤ 3 min).

The sizes were chosen from timings on the project's shared 2-core machine
(``benchmarks/bench_symbolic_model.py``; wall seconds, one torch thread; model columns measured
on 64-token windows of Bach chorales — they depend on the window count and length, not on the
music):

=========  ========  =======  ==========  =========  ============  =======================
preset     corpus    1 model  50 % model  grads/all  held-out CE   10 (3) models + 32 LDS
=========  ========  =======  ==========  =========  ============  =======================
default    ~130 s *  11.1 s   6.0 s       4.1 s      1.63 (Bach)   ~300 s (~215 s quieter)
quick      ~45 s *   ~3-7 s   ~1.5-3.7 s  1.5 s      2.31 (Bach)   ~60-140 s
=========  ========  =======  ==========  =========  ============  =======================

``*`` first run only: music21 conversion, CPU seconds (the demo runs it in 2 processes; 299 s
wall on the shared machine at load 8), cached in the work cache afterwards.

Corpus: ``DYNAMIC_COLLECTIONS`` — the music21 folders whose scores carry dynamics markings
(Mozart and Haydn string quartets, Robert Schumann's op. 41 no. 1 and two songs, Clara
Schumann's piano pieces: 37 works, 220k tokens, ~1-20 CPU-s each to convert). Written to MIDI,
36 of the 37 works have several velocities (Mozart's K. 545 exposition has one), and 62 % of
the default's training windows more than one, so the dynamic channel varies (music21's Bach
chorales, the earlier default, are all velocity 90: a constant channel, z undefined).
Beethoven is left out: his quartets take 10-60 CPU-s each to convert, and
``beethoven/opus18no1`` holds each movement twice (``.krn`` and ``.mxl``), which would put the
same music on both sides of the split by work. Default = all 37 works (7 held out, seed 0) →
1,500 of 2,663 training windows of 64 tokens (757 held-out windows), 282 AdamW steps of
16 × 64 tokens per model. LDS: 32 random halves, each retrained with 3 seeds whose query
outputs are averaged (``lds_seeds=3``): in ``experiments/scripts/bench_lds_study.py`` (seed 0) that
was the only one-factor change that separated TRAK from GradDot (paired 95 % interval of the LDS
difference +0.044 [+0.006, +0.083], against +0.027 [-0.009, +0.065] with one seed), for
about 130 s more. Batch 16 at lr 6e-3 reached a clearly lower held-out loss than batch
32 at 3e-3 for the same CPU time (1.62 vs 2.01 nats/token at 4 epochs, Bach).

``paper`` is the size of the paper's MAESTRO benchmark: 5,000 training segments and 178
queries. The 30 training works hold ~176k tokens, so the windows stay 64 tokens long and start
every 32 tokens (overlapping by half: 5,309 windows, 5,000 kept); 256-token windows, as dattri's
benchmark uses, would overlap about seven-fold. TRAK is a 50-model ensemble, with TRAK-1 and
TRAK-10 (its first members) beside it — dattri's TRAK-k curve; LDS uses dattri's 100 random
halves, each retrained with 5 seeds whose query outputs are averaged (500 retrains). With 64
halves × 3 seeds TRAK-10 − GradDot was +0.017 [−0.012, +0.045], not separated; with 100 × 5
it is +0.026 [+0.003, +0.050]. Measured on the 2-core machine: see the README ("The paper
preset").

``gpu`` is ``paper`` with 10 retraining seeds per half (1,000 retrains): more than the
2-hour CPU budget allows, for ``--device cuda``, where several retrains run at once on the GPU
(measured on an H100: README, "Training and attribution on a GPU"). Everything else equals
``paper``'s, so ``--preset gpu`` in a paper run's folder trains only seeds 5-9 of every half.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from aria_tda._checks import check_choice
from aria_tda_experiments.corpus import CorpusConfig
from aria_tda_experiments.model import ModelConfig
from aria_tda_experiments.train import TrainConfig

__all__ = ["DYNAMIC_COLLECTIONS", "PRESETS", "BenchPreset", "preset"]


@dataclass(frozen=True)
class BenchPreset:
    """Sizes of one benchmark run.

    Attributes
    ----------
    corpus : CorpusConfig
    model : ModelConfig
    train : TrainConfig
    n_queries : int
        Generated queries ``T`` (the paper's MAESTRO benchmark had 178).
    prompt_len : int
        Prompt tokens per query (the rest of the window is generated).
    n_ensemble : int
        Suggested TRAK ensemble size (paper: 10).
    n_subsets : int
        Suggested LDS retrains on 50 % subsets (>= 32 by default).
    lds_seeds : int
        Retrains of every subset, with different seeds, whose query outputs are averaged
        (less retraining noise in the LDS target).
    trak_k : tuple of int
        TRAK from the first ``k`` ensemble members, as settings ``"TRAK-k"`` beside ``"TRAK"``
        (the whole ensemble), unless the run names its own (``--trak-k``).
    """

    name: str
    corpus: CorpusConfig
    model: ModelConfig
    train: TrainConfig
    n_queries: int
    prompt_len: int
    n_ensemble: int
    n_subsets: int
    lds_seeds: int = 1
    trak_k: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "corpus": self.corpus.to_dict(), "model": self.model.to_dict(),
            "train": self.train.to_dict(), "n_queries": self.n_queries,
            "prompt_len": self.prompt_len, "n_ensemble": self.n_ensemble,
            "n_subsets": self.n_subsets, "lds_seeds": self.lds_seeds,
            "trak_k": list(self.trak_k),
        }

    def with_seed(self, seed: int) -> BenchPreset:
        """The same sizes with the corpus seed replaced (model seeds are passed to training).

        Parameters
        ----------
        seed : int
            The corpus split seed.
        """
        return replace(self, corpus=replace(self.corpus, seed=seed))


#: music21 corpus folders of the demo: every work has dynamics markings (velocities vary).
DYNAMIC_COLLECTIONS: tuple[str, ...] = ("mozart", "haydn", "schumann_robert", "schumann_clara")

_MODEL = ModelConfig(vocab_size=390, d_model=64, n_layers=2, n_heads=4, d_ff=256, max_len=64)

# the paper's benchmark size (5,000 training segments x 178 queries); TRAK-1 / TRAK-10 /
# TRAK-50 (the whole ensemble) give dattri's TRAK-k curve; LDS: dattri's 100 random halves,
# each retrained with 5 seeds (64 x 3 did not separate TRAK-10 from GradDot; 100 x 5 did)
_PAPER = BenchPreset(
    name="paper",
    corpus=CorpusConfig(collections=DYNAMIC_COLLECTIONS, max_works=None, window=64, hop=32,
                        test_fraction=0.2, max_train_segments=5000),
    model=_MODEL,
    train=TrainConfig(epochs=3, batch_size=16, lr=6e-3, n_checkpoints=4),
    n_queries=178, prompt_len=32, n_ensemble=50, n_subsets=100, lds_seeds=5, trak_k=(1, 10),
)

PRESETS: dict[str, BenchPreset] = {
    "default": BenchPreset(
        name="default",
        corpus=CorpusConfig(collections=DYNAMIC_COLLECTIONS, max_works=None, window=64,
                            test_fraction=0.2, max_train_segments=1500),
        model=_MODEL,
        train=TrainConfig(epochs=3, batch_size=16, lr=6e-3, n_checkpoints=4),
        n_queries=178, prompt_len=32, n_ensemble=10, n_subsets=32, lds_seeds=3,
    ),
    "quick": BenchPreset(
        name="quick",
        corpus=CorpusConfig(collections=DYNAMIC_COLLECTIONS, max_works=15, window=64,
                            test_fraction=0.2, max_train_segments=400),
        model=_MODEL,
        train=TrainConfig(epochs=4, batch_size=16, lr=6e-3, n_checkpoints=3),
        n_queries=50, prompt_len=32, n_ensemble=3, n_subsets=32,
    ),
    "paper": _PAPER,
    # paper with 10 retraining seeds per LDS half (1,000 retrains), for a machine with a GPU
    # (`--device cuda`); the other stages are paper's, so a paper run's folder is reused (its
    # 500 retrains too: seeds 0-4 of every half)
    "gpu": replace(_PAPER, name="gpu", lds_seeds=10),
    "tiny": BenchPreset(  # for tests / CI smoke runs (seconds)
        name="tiny",
        corpus=CorpusConfig(collections=DYNAMIC_COLLECTIONS, max_works=6, window=32,
                            test_fraction=0.34, max_train_segments=48),
        model=ModelConfig(vocab_size=390, d_model=16, n_layers=1, n_heads=2, d_ff=32, max_len=32),
        train=TrainConfig(epochs=2, batch_size=16, lr=3e-3, n_checkpoints=2),
        n_queries=6, prompt_len=16, n_ensemble=2, n_subsets=4,
    ),
}


def preset(name: str) -> BenchPreset:
    """The preset called ``name``.

    Parameters
    ----------
    name : {"default", "quick", "paper", "gpu", "tiny"}
        The preset's name.
    """
    return PRESETS[check_choice("preset", name, tuple(PRESETS))]
