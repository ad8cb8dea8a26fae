"""The embedded symbolic benchmark: real music from music21's corpus, a small MusicTransformer.

Modules (import them directly; this package imports nothing heavy):

- :mod:`aria.bench.tokenizer` — MusicTransformer event vocabulary (390 ids), MIDI I/O;
- :mod:`aria.bench.corpus` — music21 works → MIDI → tokens → windows, split by work, cached;
- :mod:`aria.bench.model` — causal relative-attention decoder; the two loss conventions
  (``sequence_loss``, ``last_token_loss``) shared with :mod:`aria.attribution`;
- :mod:`aria.bench.train` — deterministic training, checkpoints + learning rates, subset
  retraining (LDS) and seeded ensembles (TRAK);
- :mod:`aria.bench.generate` — queries: continuations of prompts from held-out works;
- :mod:`aria.bench.featurize` — symbolic features of every training window → feature store;
- :mod:`aria.bench.presets` — the ``default`` / ``quick`` / ``tiny`` sizes.
"""
