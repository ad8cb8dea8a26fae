r"""Scoring a planted experiment: do the methods find the marked sets, does ARIA name the aspect?

Definitions (decided before any run; ``k`` = the size of a marked set, so recall@k is also the
precision of the top-k, and ``N`` = training items):

- **recall@k** of a plant query: the share of its plant's marked set among its top-k training
  items. Chance = ``k / N`` (the expected share under a random ranking). Mean over the plant's
  queries with a percentile bootstrap interval over them; **found** = the interval's lower end
  lies above chance. Control queries are scored against the union of every marked set (chance
  ``k / N`` as well): they should find nothing.
- **average precision** of the marked set in the query's full ranking; ``ap_chance`` is its
  exact expectation under a random ranking,
  :math:`\frac{1}{N}\left(H_N + \frac{m - 1}{N - 1}(N - H_N)\right)` (:func:`ap_chance`).
- **ARIA's leading channel** for a plant: the channel with the highest :math:`\bar z` over the
  plant's queries at ``K = k`` (from the study's ``query_z`` table), on the original matrix
  and on its rank-1 residual; ``top_channel_sig`` = the bootstrap interval of that
  :math:`\bar z` lies above 0; ``right`` = the leading channel is the planted aspect.
- beside it, the channel whose :math:`\bar z` over the plant's queries rises most above the
  control queries' (``top_channel_vs_control``, ``top_channel_vs_control_dz``,
  ``right_vs_control``): a method's top-k may cohere in one channel for every query, plant or
  not, and this reading takes that baseline out.
- **ARIA's distinctive reading** (:mod:`aria_tda.homogeneity.distinctive`, the study's
  ``set_aspects`` and ``query_aspects`` tables at ``K = k``): ``named_channel`` = the answer
  of the set reading for the plant's queries (a channel, or ``none``), ``named_right`` = it is
  the planted aspect, ``named_p`` its p-value, on the original matrix and on the residual.
- **confusion**: per setting and variant, how many plant queries of each aspect have each
  channel as their own highest z. **naming** (``planted_naming``): per setting, variant and
  reading (``paper``: the leading channel; ``distinctive``: the new reading's answer) — over the
  plant queries, the share named right, and over those whose top-k holds at least half of the
  marked set (*found* at the query level) the share named right; over the (setting, plant)
  rows whose recall interval lies above chance, the share named right; and the share of the
  control queries answered ``none`` (the paper's reading never answers none). Every query's
  answers are in ``planted_queries``.
- the ``oracle`` setting (its top-k is the marked set) is scored like a method: its row says
  which channel the plant itself moves; it is left out of the agreement.
- **agreement**: across the attribution methods, the rank agreement of each reliability
  diagnostic (sign flipped: lower = more reliable) with detection (mean recall@k over every
  plant query), as the symbolic demo measures it against LDS
  (:func:`aria_tda_experiments.validation.agreement_table`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aria_tda.errors import DataError, expected
from aria_tda_experiments.planted.data import PlantedData
from aria_tda_experiments.planted.effects import mean_interval

__all__ = ["PLANTED_TABLES", "ap_chance", "average_precision", "recall_at_k", "score_planted",
           "study_ks"]

#: The tables :func:`score_planted` returns (results-folder schema names).
PLANTED_TABLES = ("planted_aspects", "planted_confusion", "planted_naming", "planted_effects",
                  "planted_agreement", "planted_sweep", "planted_queries")
#: The readings ``planted_naming`` compares: the paper's leading channel, the distinctive one.
READINGS = ("paper", "distinctive")
NONE = "none"
FOUND_SHARE = 0.5  # a query "found" its marked set when its top-k holds at least half of it


def _order(scores: np.ndarray) -> np.ndarray:
    """Rows of each column by descending score (ties: lower row first; NaN last), ``(N, T)``."""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 2:
        raise DataError(expected("scores", "a 2-D array (n_train, n_queries)", s.shape))
    return np.argsort(-np.where(np.isfinite(s), s, -np.inf), axis=0, kind="stable")


def _relevant(n: int, marked: Any) -> np.ndarray:
    rows = np.asarray(marked, dtype=np.int64).ravel()
    if rows.size == 0 or rows.min() < 0 or rows.max() >= n:
        raise DataError(expected("marked", f"1 or more row indices in [0, {n})",
                                 f"{rows.size} indices"))
    rel = np.zeros(n, dtype=bool)
    rel[rows] = True
    return rel


def recall_at_k(scores: np.ndarray, marked: np.ndarray, k: int) -> np.ndarray:
    """Per query, the share of the ``marked`` rows among its top-``k``.

    Parameters
    ----------
    scores : np.ndarray [shape=(N, T)]
        Higher = more attributed; ties go to the lower row, NaN ranks last.
    marked : np.ndarray of int
        The marked rows.
    k : int
        Top-k size.

    Returns
    -------
    np.ndarray [shape=(T,)]
    """
    order = _order(scores)
    rel = _relevant(order.shape[0], marked)
    return rel[order[: int(k)]].sum(axis=0) / rel.sum()


def recall_at_k_reference(scores: np.ndarray, marked: np.ndarray, k: int) -> np.ndarray:
    """Loop twin of :func:`recall_at_k` (each column sorted on its own).

    Parameters
    ----------
    scores : np.ndarray [shape=(N, T)]
    marked : np.ndarray of int
    k : int
    """
    s = np.asarray(scores, dtype=np.float64)
    rel = set(int(i) for i in np.asarray(marked).ravel())
    out = []
    for j in range(s.shape[1]):
        key = [(-(v if np.isfinite(v) else -np.inf), i) for i, v in enumerate(s[:, j])]
        top = [i for _, i in sorted(key)[: int(k)]]
        out.append(sum(i in rel for i in top) / len(rel))
    return np.asarray(out)


def average_precision(scores: np.ndarray, marked: np.ndarray) -> np.ndarray:
    """Per query, the average precision of the ``marked`` rows in its ranking of every row.

    Parameters
    ----------
    scores : np.ndarray [shape=(N, T)]
        Higher = more attributed; ties go to the lower row, NaN ranks last.
    marked : np.ndarray of int
        The marked rows.

    Returns
    -------
    np.ndarray [shape=(T,)]
    """
    order = _order(scores)
    rel = _relevant(order.shape[0], marked)[order]
    precision = np.cumsum(rel, axis=0) / np.arange(1, rel.shape[0] + 1)[:, None]
    return (precision * rel).sum(axis=0) / rel.sum(axis=0)


def average_precision_reference(scores: np.ndarray, marked: np.ndarray) -> np.ndarray:
    """Loop twin of :func:`average_precision`: the mean over marked rows of the precision at
    each one's rank.

    Parameters
    ----------
    scores : np.ndarray [shape=(N, T)]
    marked : np.ndarray of int
    """
    s = np.asarray(scores, dtype=np.float64)
    rel = set(int(i) for i in np.asarray(marked).ravel())
    out = []
    for j in range(s.shape[1]):
        key = [(-(v if np.isfinite(v) else -np.inf), i) for i, v in enumerate(s[:, j])]
        ranked = [i for _, i in sorted(key)]
        precisions = []
        hits = 0
        for rank, i in enumerate(ranked, start=1):
            if i in rel:
                hits += 1
                precisions.append(hits / rank)
        out.append(sum(precisions) / len(rel))
    return np.asarray(out)


def ap_chance(n: int, m: int) -> float:
    r"""Expected average precision of ``m`` relevant among ``n`` items under a random ranking.

    Parameters
    ----------
    n : int
        Items ranked.
    m : int
        Relevant items (1 <= m <= n).
    """
    h = float(np.sum(1.0 / np.arange(1, n + 1)))
    if n == 1:
        return 1.0
    return (h + (m - 1) / (n - 1) * (n - h)) / n


def study_ks(n_train: int, k: int) -> list[int]:
    """The study's K list: the paper's K that fit a third of the pool, plus ``k``.

    Parameters
    ----------
    n_train : int
        Training items.
    k : int
        The marked-set size (the K reported).
    """
    from aria_tda.results import DEFAULT_KS

    return sorted({*[x for x in DEFAULT_KS if x <= n_train // 3], int(k)})


def _query_z(results: Path) -> pd.DataFrame:
    from aria_tda.results import read_table

    qz = read_table(results, "query_z")
    if qz is None:
        raise DataError(f"planted: no query_z table in {str(results)!r}")
    return qz


def _leading(zq: pd.DataFrame, channels: Sequence[str]) -> dict[str, Any]:
    """Leading channel of a set of queries' z (rows query, columns channel)."""
    zbar = zq[list(channels)].mean(axis=0, skipna=True)
    if zbar.isna().all():
        return {"top_channel": "", "top_channel_z": np.nan, "top_channel_sig": False,
                "zbar": zbar}
    top = str(zbar.idxmax())
    vals = zq[top].dropna().to_numpy()
    lo = mean_interval(vals, n_boot=1000, seed=0)[1] if vals.size > 1 else np.nan
    return {"top_channel": top, "top_channel_z": float(zbar[top]),
            "top_channel_sig": bool(np.isfinite(lo) and lo > 0), "zbar": zbar}


