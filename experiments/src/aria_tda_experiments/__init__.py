"""The embedded symbolic benchmark: real music from music21's corpus, a small MusicTransformer.

The experiment layer: it uses :mod:`aria_tda.attribution` (losses, subsets, attributors) and every
ARIA analysis; nothing below it imports it. Modules (import them directly; this package
imports nothing heavy):

- :mod:`aria_tda_experiments.tokenizer` — MusicTransformer event vocabulary (390 ids), MIDI I/O;
- :mod:`aria_tda_experiments.corpus` — music21 works → MIDI → tokens → windows, split by work,
  cached;
- :mod:`aria_tda_experiments.model` — causal relative-attention decoder (re-exports the two loss
  conventions ``sequence_loss``, ``last_token_loss`` of :mod:`aria_tda.attribution.losses`);
- :mod:`aria_tda_experiments.train` — deterministic training, checkpoints + learning rates, subset
  retraining (LDS) and seeded ensembles (TRAK);
- :mod:`aria_tda_experiments.generate` — queries: continuations of prompts from held-out works;
- :mod:`aria_tda_experiments.featurize` — symbolic features of every training window → feature
  store;
- :mod:`aria_tda_experiments.presets` — the ``default`` / ``quick`` / ``tiny`` sizes;
- :mod:`aria_tda_experiments.demo` — ``aria-tda demo``, the symbolic ground-truth validation end to
  end;
- :mod:`aria_tda_experiments.sensitivity` — ``aria-tda sensitivity``, TRAK's projection
  dimension × λ sensitivity.
"""
