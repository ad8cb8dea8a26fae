"""The embedded symbolic benchmark: real music from music21's corpus, a small MusicTransformer.

The experiment layer: it uses :mod:`aria.attribution` (losses, subsets, attributors) and every
ARIA analysis; nothing below it imports it. Modules (import them directly; this package
imports nothing heavy):

- :mod:`aria.bench.tokenizer` — MusicTransformer event vocabulary (390 ids), MIDI I/O;
- :mod:`aria.bench.corpus` — music21 works → MIDI → tokens → windows, split by work, cached;
- :mod:`aria.bench.model` — causal relative-attention decoder (re-exports the two loss
  conventions ``sequence_loss``, ``last_token_loss`` of :mod:`aria.attribution.losses`);
- :mod:`aria.bench.train` — deterministic training, checkpoints + learning rates, subset
  retraining (LDS) and seeded ensembles (TRAK);
- :mod:`aria.bench.generate` — queries: continuations of prompts from held-out works;
- :mod:`aria.bench.featurize` — symbolic features of every training window → feature store;
- :mod:`aria.bench.presets` — the ``default`` / ``quick`` / ``tiny`` sizes;
- :mod:`aria.bench.demo` — ``aria demo``, the symbolic ground-truth validation end to end;
- :mod:`aria.bench.sweep` — ``aria sweep``, TRAK's projection dimension × λ sensitivity.
"""