def score_planted(data: PlantedData, results: Path, *, n_boot: int = 1000,
                  seed: int = 0) -> dict[str, pd.DataFrame]:
    """Score a planted experiment whose ARIA study has been run into ``results``.

    Parameters
    ----------
    data : PlantedData
        The modality's experiment.
    results : Path
        Its study's results folder (``query_z`` and ``reliability`` tables).
    n_boot, seed : int
        Bootstrap of the recall and AP intervals (over queries).

    Returns
    -------
    dict of str to pandas.DataFrame
        :data:`PLANTED_TABLES`.
    """
    from aria_tda.results import read_table
    from aria_tda.scores import open_scores

    sizes = {a: len(r) for a, r in data.marked.items()}
    k = int(max(sizes.values()))
    n = len(data.track_ids)
    plant_of = data.queries["plant"].astype(str).to_numpy()
    qids = data.queries["query_id"].astype(str).to_numpy()
    qpos = np.arange(len(qids))  # the study's query_z names queries by column index
    union = np.unique(np.concatenate(list(data.marked.values())))
    qz_all = _query_z(results)  # every K: the K-sweep; K = k: the leading channels
    qz = qz_all[qz_all["K"] == k]
    channels = [c for c in dict.fromkeys(qz["channel"].astype(str))]
    rel = read_table(results, "reliability")
    qa_all = read_table(results, "query_aspects")  # the distinctive reading (None: not run)
    sa_all = read_table(results, "set_aspects")
    learned0 = data.learned[data.learned["seed"] == data.learned["seed"].min()
                            ].set_index("aspect")
    cf = data.counterfactual.set_index("aspect")

    rows, confusion, naming, sweep, per_query = [], [], [], [], []
    detection: dict[str, float] = {}
    for setting, path in data.scores.items():
        named_q = _distinctive_answers(qa_all, setting)
        named_s = _set_answers(sa_all, setting)
        s = open_scores(path).to_numpy()
        if s.shape != (n, len(qids)):
            raise DataError(expected(f"scores[{setting!r}]", f"shape {(n, len(qids))}", s.shape))
        zs = {v: g.pivot_table(index="query", columns="channel", values="z", aggfunc="first")
              for v, g in qz[qz["setting"] == setting].groupby("variant")}
        recalls = []
        found_q: dict[str, np.ndarray] = {}
        for aspect in (*data.aspects, "control"):
            sel = plant_of == aspect
            if not sel.any():
                continue
            marked = union if aspect == "control" else data.marked[aspect]
            r = recall_at_k(s[:, sel], marked, k)
            ap = average_precision(s[:, sel], marked)
            if aspect != "control":
                recalls.append(r)
                found_q[aspect] = r >= FOUND_SHARE
            chance = k / n
            m, lo, hi = mean_interval(r, n_boot=n_boot, seed=seed)
            am, alo, ahi = mean_interval(ap, n_boot=n_boot, seed=seed)
            row: dict[str, Any] = {
                "modality": data.modality, "setting": setting,
                "method": data.methods.get(setting, setting), "aspect": aspect, "k": k,
                "n_queries": int(sel.sum()), "recall_at_k": m, "chance": chance,
                "ci_low": lo, "ci_high": hi, "average_precision": am,
                "ap_chance": ap_chance(n, len(marked)), "ap_ci_low": alo, "ap_ci_high": ahi,
                "found": bool(lo > chance),
                "learned": (bool(learned0.loc[aspect, "learned"])
                            if aspect != "control" and aspect in learned0.index else None),
                "learned_effect": float(learned0.loc[aspect, "effect"])
                if aspect in learned0.index else np.nan,
                "counterfactual_effect": float(cf.loc[aspect, "effect"]) if aspect in cf.index
                else np.nan,
                "cf_ci_low": float(cf.loc[aspect, "ci_low"]) if aspect in cf.index else np.nan,
                "cf_ci_high": float(cf.loc[aspect, "ci_high"]) if aspect in cf.index
                else np.nan,
            }
            for variant, suffix in (("original", ""), ("residual", "_residual")):
                if variant not in zs:
                    continue
                zq = zs[variant].reindex(qpos[sel])
                lead = _leading(zq, channels)
                row[f"top_channel{suffix}"] = lead["top_channel"]
                row[f"top_channel_z{suffix}"] = lead["top_channel_z"]
                if not suffix:
                    row["top_channel_sig"] = lead["top_channel_sig"]
                    row["aspect_z"] = (float(lead["zbar"].get(aspect, np.nan))
                                       if aspect != "control" else np.nan)
                row[f"right{suffix}"] = (bool(lead["top_channel"] == aspect)
                                         if aspect != "control" else None)
                got = named_s.get((variant, aspect))
                if got is not None:
                    row[f"named_channel{suffix}"] = got["named"]
                    row[f"named_p{suffix}"] = got["p"]
                    row[f"named_delta{suffix}"] = got["delta"]
                    row[f"named_right{suffix}"] = (bool(got["named"] == aspect)
                                                   if aspect != "control" else None)
            if "original" in zs and aspect != "control" and (plant_of == "control").any():
                # beside ARIA's reading, the channel that rises most over the control
                # queries' z-bar (what any top-k of this method coheres in, plant or not)
                z0 = zs["original"]
                delta = (z0.reindex(qpos[sel]).reindex(columns=channels).mean(axis=0)
                         - z0.reindex(qpos[plant_of == "control"]).reindex(
                             columns=channels).mean(axis=0))
                top = str(delta.idxmax()) if delta.notna().any() else ""
                row["top_channel_vs_control"] = top
                row["top_channel_vs_control_dz"] = float(delta[top]) if top else np.nan
                row["right_vs_control"] = bool(top == aspect)
            rows.append(row)
        detection[setting] = float(np.mean(np.concatenate(recalls))) if recalls else np.nan
        # confusion, naming (both readings, per query and per row) and the K-sweep
        recall_q = {a: recall_at_k(s[:, plant_of == a],
                                   union if a == "control" else data.marked[a], k)
                    for a in (*data.aspects, "control") if (plant_of == a).any()}
        setting_rows = [r for r in rows if r["setting"] == setting]
        for variant, zfull in zs.items():
            zq_all = zfull.reindex(qpos).reindex(columns=channels)
            defined = zq_all.notna().any(axis=1)  # a query with no defined z has no leader
            lead = pd.Series("", index=zq_all.index, dtype=object)
            if defined.any():
                lead[defined] = zq_all[defined].idxmax(axis=1, skipna=True)
            answers = {"paper": lead.to_numpy(dtype=object)}
            if variant in named_q:
                answers["distinctive"] = named_q[variant].reindex(qpos).fillna("").to_numpy(
                    dtype=object)
            for aspect in data.aspects:
                sel = plant_of == aspect
                counts = pd.Series(answers["paper"][sel]).value_counts()
                for c in channels:
                    confusion.append({"modality": data.modality, "setting": setting,
                                      "variant": variant, "aspect": aspect, "channel": c,
                                      "n_queries": int(counts.get(c, 0)),
                                      "share": float(counts.get(c, 0)) / max(int(sel.sum()), 1)})
            for reading, ans in answers.items():
                naming.append(_naming_row(data, setting, variant, reading, ans, plant_of,
                                          found_q, setting_rows))
            for j in range(len(qids)):
                a = plant_of[j]
                rec = recall_q[a][int(np.flatnonzero(np.flatnonzero(plant_of == a) == j)[0])]
                per_query.append({
                    "modality": data.modality, "setting": setting, "variant": variant,
                    "query": int(qpos[j]), "query_id": qids[j], "aspect": a,
                    "recall_at_k": float(rec), "found": bool(rec >= FOUND_SHARE),
                    **{reading: (str(ans[j]) or None) for reading, ans in answers.items()},
                    **{f"{reading}_right": (bool(ans[j] == a) if a != "control" else None)
                       for reading, ans in answers.items()},
                })
        allk = qz_all[qz_all["setting"] == setting]
        for (variant, kk, channel), g in allk.groupby(["variant", "K", "channel"], sort=True):
            zser = g.set_index("query")["z"]
            for aspect in data.aspects:
                vals = zser.reindex(qpos[plant_of == aspect]).dropna().to_numpy()
                if not vals.size:
                    continue
                m, lo, hi = mean_interval(vals, n_boot=min(n_boot, 500), seed=seed)
                sweep.append({"modality": data.modality, "setting": setting,
                              "variant": variant, "aspect": aspect, "K": int(kk),
                              "channel": channel, "zbar": m, "zbar_lo": lo, "zbar_hi": hi,
                              "n_queries": int(vals.size)})

    effects = pd.concat([
        data.learned.assign(kind="learned"),
        data.counterfactual.rename(columns={"n_queries": "n"}).assign(kind="counterfactual",
                                                                      seed=np.nan),
    ], ignore_index=True)
    effects.insert(0, "modality", data.modality)
    agreement = _agreement(data, rel, detection)
    return {
        "planted_aspects": pd.DataFrame(rows),
        "planted_confusion": pd.DataFrame(confusion),
        "planted_naming": pd.DataFrame(naming),
        "planted_effects": effects,
        "planted_agreement": agreement,
        "planted_sweep": pd.DataFrame(sweep),
        "planted_queries": pd.DataFrame(per_query),
    }


