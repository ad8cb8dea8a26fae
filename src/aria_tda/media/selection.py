"""Which queries and training items get clips and pictures in the report.

- :func:`pick_media_queries` chooses the queries: by default the ones a reader needs — the
  strongest and the weakest by the distinctive reading (:data:`PICKS`), or the first ones,
  or the ones named.
- :func:`select_media_items` chooses, for each of them, the best-ranked items of every
  setting, under a cap on the clips in all.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from aria_tda.errors import ParameterError, expected

__all__ = ["PICKS", "pick_media_queries", "query_order", "resolve_query", "select_media_items"]

#: The rules of :func:`pick_media_queries` (besides a list of query ids).
PICKS = ("reading", "first")


def _strength(data: Any) -> tuple[dict[int, float], str] | None:
    """query -> how strongly its attribution is read, and what the number is.

    The distinctive reading's largest Δ over the channels (``query_aspects``) of the first
    setting that has one (original scores); else the largest paper z (``query_z`` at the
    report's K); ``None`` when the folder has neither.
    """
    qa = data.table("query_aspects")
    settings = list(data.settings)
    if qa is not None and len(qa) and "delta" in qa.columns:
        rows = qa[qa["variant"] == "original"] if "variant" in qa.columns else qa
        for st in settings or list(dict.fromkeys(rows["setting"])):
            r = rows[rows["setting"] == st]
            if len(r):
                best = r.groupby("query")["delta"].max()
                return ({int(q): float(v) for q, v in best.items()},
                        f"the distinctive reading of {st} (largest \u0394)")
    qz = data.table("query_z")
    if qz is not None and len(qz) and "z" in qz.columns:
        rows = qz[qz["variant"] == "original"] if "variant" in qz.columns else qz
        if "K" in rows.columns and len(rows):
            from aria_tda.report.load import choose_k

            k = choose_k(data, None)
            if k is not None and (rows["K"] == k).any():
                rows = rows[rows["K"] == k]
        for st in settings or list(dict.fromkeys(rows["setting"])):
            r = rows[rows["setting"] == st]
            if len(r):
                best = r.groupby("query")["z"].max()
                return ({int(q): float(v) for q, v in best.items()},
                        f"the largest z of {st}")
    return None


def pick_media_queries(data: Any, n: int, pick: str | Sequence[Any] = "reading",
                       ) -> tuple[list[Any], dict[str, str]]:
    """The queries whose clips and pictures the report keeps, and why each.

    Parameters
    ----------
    data : aria_tda.report.load.ResultsData
        The results folder.
    n : int
        How many (>= 0; a list of ids is taken whole).
    pick : {"reading", "first"} or sequence of query ids
        ``"reading"`` (default): the ``ceil(n/2)`` queries read most strongly and the
        ``floor(n/2)`` read most weakly (:func:`_strength`: the distinctive reading's largest
        Δ, else the largest z; NaN counts as weakest), strongest first — a reader needs the
        clearest cases and the ones the method explains least; falls back to ``"first"``
        when the folder has no reading. ``"first"``: the first ``n`` of the per-query view's
        order. A sequence: those queries (ids as ``aria-tda evidence --query`` takes them).

    Returns
    -------
    queries : list
        Query values, in the order the report keeps them.
    why : dict
        str(query) -> ``"strongest"``, ``"weakest"``, ``"first"`` or ``"named"``, plus the
        key ``"_rule"``: the rule in words.

    Raises
    ------
    ParameterError
        An unknown rule or query id.
    """
    order = query_order(data)
    if not isinstance(pick, str):
        chosen = list(dict.fromkeys(resolve_query(data, q) for q in pick))
        return chosen, {**{str(q): "named" for q in chosen}, "_rule": "the queries named"}
    if pick not in PICKS:
        raise ParameterError(expected("media_pick", "'reading', 'first' or a list of query ids",
                                      pick))
    n = max(int(n), 0)
    got = _strength(data) if pick == "reading" else None
    if got is None:
        first = order[:n]
        return first, {**{str(q): "first" for q in first}, "_rule": "the first queries"}
    strength, what = got
    known = [q for q in order if q in strength]
    key = [(-strength[q] if math.isfinite(strength[q]) else math.inf) for q in known]
    ranked = [q for _, q in sorted(zip(key, known, strict=True), key=lambda t: t[0])]
    rest = [q for q in order if q not in strength]
    ranked += rest  # queries without a reading read weakest of all
    strong = ranked[: (n + 1) // 2]
    weak = [q for q in reversed(ranked) if q not in strong][: n - len(strong)]
    why = {**{str(q): "strongest" for q in strong}, **{str(q): "weakest" for q in weak},
           "_rule": f"the strongest and the weakest by {what}"}
    return strong + weak, why


def select_media_items(
    data: Any, query_ids: Sequence[Any], *, top: int,
    first_setting: dict[tuple[str, str], str] | None = None,
    max_items: int | None = None,
    per_query: Collection[str] = (),
) -> dict[str, list[str]]:
    """The training items whose media the report keeps, per query.

    For each query, the union over every setting (original scores, then residual) of its
    ``top`` best-ranked tracks, in the order met.

    Parameters
    ----------
    data : aria_tda.report.load.ResultsData
        The results folder.
    query_ids : sequence
        The queries kept (values of the tables' ``query`` column).
    top : int
        Items per query and setting.
    first_setting : dict, optional
        Filled with (str(query), track id) -> the first setting that lists the track (whose
        best segment the report plays).
    max_items : int, optional
        At most this many training clips in all, taken in the order above across queries
        (the original scores' best ranks of the first settings first); ``None``: no cap. A
        track listed by several queries is one clip, except where the setting that lists it
        first for a query is in ``per_query``: each such (query, track) is a clip of its own.
    per_query : collection of str
        Settings with a segment map: a query plays its own best segment of each listed track
        (:mod:`aria_tda.media.attributed`), so each (query, track) is a clip of its own.

    Returns
    -------
    dict[str, list[str]]
        str(query) -> track ids.
    """
    topk = data.table("topk")
    out: dict[str, list[str]] = {str(q): [] for q in query_ids}
    if topk is None or topk.empty or top <= 0:
        return out
    want = set(query_ids)
    sel = topk[topk["query"].isin(want) & (topk["rank"] < topk["rank"].min() + top)]
    var_order = {v: i for i, v in enumerate(data.variants)}
    set_order = {s: i for i, s in enumerate(data.settings)}
    sel = sel.assign(_v=sel["variant"].map(var_order).fillna(99),
                     _s=sel["setting"].map(set_order).fillna(999))
    sel = sel.sort_values(["_v", "_s", "rank"], kind="stable")
    kept: set[tuple[str, str]] = set()  # the clips: ("", track) or (query, track)
    for q, tid, st in zip(sel["query"], sel["track_id"], sel["setting"], strict=True):
        lst = out[str(q)]
        if str(tid) in lst:
            continue
        clip = (str(q) if str(st) in per_query else "", str(tid))
        if max_items is not None and clip not in kept and len(kept) >= max_items:
            continue
        kept.add(clip)
        if str(tid) not in lst:
            lst.append(str(tid))
            if first_setting is not None:
                first_setting[(str(q), str(tid))] = str(st)
    return out


def query_order(data: Any) -> list[Any]:
    """The queries in the per-query view's order (sorted query values of the tables).

    Parameters
    ----------
    data : aria_tda.report.load.ResultsData
        The results folder.
    """
    import numpy as np

    vals = []
    for name in ("topk", "query_z", "pairs", "queries"):
        t = data.table(name)
        if t is not None and len(t) and "query" in t.columns:
            vals.append(t["query"].to_numpy())
    if not vals:
        return []
    return [int(q) for q in np.unique(np.concatenate(vals)).astype(np.int64)]


def _query_values(data: Any) -> np.ndarray:
    return np.asarray(query_order(data), dtype=np.int64)


def resolve_query(data: Any, query: Any) -> int:
    """The query a user named: its id (``query`` value or ``query_id``) or its 0-based index.

    Parameters
    ----------
    data : ResultsData
        The results folder.
    query : int or str
        A value of the tables' ``query`` column, a ``query_id`` (or ``id``) of the queries
        table, or a 0-based position among the queries (in increasing ``query`` order). An id
        wins over a position when both match.

    Returns
    -------
    int
        The ``query`` value.

    Raises
    ------
    ParameterError
        ``query`` names no query; the message lists a few valid ids.
    """
    values = _query_values(data)
    qt = data.table("queries")
    text = str(query).strip()
    if qt is not None and len(qt):
        for col in ("query_id", "id", "label"):
            if col in qt.columns:
                hit = qt[qt[col].astype(str) == text]
                if len(hit):
                    return int(hit["query"].iloc[0])
    try:
        num = int(text)
    except ValueError:
        num = None
    if num is not None and values.size:
        if num in set(values.tolist()):
            return num
        if 0 <= num < values.size:
            return int(values[num])
    examples = [str(v) for v in values[:5].tolist()]
    if qt is not None and "query_id" in qt.columns:
        examples = [f"{v} ({i})" for v, i in zip(qt["query"].head(5), qt["query_id"].head(5),
                                                  strict=True)]
    what = (f"a query id or a 0-based index below {values.size} (e.g. {', '.join(examples)})"
            if values.size else "a query of the results (this folder has no per-query tables)")
    raise ParameterError(expected("query", what, query))
