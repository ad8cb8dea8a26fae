"""What a modality's planted pipeline hands to the shared analysis (:class:`PlantedData`).

Each modality (:mod:`~aria_tda_experiments.planted.symbolic`,
:mod:`~aria_tda_experiments.planted.audio`) builds a training set in which a small *marked set*
of items carries one planted musical aspect each, trains the model (and the control and
counterfactual models), generates plant and control queries and attributes them. What comes
out is the same for both, and :mod:`~aria_tda_experiments.planted.analysis` scores it.

Conventions
-----------
- Aspect names are ARIA channel names: symbolic ``melody harmony rhythm dynamic texture``;
  audio ``rhythm harmony timbre``.
- Every score matrix is **track level**, shape ``(n_train, n_queries)``: row ``i`` is the
  feature store's track ``i`` (``track_ids``), column ``j`` the queries table's row ``j``.
- ``queries["plant"]`` is the aspect whose plant the query's prompt begins, or ``"control"``
  for a query prompted from an unmarked item.
- ``learned``: one row per (aspect, seed) with columns ``aspect, seed, effect, ci_low,
  ci_high, n, learned, measure`` — how much worse a model trained without the marked set
  continues held-out items that begin the plant (nats/token), beyond what it does on control
  items (the modality's module defines the exact measure in ``measure``); ``learned`` = the
  interval lies above 0. Rows with ``aspect == "control"`` hold the control items' shift alone
  (``learned`` empty).
- ``counterfactual``: one row per aspect (and ``"control"``) with columns ``aspect, effect,
  ci_low, ci_high, n_seeds, n_queries, measure`` — the rise of the plant queries' loss when the
  marked set is left out of training (model without the set minus model with it, averaged over
  seeds) beyond the control queries' rise; interval by bootstrap over queries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["COUNTERFACTUAL_COLUMNS", "LEARNED_COLUMNS", "PlantedData"]

LEARNED_COLUMNS = ("aspect", "seed", "effect", "ci_low", "ci_high", "n", "learned", "measure")
COUNTERFACTUAL_COLUMNS = ("aspect", "effect", "ci_low", "ci_high", "n_seeds", "n_queries",
                          "measure")


@dataclass
class PlantedData:
    """One modality's planted experiment, ready to be scored.

    Attributes
    ----------
    modality : {"symbolic", "audio"}
    aspects : tuple of str
        Planted aspects (ARIA channel names), in report order.
    scores : dict of str to Path
        Setting name -> track-level score matrix ``(n_train, n_queries)`` (``.npy``).
    methods : dict of str to str
        Setting name -> attribution method (``"TRAK"``, ``"GradCos"``, ..., ``"embedding"``).
    feature_store : Path
        ARIA feature store of the training items (track ids = score rows, in order).
    track_ids : np.ndarray
        Training track ids, score-row order.
    marked : dict of str to np.ndarray
        Aspect -> sorted row indices of its marked training items.
    queries : pandas.DataFrame
        One row per query (score-column order): ``query_id``, ``plant``, ``label`` and any
        metadata; ``media`` (absolute path of the query's MIDI or audio file, written into
        the queries file relative to it) with ``start``/``end`` seconds where the query is a
        window of that file.
    learned : pandas.DataFrame
        ``LEARNED_COLUMNS`` (see module docstring).
    counterfactual : pandas.DataFrame
        ``COUNTERFACTUAL_COLUMNS``.
    stage_seconds : dict of str to float
        Wall seconds per stage.
    info : dict
        Sizes and settings to record in ``results.json``.
    segment_scores : dict of str to Path
        Setting name -> the raw segment-level matrix that ``scores`` aggregates (z-scored
        per query, averaged per track), where the method scores segments: the study reads
        these with ``segment_map``, so that the diagnostics see the raw scores, as the method
        prescribes (a column-centred track matrix has ``p`` = 0 to rounding, whatever the
        method did).
    segment_map : Path or None
        The segment → track map of ``segment_scores`` (``segment, track_id, start, end``).
    query_features : Path or None
        A feature store of the queries themselves (track ids = ``queries["query_id"]``),
        extracted like the training items': the study's distinctive reading is anchored on it.
    """

    modality: str
    aspects: tuple[str, ...]
    scores: dict[str, Path]
    methods: dict[str, str]
    feature_store: Path
    track_ids: np.ndarray
    marked: dict[str, np.ndarray]
    queries: pd.DataFrame
    learned: pd.DataFrame
    counterfactual: pd.DataFrame
    stage_seconds: dict[str, float] = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    segment_scores: dict[str, Path] = field(default_factory=dict)
    segment_map: Path | None = None
    query_features: Path | None = None
