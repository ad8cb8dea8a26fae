r"""The planted-aspect tables of ``aria-tda demo planted``: does attribution find a planted
training set, and does ARIA name the aspect it carries?

Conventions
-----------
The demo plants one musical aspect (melody, harmony, rhythm, ...; aspect names are ARIA's
channel names) into a marked set of training items per aspect, trains on them, and generates
*plant queries* from prompts that begin each plant (and *control* queries from unmarked
prompts, ``aspect == "control"``). Its results folder holds six tables
(:data:`aria_tda.results.TABLES`); the report shows five of them as tables and the sixth as
K-sweep panels:

- ``planted_aspects`` — one row per setting and aspect: recall@k of the marked set among the
  plant queries' top-k (mean over queries, with a percentile-bootstrap CI over queries) against
  chance (``chance = k / n_train``, the recall of a random ranking), average precision against
  its chance (``ap_chance``), whether the plant was learned and its counterfactual effect (in
  nats/token), and ARIA's leading channel with its :math:`\bar z` on the original score matrix
  and on its rank-1 residual, called *right* when it is the planted aspect;
- ``planted_confusion`` — planted aspect × ARIA's leading channel, per setting and variant;
- ``planted_naming`` — how often the leading channel is the planted aspect, overall and over
  the plant queries whose top-k found the marked set;
- ``planted_effects`` — learned (per seed) and counterfactual effects, nats/token;
- ``planted_agreement`` — rank agreement of the reliability diagnostics with detection;
- ``planted_sweep`` — :math:`\bar z` of each aspect's plant queries per K and channel
  (:func:`planted_sweep_panels`; no table: the numbers are the results folder's CSV).

Only ``planted_aspects``'s schema columns are required; the columns the demo adds
(``setting``, ``n_queries``, ``ap_chance``, the residual columns, ...) are shown where present.
Without ``setting`` the method names the row. A results folder without these tables gets
none of them (and the report is unchanged).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from aria_tda.report.load import ResultsData
from aria_tda.report.report_table import ReportTable
from aria_tda.results import RELIABILITY_DIAGNOSTICS

__all__ = [
    "CONTROL",
    "MAX_SWEEP_PANELS",
    "SweepPanel",
    "above_chance",
    "flag",
    "planted_aspect_tables",
    "planted_sweep_panels",
]

#: The ``aspect`` of the control queries (unmarked prompts; no planted aspect to name).
CONTROL = "control"
#: The most plant-query K-sweep panels one report draws (settings × aspects; the rest are
#: left out with a note, their numbers stay in ``planted_sweep.csv``).
MAX_SWEEP_PANELS = 60
_VARIANTS = ("original", "residual")
#: The readings ``planted_naming`` compares, in display order.
_READINGS = ("paper", "distinctive")
#: Columns of the main table, in display order (those the folder lacks are left out).
_ASPECT_COLUMNS = (
    "modality", "setting", "method", "aspect", "k", "n_queries", "recall_at_k", "chance",
    "ci_low", "ci_high", "average_precision", "ap_chance", "ap_ci_low", "ap_ci_high", "found",
    "learned", "learned_effect", "counterfactual_effect", "cf_ci_low", "cf_ci_high",
    "top_channel", "top_channel_z", "top_channel_sig", "aspect_z", "right",
    "top_channel_residual", "top_channel_z_residual", "right_residual",
    "named_channel", "named_p", "named_right", "named_channel_residual", "named_right_residual",
)


def flag(x: Any) -> bool | None:
    """A boolean cell as read from CSV: ``True`` / ``False``, ``None`` when blank or unknown.

    Parameters
    ----------
    x : Any
        ``True``/``False``, ``1``/``0``, or text such as ``"True"``, ``"yes"``, ``"0"``.

    Returns
    -------
    bool or None
    """
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, float, np.integer, np.floating)):
        return bool(x)
    s = str(x).strip().lower()
    if s in ("true", "1", "yes", "y", "t", "1.0"):
        return True
    if s in ("false", "0", "no", "n", "f", "0.0"):
        return False
    return None


def above_chance(low: Any, chance: Any) -> bool:
    """True when an interval's lower end lies above chance (both finite).

    Parameters
    ----------
    low : Any
        Lower end of the interval (e.g. ``ci_low`` of recall@k).
    chance : Any
        The chance level (e.g. ``chance``).

    Returns
    -------
    bool
    """
    try:
        lo, ch = float(low), float(chance)
    except (TypeError, ValueError):
        return False
    return math.isfinite(lo) and math.isfinite(ch) and lo > ch


def _ordered(first: Iterable[str], present: Iterable[Any]) -> list[str]:
    """``present``'s distinct values: those in ``first`` in its order, then the rest."""
    seen = list(dict.fromkeys(str(x) for x in present if not _blank(x)))
    head = [x for x in dict.fromkeys(first) if x in seen]
    return head + [x for x in seen if x not in head]