def _distinctive_answers(qa: pd.DataFrame | None, setting: str) -> dict[str, pd.Series]:
    """Variant -> each query's answer of the distinctive reading (query index -> answer)."""
    if qa is None or not len(qa):
        return {}
    sub = qa[qa["setting"] == setting]
    return {str(v): g.drop_duplicates("query").set_index("query")["named"].astype(str)
            for v, g in sub.groupby("variant", sort=False)}


def _set_answers(sa: pd.DataFrame | None, setting: str) -> dict[tuple[str, str], dict[str, Any]]:
    """(variant, plant) -> the set reading of the plant's queries: answer, p, its delta."""
    if sa is None or not len(sa):
        return {}
    sub = sa[(sa["setting"] == setting) & (sa["variable"] == "plant")]
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for (v, val), g in sub.groupby(["variant", "value"], sort=False):
        named = str(g["named"].iloc[0])
        lead = g.loc[g["delta"].idxmax()] if g["delta"].notna().any() else None
        out[(str(v), str(val))] = {
            "named": named, "p": float(g["p"].iloc[0]),
            "delta": float(lead["delta"]) if lead is not None else np.nan}
    return out


def _naming_row(data: PlantedData, setting: str, variant: str, reading: str, ans: np.ndarray,
                plant_of: np.ndarray, found_q: dict[str, np.ndarray],
                setting_rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One ``planted_naming`` row: a reading's answers over the plant queries, the found
    queries, the rows whose recall is above chance, and the control queries."""
    n_q = n_right = n_found = n_right_found = 0
    for aspect in data.aspects:
        sel = plant_of == aspect
        right = ans[sel] == aspect
        f = found_q.get(aspect, np.zeros(int(sel.sum()), dtype=bool))
        n_q += int(sel.sum())
        n_right += int(right.sum())
        n_found += int(f.sum())
        n_right_found += int((right & f).sum())
    suffix = "" if variant == "original" else "_residual"
    key = "right" if reading == "paper" else "named_right"
    found_rows = [r for r in setting_rows if r["aspect"] != "control" and r.get("found")]
    rows_right = sum(bool(r.get(f"{key}{suffix}")) for r in found_rows)
    ctrl = plant_of == "control"
    return {
        "modality": data.modality, "setting": setting,
        "method": data.methods.get(setting, setting), "variant": variant, "reading": reading,
        "n_queries": n_q, "n_right": n_right, "share_right": n_right / n_q if n_q else np.nan,
        "n_found": n_found, "n_right_found": n_right_found,
        "right_when_found": n_right_found / n_found if n_found else np.nan,
        "n_rows_found": len(found_rows), "n_rows_right": rows_right,
        "rows_right_share": rows_right / len(found_rows) if found_rows else np.nan,
        "n_control": int(ctrl.sum()),
        "control_none_share": (float(np.mean(ans[ctrl] == NONE)) if ctrl.any() else np.nan),
    }


def _agreement(data: PlantedData, rel: pd.DataFrame | None,
               detection: dict[str, float]) -> pd.DataFrame:
    from aria_tda_experiments.validation import DIAGNOSTICS, agreement_table

    cols = ["modality", "diagnostic", "spearman", "spearman_p_exact", "kendall",
            "kendall_p_exact", "n_methods", "methods", "order"]
    if rel is None:
        return pd.DataFrame(columns=cols)
    rel = rel.set_index("setting")
    attributed = [s for s in detection if data.methods.get(s) not in ("embedding", "oracle")
                  and s in rel.index and np.isfinite(detection[s])]
    diags = list(DIAGNOSTICS) + (["topk_excess"] if "topk_excess" in rel.columns else [])
    values = {s: {d: float(rel.loc[s, d]) for d in diags} for s in attributed}
    # the same agreement as against LDS, with the verdict's top-K measure beside the four
    agr = agreement_table({s: detection[s] for s in attributed}, values, names=diags)
    agr = agr[agr["methods"] == "all"].copy()
    agr.insert(0, "modality", data.modality)
    return agr[[c for c in cols if c in agr.columns]].reset_index(drop=True)
