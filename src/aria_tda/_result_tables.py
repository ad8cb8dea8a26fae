"""The tables of a results folder: their files, required and optional columns, and meaning.

This is the schema half of :mod:`aria_tda.results` (which re-exports every name here and is
where callers import them from): :data:`TABLES` maps a schema name to its :class:`TableSpec`,
:data:`RUN_TABLES` lists the ones ``aria-tda run`` writes, and the column groups name the
columns the report shows side by side.

Tables of other packages
------------------------
An installed package adds its own tables through the entry-point group ``aria_tda.tables``
(:data:`ENTRY_POINT_GROUP`): each entry point names a sequence of :class:`TableSpec` or a
zero-argument callable returning one, e.g. in its ``pyproject.toml``::

    [project.entry-points."aria_tda.tables"]
    mine = "my_package.report.specs:TABLE_SPECS"

:data:`TABLES` loads them the first time it is asked for a name it does not hold (or is
iterated), so :func:`aria_tda.results.write_table` / :func:`~aria_tda.results.read_table` and
the report know them. A spec that reuses a name of ARIA's own, or an entry point that fails to
load, is one :class:`~aria_tda.errors.AriaWarning` naming it and is left out.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from aria_tda.errors import AriaWarning, one_line

__all__ = [
    "ALIGNMENT_MEASURES",
    "CONCENTRATION_COLUMNS",
    "CORE_TABLES",
    "DEPENDENCE_COLUMNS",
    "ENTRY_POINT_GROUP",
    "HOMOGENEITY_SUMMARY",
    "RELIABILITY_DIAGNOSTICS",
    "RUN_TABLES",
    "TABLES",
    "TableSpec",
]


@dataclass(frozen=True)
class TableSpec:
    """One table of the results folder.

    Attributes
    ----------
    name : str
        Schema name, the key of :data:`TABLES` (``"homogeneity"``, ``"query_z"``, ...).
    filename : str
        File name inside the results folder; ``.parquet`` files are Parquet, others CSV.
    columns : tuple of str
        Required columns (writers may add more; readers tolerate extra ones).
    description : str
        What one row holds, with the paper equation it comes from.
    optional : tuple of str
        Optional columns readers know by name (writers may leave them out).
    """

    name: str
    filename: str
    columns: tuple[str, ...]
    description: str
    optional: tuple[str, ...] = ()

    @property
    def format(self) -> str:
        return "parquet" if self.filename.endswith(".parquet") else "csv"


#: The reliability diagnostics of S_seg (paper Eqs. 1-3), in the paper's column order
#: (r_1, r_2:5, p, kappa): the columns the report shows beside other quantities.
RELIABILITY_DIAGNOSTICS: tuple[str, ...] = ("r1", "r2_5", "p", "kappa")
#: The top-K concentration of each setting (optional columns of the reliability table,
#: :mod:`aria_tda.diagnostics.concentration`): the share of queries led by the most frequent
#: top-1 row, the mean pairwise top-K overlap and the distinct-rows ratio (quanda's top-K
#: cardinality) at ``topk_K``, and the largest chance-corrected value the verdict compares
#: with its thresholds. ``topk_level``/``topk_rows`` say what was ranked (``track``: the pool
#: of S_track; ``segment``: S_seg) and how many rows.
CONCENTRATION_COLUMNS: tuple[str, ...] = (
    "top1_share",
    "topk_overlap",
    "topk_distinct",
    "topk_excess",
    "topk_K",
    "topk_level",
    "topk_rows",
)
#: Whether the top-K follows the query (optional columns of the reliability table,
#: :mod:`aria_tda.diagnostics.dependence`): the hubs, the unlike-query overlap the verdict reads,
#: and the findings beside it.
DEPENDENCE_COLUMNS: tuple[str, ...] = (
    "n_hubs",
    "hubs",
    "unlike_overlap",
    "alike_overlap",
    "unlike_excess",
    "follows_similarity",
    "kappa_signed",
    "offset_rho",
    "verdict_findings",
)
#: The attribution sanity checks of a setting's score file, when ARIA computed the attribution
#: and ran them (:mod:`aria_tda.attribution.sanity`); ``sanity`` is "computed" or "unavailable".
SANITY_COLUMNS: tuple[str, ...] = (
    "sanity",
    "randomization_rho",
    "randomization_lo",
    "randomization_hi",
    "randomization_flagged",
    "norm_bias_rho",
    "norm_bias_flagged",
)
#: The per-channel summary of the homogeneity table (paper Eq. summary): z-bar with its 95%
#: CI, Pos and Sig.
HOMOGENEITY_SUMMARY: tuple[str, ...] = ("zbar", "zbar_lo", "zbar_hi", "pos", "sig")
#: The per-channel measures of the alignment table (paper Eq. alpha).
ALIGNMENT_MEASURES: tuple[str, ...] = (
    "alpha_max",
    "alpha_max_feature",
    "alpha_reg",
    "alpha_reg_group",
)

_SPECS = (
    TableSpec(
        "reliability",
        "reliability.csv",
        (
            "setting",
            "method",
            "stage",
            "n_train",
            "n_queries",
            "kappa",
            "r1",
            "r2_5",
            "p",
            "v1_constancy",
            "constant_columns",
            "verdict",
            "verdict_reason",
        ),
        "Reliability diagnostics of each setting's S_seg (paper Eqs. 1-3) and its collapse verdict "
        "('collapsed' | 'suspect' | 'ok'); optional energy_1..energy_10 columns hold r_1..r_10. "
        "v1_constancy = |sum v1| / sqrt(T) in [0, 1] (1 = v1 constant across queries). "
        "Optional top-K concentration: top1_share (queries whose top-1 is the most frequent "
        "top-1 row), topk_overlap (mean share of two queries' top-K in common) and "
        "topk_distinct (|union of top-K| / (T K)) at K = topk_K, topk_excess (the largest "
        "chance-corrected top-1 share or overlap), on topk_level "
        "('track' or 'segment') with topk_rows rows. Optional query dependence at K = topk_K "
        "(the verdict's measure): unlike_overlap / alike_overlap (mean top-K overlap of the "
        "less / more alike half of sampled query pairs), unlike_excess (its chance-corrected "
        "value), follows_similarity (Spearman of overlap with query similarity), n_hubs and "
        "hubs ('id:share:times_chance;...', rows in far more top-K than chance), kappa_signed "
        "(mean signed inter-query correlation), offset_rho (median Spearman of a query's "
        "scores with the items' mean score), verdict_findings (hubs, camps, offset; ' | '-"
        "separated). Optional attribution sanity checks (sanity = 'computed' when ARIA "
        "computed the scores and ran them, else 'unavailable'): randomization_rho with "
        "randomization_lo/hi (mean per-query Spearman between the trained and a re-initialised "
        "model's scores, 95% CI; flagged when lo >= 0.5) and norm_bias_rho (median per-query "
        "Spearman between scores and training gradient norms; flagged at >= 0.5).",
        (*(f"energy_{i}" for i in range(1, 11)), *CONCENTRATION_COLUMNS,
         *DEPENDENCE_COLUMNS, *SANITY_COLUMNS),
    ),
    TableSpec(
        "homogeneity",
        "homogeneity.csv",
        ("setting", "variant", "K", "channel", *HOMOGENEITY_SUMMARY, "n_queries"),
        "Per-channel summary over queries (paper Eq. summary) for every K (the K-sweep) and "
        "variant; zbar_lo/zbar_hi (and pos_lo/hi, sig_lo/hi) are 95% bootstrap CIs that resample "
        "the queries and the B null reference groups jointly, so they carry the null's Monte-Carlo "
        "error too (null_mc_se: its SE of zbar); pos/sig are fractions in [0, 1]; "
        "n_constant_excluded counts degenerate query columns left out.",
    ),
    TableSpec(
        "query_z",
        "query_z.parquet",
        ("setting", "variant", "K", "query", "channel", "z"),
        "z_c(q) for every query (paper Eq. z_c).",
    ),
    TableSpec(
        "aspects",
        "aspects.csv",
        ("setting", "variant", "K", "anchor", "channel", "baseline", "baseline_lo",
         "baseline_hi", "named_share", "none_share", "n_queries", "method_aspect"),
        "The distinctive reading per setting, variant and channel at K = K_report "
        "(aria_tda.homogeneity.distinctive): baseline = the median over queries of the channel "
        "z of each query's distinctive group (anchor 'query': its similarity to the query; "
        "'group': its within-group homogeneity) with a bootstrap interval — what the method "
        "shows for every query; method_aspect = the largest baseline whose interval lies "
        "above 0, or 'none'; named_share = the share of the queries whose distinctive aspect "
        "is the channel, none_share = the share with no distinctive aspect; alpha, threshold.",
        ("alpha", "threshold"),
    ),
    TableSpec(
        "query_aspects",
        "query_aspects.parquet",
        ("setting", "variant", "query", "channel", "z", "delta", "named"),
        "Per query and channel: z of the query's distinctive group, delta = its distinctive "
        "score against the method's other queries, and the query's answer (named: a channel "
        "or 'none', the same on every row of the query).",
    ),
    TableSpec(
        "set_aspects",
        "set_aspects.csv",
        ("setting", "variant", "variable", "value", "n_queries", "channel", "z", "delta", "p",
         "named"),
        "The distinctive reading of each set of queries sharing a value of a confound column: "
        "z and delta per channel, the p-value of the set's leading channel against random sets "
        "of the other queries (Bonferroni over the channels), and the answer (a channel or "
        "'none').",
    ),
    TableSpec(
        "null",
        "null.csv",
        ("K", "channel", "feature", "mu", "sigma", "B"),
        "Null distribution per K: per feature (mu_d, sigma_d) and per channel (feature='*'); "
        "mc_se = the Monte-Carlo SE of the channel mean from the B reference groups.",
    ),
    TableSpec(
        "topk",
        "topk.parquet",
        ("setting", "variant", "query", "rank", "track_id", "score"),
        "The top-K_report attributed tracks of each query (rank 1 = highest S_track score).",
    ),
    TableSpec(
        "item_alignment",
        "item_alignment.parquet",
        ("setting", "variant", "query", "rank", "track_id", "channel", "alignment",
         "percentile", "tied", "informative"),
        "How like the query each of its top attributed tracks is, per channel (needs the "
        "study's query_features): alignment = the channel's similarity to the query "
        "standardised over the pool (pool SDs), percentile = its mid-rank among the pool's "
        "tracks (0-100), tied = share of the pool with the same score, informative = the "
        "channel discriminates (pool SD > 0 and tied < 0.25).",
    ),
    TableSpec(
        "pairs",
        "pairs.parquet",
        (
            "setting",
            "variant",
            "K",
            "query",
            "channel",
            "track_a",
            "track_b",
            "similarity",
            "contribution",
        ),
        "The track pairs of A_K(q) contributing most to each channel's g (contribution = the "
        "pair's standardised similarity averaged over the channel's features).",
    ),
    TableSpec(
        "alignment",
        "alignment.csv",
        ("setting", "channel", *ALIGNMENT_MEASURES),
        "Axis-channel alignment of u_1 of S_track (paper Eq. alpha).",
    ),
    TableSpec(
        "confound",
        "confound.csv",
        (
            "setting",
            "variant",
            "K",
            "channel",
            "column",
            "stratum",
            "n",
            "mean_z",
            "pos",
            "sig",
            "sd_across",
        ),
        "z_c stratified by a query metadata column; sd_across = SD of mean_z across strata "
        "(repeated on each row of the group).",
    ),
    TableSpec(
        "ranking",
        "ranking.csv",
        ("setting", "variant", "K", "channel", "zbar", "rank", "excluded", "reason"),
        "Method ranking on zbar per channel; collapsed settings are excluded (rank empty, "
        "excluded=True).",
    ),
    TableSpec(
        "lds",
        "lds.csv",
        ("method", "lds", "lds_sd", "n_subsets", "n_queries"),
        "Linear datamodeling score per attribution method (mean over queries, SD over queries).",
    ),
    TableSpec(
        "agreement",
        "agreement.csv",
        ("diagnostic", "spearman", "kendall", "n_methods"),
        "Rank agreement across methods between each diagnostic (lower = better) and LDS (higher = "
        "better); spearman_lo/hi, kendall_lo/hi: percentile bootstrap CIs from replicates that "
        "resample the queries (and LDS subsets) for every method at once; spearman_p_exact, "
        "kendall_p_exact: exact one-sided permutation p-values over the n_methods! orderings.",
    ),
    TableSpec(
        "lds_paired",
        "lds_paired.csv",
        ("quantity", "setting_a", "setting_b", "diff", "diff_lo", "diff_hi", "separated"),
        "Method-vs-method differences (value_a - value_b) of LDS and of each reliability "
        "diagnostic (quantity = lds | r1 | r2_5 | p | kappa) with paired percentile bootstrap "
        "CIs: each replicate resamples the same queries (and, for LDS, the same retrained "
        "subsets) for both methods (diagnostic replicates recentred on the full-data value: "
        "resampled duplicate query columns inflate r1, r2_5); separated = the CI excludes 0.",
    ),
    TableSpec(
        "paired",
        "paired.csv",
        ("quantity", "variant", "K", "channel", "setting_a", "setting_b", "diff", "diff_lo",
         "diff_hi", "separated"),
        "Setting-vs-setting differences of z-bar per variant, K and channel (quantity = zbar) "
        "over the queries both define, with paired percentile bootstrap CIs (the same query "
        "resample for both; settings on the same null only, whose mean cancels from the "
        "difference); separated = the CI excludes 0.",
    ),
    TableSpec(
        "queries",
        "queries.csv",
        ("query", "label"),
        "Optional per-query metadata (label, genre, source work, path of its MIDI/audio, ...).",
    ),
    TableSpec(
        "tracks",
        "tracks.csv",
        ("track_id", "label"),
        "Optional per-track metadata for display (title, composer, genre, ...).",
    ),
)

#: Entry-point group through which installed packages add tables (module docstring).
ENTRY_POINT_GROUP = "aria_tda.tables"


def _plugin_specs(entry: Any) -> list[TableSpec]:
    """The specs one loaded entry point names (a sequence, or a callable returning one)."""
    obj = entry() if callable(entry) else entry
    specs = list(obj)
    bad = [x for x in specs if not isinstance(x, TableSpec)]
    if bad:
        raise TypeError(f"expected TableSpec objects, received {type(bad[0]).__name__}")
    return specs


class _Tables(Mapping[str, TableSpec]):
    """ARIA's own table specs, then those of installed packages (loaded on first need)."""

    def __init__(self, core: tuple[TableSpec, ...]) -> None:
        self._core = {s.name: s for s in core}
        self._all: dict[str, TableSpec] | None = None

    def _load(self) -> dict[str, TableSpec]:
        if self._all is not None:
            return self._all
        from importlib.metadata import entry_points

        found = dict(self._core)
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                specs = _plugin_specs(ep.load())
            except Exception as exc:  # a broken plugin must not cost the results folder
                warnings.warn(f"tables {ep.name!r} ({ep.value}) of an installed package could "
                              f"not be loaded ({one_line(exc)}); left out", AriaWarning,
                              stacklevel=3)
                continue
            for spec in specs:
                if spec.name in found:
                    warnings.warn(f"table {spec.name!r} of {ep.value} reuses a name already "
                                  "registered; left out", AriaWarning, stacklevel=3)
                    continue
                found[spec.name] = spec
        self._all = found
        return found

    def __getitem__(self, name: str) -> TableSpec:
        if name in self._core:
            return self._core[name]
        return self._load()[name]

    def __contains__(self, name: object) -> bool:
        return name in self._core or name in self._load()

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())

    def reload(self) -> None:
        """Forget the installed packages' tables (read again on next need; for tests)."""
        self._all = None


#: The names of ARIA's own tables (those of :data:`TABLES` no other package added).
CORE_TABLES: tuple[str, ...] = tuple(s.name for s in _SPECS)

#: Every table by schema name: ARIA's own, then those installed packages register
#: (module docstring).
TABLES: _Tables = _Tables(_SPECS)

#: Tables the study runner (``aria-tda run``) writes; others (lds, agreement from a demo, or
#: the tables of installed packages) are added by other writers.
RUN_TABLES: tuple[str, ...] = ("reliability", "homogeneity", "query_z", "pairs", "topk",
                               "ranking", "alignment", "null", "queries", "confound", "tracks",
                               "paired", "aspects", "query_aspects", "set_aspects",
                               "item_alignment")
