"""The audio benchmark (paper §4.2): a MusicLM-style three-stage model on rendered music21 works.

Modules: :mod:`~aria_tda_experiments.audio.stages` (stage vocabularies, sequences, segment sets,
training), :mod:`~aria_tda_experiments.audio.generate` (query generation) and
:mod:`~aria_tda_experiments.audio.attribute` (attribution, LDS per stage, planted-influence recall).
"""