def _blank(x: Any) -> bool:
    if x is None:
        return True
    try:
        return bool(pd.isna(x))
    except (TypeError, ValueError):
        return False


def _aspect_order(data: ResultsData, present: Iterable[Any]) -> list[str]:
    """Aspects in channel order, other aspects after, the control queries last."""
    out = _ordered(data.channels, present)
    return [a for a in out if a != CONTROL] + ([CONTROL] if CONTROL in out else [])


def _with_setting(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with a ``setting`` column (the method's name where the folder has none)."""
    if "setting" in df.columns:
        setting = df["setting"].where(~df["setting"].map(_blank), df.get("method"))
        return df.assign(setting=setting.astype(str))
    if "method" in df.columns:
        return df.assign(setting=df["method"].astype(str))
    return df.assign(setting="-")


def _sort(df: pd.DataFrame, keys: Sequence[tuple[str, list[str]]],
          numeric: str | None = None) -> pd.DataFrame:
    """Sort ``df`` by each (column, value order) in turn, then by ``numeric`` (as numbers),
    stably; unknown values last."""
    tmp = df.copy()
    cols = []
    for i, (col, order) in enumerate(keys):
        if col not in tmp.columns:
            continue
        rank = {v: j for j, v in enumerate(order)}
        tmp[f"_k{i}"] = tmp[col].astype(str).map(rank).fillna(len(rank))
        cols.append(f"_k{i}")
    if numeric is not None and numeric in tmp.columns:
        tmp["_num"] = pd.to_numeric(tmp[numeric], errors="coerce")
        cols.append("_num")
    if cols:
        tmp = tmp.sort_values(cols, kind="stable", na_position="last").drop(columns=cols)
    return tmp.reset_index(drop=True)


def _settings(data: ResultsData, df: pd.DataFrame) -> list[str]:
    return _ordered(data.settings, df["setting"])


def _multi_modality(df: pd.DataFrame) -> bool:
    return "modality" in df.columns and df["modality"].astype(str).nunique() > 1


def _uniform_int(values: pd.Series) -> int | None:
    v = pd.to_numeric(values, errors="coerce").dropna()
    return int(v.iloc[0]) if len(v) and v.nunique() == 1 else None


def _right(row: pd.Series, col: str, channel_col: str) -> bool | None:
    """``row[col]`` when it says, else whether the leading channel is the planted aspect."""
    if str(row["aspect"]) == CONTROL:
        return None
    given = flag(row.get(col))
    if given is not None:
        return given
    ch = row.get(channel_col)
    return None if _blank(ch) or str(ch) == "" else str(ch) == str(row["aspect"])


def _aspects_table(data: ResultsData) -> ReportTable | None:
    pa = data.table("planted_aspects")
    if pa is None or pa.empty:
        return None
    pa = _with_setting(pa)
    modalities = _ordered((), pa["modality"])
    pa = _sort(pa, [("modality", modalities), ("setting", _settings(data, pa)),
                          ("aspect", _aspect_order(data, pa["aspect"]))])
    pa["right"] = [_right(r, "right", "top_channel") for _, r in pa.iterrows()]
    residual = "top_channel_residual" in pa.columns
    if residual:
        pa["right_residual"] = [
            _right(r, "right_residual", "top_channel_residual") for _, r in pa.iterrows()
        ]
    cols = [c for c in _ASPECT_COLUMNS if c in pa.columns]
    df = pa[cols + [c for c in pa.columns if c not in cols]]
    k = _uniform_int(df["k"])
    at_k = f"k = {k}" if k is not None else "each row's k"
    n_right = sum(1 for x in df["right"] if x is True)
    n_named = sum(1 for x in df["right"] if x is not None)
    cap = (
        "Planted ground truth per musical aspect: each aspect was planted into its own marked "
        "set of training items, and the plant queries are generated from prompts that begin "
        f"the plant. recall@k: the share of the marked set among a plant query's top-k ({at_k}) "
        "attributed training items, mean over the plant queries, with its 95% percentile "
        "bootstrap interval over queries; chance = k / n_train, the recall of a random "
        "ranking. AP: average precision of the marked set in the whole ranking; its chance is "
        "its expectation under a random ranking (about the marked share of the training set). "
        "Bold: the interval lies above chance. Learned: whether the trained model continues "
        "held-out items that begin the plant better than a model trained without the marked "
        "set, beyond the same difference on control items (effect in nats/token). "
        "Counterfactual effect: the rise of the plant queries' loss, in nats/token, when the "
        "marked set is left out of training (retrained without minus with, mean over seeds), "
        "beyond the control queries' rise under the same models (positive = the marked set "
        "made those queries more likely), with its interval. "
        f"ARIA's leading channel: the channel with the highest z̄ over the aspect's plant "
        f"queries at K = k, on the original score matrix"
        + (" and on its rank-1 residual" if residual else "")
        + "; 'right' when it is the planted aspect, 'wrong' when it is another; 'sig.' when "
        "that z̄ is significant. Control rows: queries from unmarked prompts, scored against "
        "the union of the marked sets (they should stay at chance; no aspect to name)."
        + (" Rises most over control queries: the channel whose z̄ over the plant queries "
           "exceeds the control queries' z̄ the most (Δz̄) - a method's top-k may cohere in one "
           "channel for every query, plant or not, and this reading takes that baseline out. "
           "The oracle setting's top-k is exactly the marked set: its row says which channel "
           "the plant itself moves."
           if "top_channel_vs_control" in pa.columns else "")
    )
    if n_named:
        cap += f" ARIA names the planted aspect in {n_right} of {n_named} (setting, aspect) rows."
    return ReportTable(
        "planted_aspects",
        "Planted ground truth per aspect" + (f" (k = {k})" if k is not None else ""),
        cap,
        df.reset_index(drop=True),
        {"k": k, "residual": residual, "multi_modality": _multi_modality(df)},
    )


def _channels(data: ResultsData, values: Iterable[Any]) -> list[str]:
    present = _ordered((), values)
    registry = list(data.channels)
    return registry + [c for c in present if c not in registry]


def _confusion_table(data: ResultsData) -> ReportTable | None:
    cf = data.table("planted_confusion")
    if cf is None or cf.empty:
        return None
    cf = cf.assign(channel=cf["channel"].astype(str), aspect=cf["aspect"].astype(str))
    channels = _channels(data, cf["channel"])
    keys = ["modality", "setting", "variant", "aspect"]
    cf = _sort(cf, [("modality", _ordered((), cf["modality"])),
                          ("setting", _settings(data, cf)),
                          ("variant", _ordered(_VARIANTS, cf["variant"])),
                          ("aspect", _aspect_order(data, cf["aspect"]))])
    rows = []
    for key, g in cf.groupby(keys, sort=False):
        row: dict[str, Any] = dict(zip(keys, key, strict=True))
        counts = {c: float(g[g["channel"] == c]["n_queries"].sum()) for c in channels}
        total = float(sum(counts.values()))
        row["n_queries"] = int(total)
        for c in channels:
            row[f"{c}_n"] = int(counts[c])
            row[f"{c}_share"] = counts[c] / total if total else np.nan
        aspect = str(row["aspect"])
        row["right_n"] = int(counts[aspect]) if aspect in counts else np.nan
        row["right_share"] = (
            counts[aspect] / total if aspect in counts and total else np.nan
        )
        rows.append(row)
    df = pd.DataFrame(rows)
    return ReportTable(
        "planted_confusion",
        "Planted aspect × ARIA's leading channel",
        "Confusion of the planted aspect (rows) with ARIA's leading channel (columns: the "
        "channel with the highest z of each plant query at K = k), per setting, on the "
        "original score matrix and on its rank-1 residual side by side: the number of plant "
        "queries led by each channel. The diagonal (bold) is where ARIA names the planted "
        "aspect; 'right' is its share of the row. A random choice among the channels would "
        "put 1 / (number of channels) of each row on the diagonal.",
        df,
        {"channels": channels, "variants": _ordered(_VARIANTS, df["variant"]),
         "multi_modality": _multi_modality(df)},
    )


def _naming_table(data: ResultsData) -> ReportTable | None:
    nm = data.table("planted_naming")
    if nm is None or nm.empty:
        return None
    nm = _sort(nm, [("modality", _ordered((), nm["modality"])),
                          ("setting", _settings(data, nm)),
                          ("variant", _ordered(_VARIANTS, nm["variant"])),
                          ("reading", _ordered(_READINGS, nm.get("reading", pd.Series([],
                                                                                     dtype=str))))])
    return ReportTable(
        "planted_naming",
        "How often ARIA names the planted aspect",
        "Per setting, score variant and reading — the paper's (the leading channel, z-bar "
        "of the top-k) and the distinctive one (the channel that explains the query's "
        "attribution beyond what the method shows for every query, or none): the plant queries "
        "named right, those that found the marked set (their top-k holds at least half of it) "
        "and the share of them named right; the (setting, plant) rows whose recall interval "
        "lies above chance and the share of them whose plant queries, read as a set, are named "
        "right; and the share of the control queries answered 'none' (the paper's reading "
        "always names a channel). Chance of naming right is 1 / (number of channels).",
        nm,
        {"multi_modality": _multi_modality(nm)},
    )


def _effects_table(data: ResultsData) -> ReportTable | None:
    ef = data.table("planted_effects")
    if ef is None or ef.empty:
        return None
    ef = _sort(ef, [("modality", _ordered((), ef["modality"])),
                    ("kind", _ordered(("learned", "counterfactual"), ef["kind"])),
                    ("aspect", _aspect_order(data, ef["aspect"]))], numeric="seed")
    return ReportTable(
        "planted_effects",
        "Learned and counterfactual effects of the plants (nats/token)",
        "Learned (one row per seed): on held-out items that begin the plant, the continuation "
        "loss of a model trained without the marked set minus that of the model trained with "
        "it; positive = the model learned to continue the plant. Counterfactual: the plant "
        "queries' loss, retrained without the marked set minus with it, mean over seeds. Both "
        "in nats/token (0 = no effect), with 95% percentile bootstrap intervals over items "
        "(n); bold: the interval excludes 0.",
        ef,
        {"multi_modality": _multi_modality(ef)},
    )


def _agreement_table(data: ResultsData) -> ReportTable | None:
    ag = data.table("planted_agreement")
    if ag is None or ag.empty:
        return None
    ag = _sort(ag, [("modality", _ordered((), ag["modality"])),
                          ("diagnostic", _ordered(RELIABILITY_DIAGNOSTICS, ag["diagnostic"]))])
    p = "spearman_p_exact" in ag.columns or "kendall_p_exact" in ag.columns
    return ReportTable(
        "planted_agreement",
        "Agreement of diagnostics with plant detection",
        "Rank agreement across attribution methods between each reliability diagnostic "
        "(lower = better, so its sign is flipped) and how well the method finds the plants "
        "(mean recall@k over the plant queries): Spearman and Kendall correlations of the two "
        "method rankings (+1 = the diagnostic orders the methods as detection does, 0 = no "
        "relation)"
        + (
            "; p: exact one-sided permutation p-value over the n! orderings of the n methods "
            "(smallest possible 1/n!)."
            if p
            else "."
        ),
        ag,
        {"multi_modality": _multi_modality(ag)},
    )


def planted_aspect_tables(data: ResultsData) -> list[ReportTable]:
    """The planted-aspect tables of a results folder (empty without them).

    Parameters
    ----------
    data : ResultsData
        The results folder, as read by :func:`aria_tda.report.load.load_results`.

    Returns
    -------
    list of ReportTable
        In report order, those the folder has rows for:

        - ``planted_aspects`` — the ``planted_aspects`` rows ordered by modality, setting
          (results order) and aspect (channel order, ``control`` last), with ``right`` (and
          ``right_residual``) filled where blank: ``True`` when the leading channel is the
          planted aspect, ``None`` for control rows. ``layout``: ``k`` (when every row has the
          same), ``residual``, ``multi_modality``;
        - ``planted_confusion`` — wide: one row per (modality, setting, variant, aspect),
          ``n_queries`` (row total), ``{channel}_n`` and ``{channel}_share`` for every channel
          (0 where the folder has no row), ``right_n`` / ``right_share`` (the diagonal).
          ``layout``: ``channels``, ``variants``, ``multi_modality``;
        - ``planted_naming``, ``planted_effects``, ``planted_agreement`` — the folder's rows,
          ordered (settings in results order, variants original first, learned before
          counterfactual, seeds ascending, diagnostics in the paper's order).
    """
    out = []
    for build in (_aspects_table, _confusion_table, _naming_table, _effects_table,
                  _agreement_table):
        t = build(data)
        if t is not None:
            out.append(t)
    return out


@dataclass(frozen=True)
class SweepPanel:
    """One K-sweep panel of the plant queries.

    Attributes
    ----------
    setting : str
        The setting whose score matrix the queries were attributed with.
    aspect : str
        The planted aspect (a channel name), or ``"control"``.
    title : str
        The panel title, naming the planted aspect, e.g. ``"TRAK — melody plant queries"``.
    rows : pandas.DataFrame
        Columns ``variant, K, channel, zbar, zbar_lo, zbar_hi`` (those present) for
        :func:`aria_tda.report.plots.ksweep_figure`.
    k : int or None
        The k of the planted tables (marked in the panel), when known.
    """

    setting: str
    aspect: str
    title: str
    rows: pd.DataFrame
    k: int | None


def planted_sweep_panels(data: ResultsData) -> tuple[list[SweepPanel], int]:
    """The K-sweep panels of the plant queries: one per (modality, setting, aspect).

    Parameters
    ----------
    data : ResultsData
        The results folder, as read by :func:`aria_tda.report.load.load_results`.

    Returns
    -------
    panels : list of SweepPanel
        At most :data:`MAX_SWEEP_PANELS`, in setting (results order) then aspect order (channel
        order, control last); both variants in each panel.
    n_left_out : int
        Panels beyond the cap, not drawn.
    """
    sw = data.table("planted_sweep")
    if sw is None or sw.empty:
        return [], 0
    sw = sw.assign(aspect=sw["aspect"].astype(str))
    modalities = _ordered((), sw["modality"])
    multi = len(modalities) > 1
    ks: dict[tuple[str, str, str], int] = {}
    pa = data.table("planted_aspects")
    if pa is not None:
        pa = _with_setting(pa)
        for _, r in pa.iterrows():
            try:
                ks[(str(r["modality"]), str(r["setting"]), str(r["aspect"]))] = int(r["k"])
            except (TypeError, ValueError):
                continue
    cols = [c for c in ("variant", "K", "channel", "zbar", "zbar_lo", "zbar_hi") if c in sw]
    panels: list[SweepPanel] = []
    total = 0
    for m in modalities:
        sm = sw[sw["modality"].astype(str) == m]
        for s in _settings(data, sm):
            ss = sm[sm["setting"].astype(str) == s]
            for a in _aspect_order(data, ss["aspect"]):
                total += 1
                if len(panels) >= MAX_SWEEP_PANELS:
                    continue
                what = "control queries" if a == CONTROL else f"{a} plant queries"
                title = f"{m} · {s} — {what}" if multi else f"{s} — {what}"
                rows = ss[ss["aspect"] == a][cols].reset_index(drop=True)
                panels.append(SweepPanel(s, a, title, rows, ks.get((m, s, a))))
    return panels, total - len(panels)
