"""``aria-tda demo planted``: planted ground truth per musical aspect, end to end.

Plants that each carry one aspect are put into a small marked share of the training data
(:mod:`.symbolic`, :mod:`.audio`); the pipeline shows each plant was learned (against a control
model trained without it) and has a causal effect (retraining without the marked set),
attributes plant and control queries with every method, and scores both the methods (recall@K
and average precision of the marked set) and ARIA itself (does the planted aspect's channel
lead?) in :mod:`.analysis`; :mod:`.demo` runs it all.
"""
