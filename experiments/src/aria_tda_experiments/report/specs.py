"""The tables the experiments add to a results folder: their schema (:class:`TableSpec`).

Registered with :data:`aria_tda.results.TABLES` through the entry-point group
``aria_tda.tables`` (``experiments/pyproject.toml``), so that the demos' writers
(:func:`aria_tda.results.write_table`) and the report know them while this package is
installed. The report sections that show them are in :mod:`aria_tda_experiments.report.sections`.
"""

from __future__ import annotations

from aria_tda.results import TableSpec

__all__ = ["PLANTED_ASPECT_SPECS", "PLANTED_SPECS", "SENSITIVITY_SPECS", "TABLE_SPECS"]

_ALL = (
    TableSpec(
        "planted",
        "planted.csv",
        ("setting", "level", "K", "recall", "n_queries"),
        "Planted influence (audio demo): for held-out versions of training works, the fraction "
        "whose source work is in the top-K (segments or tracks) of their attribution.",
    ),
    TableSpec(
        "planted_aspects",
        "planted_aspects.csv",
        ("modality", "method", "aspect", "k", "recall_at_k", "chance", "ci_low", "ci_high",
         "average_precision", "learned", "counterfactual_effect", "top_channel",
         "top_channel_z"),
        "Planted ground truth per aspect (aria-tda demo planted): per setting and planted "
        "aspect, recall@k of the marked set among the plant queries' top-k (mean over queries, "
        "percentile bootstrap CI over queries; chance = k / n_train) and average precision "
        "(ap_chance = its expectation under a random ranking); whether the plant was learned "
        "and its counterfactual effect (rise of the plant queries' loss when the marked set is "
        "left out of training); ARIA's leading channel (highest z-bar over the plant queries "
        "at K = k) and its z-bar, on the original matrix and the residual; the distinctive "
        "reading's answer for the plant's queries (named_channel: a channel or 'none', "
        "named_right, its p-value named_p and delta named_delta; _residual: on the residual). "
        "aspect = control: the control queries against the union of the marked sets.",
        ("named_channel", "named_right", "named_p", "named_delta", "named_channel_residual",
         "named_right_residual"),
    ),
    TableSpec(
        "planted_confusion",
        "planted_confusion.csv",
        ("modality", "setting", "variant", "aspect", "channel", "n_queries"),
        "Planted aspect x ARIA's leading channel: how many plant queries of each aspect have "
        "each channel as their highest z at K = k, per setting and variant.",
    ),
    TableSpec(
        "planted_naming",
        "planted_naming.csv",
        ("modality", "setting", "variant", "n_found", "n_right_found", "right_when_found"),
        "How often ARIA names the planted aspect, per setting, variant and reading (reading = "
        "paper: the leading channel; distinctive: the distinctive reading's answer): over the "
        "plant queries (n_right of n_queries), over those whose top-k holds at least half of "
        "the marked set (found), over the (setting, plant) rows whose recall interval lies "
        "above chance (n_rows_right of n_rows_found), and the share of the control queries "
        "answered 'none' (control_none_share; the paper's reading always names a channel).",
        ("reading", "n_queries", "n_right", "share_right", "n_rows_found", "n_rows_right",
         "rows_right_share", "n_control", "control_none_share"),
    ),
    TableSpec(
        "planted_queries",
        "planted_queries.csv",
        ("modality", "setting", "variant", "query", "aspect", "recall_at_k", "paper"),
        "Every planted-demo query's answers: its plant (aspect; control for an unplanted "
        "prompt), its recall@k of the marked set, found (recall at least one half), the paper "
        "reading's leading channel (paper) and the distinctive reading's answer (distinctive), "
        "each with whether it is the planted aspect (_right).",
    ),
    TableSpec(
        "planted_effects",
        "planted_effects.csv",
        ("modality", "kind", "aspect", "effect", "ci_low", "ci_high"),
        "Learned (per seed: held-out items beginning the plant, continuation loss of the model "
        "trained without the marked set minus with it) and counterfactual (plant queries' "
        "loss, retrained without minus with the marked set, mean over seeds) effects in "
        "nats/token with percentile bootstrap CIs over items.",
    ),
    TableSpec(
        "planted_agreement",
        "planted_agreement.csv",
        ("modality", "diagnostic", "spearman", "kendall", "n_methods"),
        "Rank agreement across attribution methods between each reliability diagnostic "
        "(lower = better; the sign is flipped) and how well the method finds the plants "
        "(mean recall@k over the plant queries), with exact one-sided permutation p-values.",
    ),
    TableSpec(
        "planted_sweep",
        "planted_sweep.csv",
        ("modality", "setting", "variant", "aspect", "K", "channel", "zbar", "n_queries"),
        "z-bar over each plant's queries per setting, variant, group size K and channel (the "
        "K-sweep of the plant queries); zbar_lo / zbar_hi: percentile bootstrap CI over them.",
    ),
    TableSpec(
        "sensitivity",
        "sensitivity.csv",
        ("proj_dim", "lam", "K", "channel", "zbar"),
        "TRAK sensitivity sweep over projection dimension x lambda (paper appendix table).",
    ),
)

_BY_NAME = {s.name: s for s in _ALL}
#: Planted influence of the audio demo (``planted.csv``).
PLANTED_SPECS: tuple[TableSpec, ...] = (_BY_NAME["planted"],)
#: The planted-aspect tables of ``aria-tda demo planted``.
PLANTED_ASPECT_SPECS: tuple[TableSpec, ...] = tuple(
    s for s in _ALL if s.name.startswith("planted_"))
#: The TRAK sensitivity sweep (``aria-tda sensitivity``).
SENSITIVITY_SPECS: tuple[TableSpec, ...] = (_BY_NAME["sensitivity"],)
#: Every table of the experiments (the ``aria_tda.tables`` entry point).
TABLE_SPECS: tuple[TableSpec, ...] = _ALL
