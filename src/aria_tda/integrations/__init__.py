"""ARIA inside the loops attribution researchers already run.

Each module meets one peer ecosystem and imports it only when used (optional extras):

- :mod:`aria_tda.integrations.metrics` — ARIA's diagnostics as a quanda ``Metric``
  (``update`` / ``compute`` / ``reset``) and as a dattri-style metric function.
- :mod:`aria_tda.integrations.huggingface` — attribution of a Hugging Face
  ``PreTrainedModel`` (causal LM over music tokens) through :mod:`aria_tda.attribution`.
- :mod:`aria_tda.integrations.miditok` — tokenised corpora from miditok tokenisers (REMI and
  family): token windows, their segment map and their MIDI for the feature store.
"""
