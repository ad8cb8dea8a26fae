r"""The planted-influence tables of the audio demo (``planted.csv``), wide and with chance levels.

``planted.csv`` is long: one row per (setting, level, K) with the recall@K of the *planted*
queries (generations from held-out versions of training works, whose other versions are in
the training set). The report shows it wide, one row per setting and one ``recall_at_{K}``
column per K, as two tables: ``planted`` (track level, the main one) and
``planted_segment`` (segment level).

Chance level: ``planted.csv``'s optional ``chance`` column (per setting, level and K) when it
has one. Otherwise (track level only): a random top-K of the ``N`` training tracks contains one of
the ``v`` training tracks of a query's source work with probability
:math:`1 - \binom{N - v}{K} / \binom{N}{K}` (:func:`chance_recall`). ``planted.csv`` holds the
number of training works but neither ``N`` nor ``v``; they are read from ``tracks.csv`` when it
has a ``work_id`` column (training rows only when it has a ``split`` column) and its number of
training works agrees with ``planted.csv``. ``v`` is taken per planted query's source work when
``queries.csv`` names them (``split == "planted"`` and ``work_id``), else averaged over all
training works. Without those numbers the chance columns are left out (the segment level then has
none: the segment counts per work are not in the results folder).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from aria_tda._checks import check_int
from aria_tda.errors import ParameterError
from aria_tda.report import number_format
from aria_tda.report.html.cells import (
    Cell,
    badge,
    best_high_by,
    block_starts,
    esc,
    html_table,
    num_cell,
    setting_attrs,
    text_cell,
    th,
)
from aria_tda.report.latex.cells import (
    DAGGER,
    MISSING,
    best_high,
    escape,
    latex_table,
    multirow,
    stage_blocks,
    table_label,
)
from aria_tda.report.load import ResultsData
from aria_tda.report.report_table import ReportTable

__all__ = ["chance_recall", "planted_html", "planted_latex", "planted_tables"]

LEVELS = ("track", "segment")


def chance_recall(n_items: int, n_source: int, k: int) -> float:
    r"""Probability that a uniformly random top-``k`` of ``n_items`` holds one of ``n_source``.

    :math:`1 - \binom{N - v}{K} / \binom{N}{K} = 1 - \prod_{i<v} (N - K - i) / (N - i)`,
    summed in log space (accurate to rounding for paper-scale ``N``; ``v`` terms).

    Parameters
    ----------
    n_items : int
        Number of ranked items ``N`` (>= 1), e.g. training tracks.
    n_source : int
        Items ``v`` that count as a hit (0 <= ``v`` <= ``N``), e.g. the training tracks of the
        query's source work.
    k : int
        Size of the random top-K (>= 1; values above ``N`` act as ``N``).

    Returns
    -------
    float
        The chance level of recall@K, in [0, 1].

    Raises
    ------
    ParameterError
        for counts out of range.
    """
    n = check_int("n_items", n_items, min_value=1)
    v = check_int("n_source", n_source, min_value=0)
    k = min(check_int("k", k, min_value=1), n)
    if v > n:
        raise ParameterError(f"n_source: expected at most n_items = {n}, got {v}")
    if v == 0:
        return 0.0
    if k > n - v:
        return 1.0
    # C(N-v, K) / C(N, K) = prod_{i<v} (N-K-i) / (N-i): v factors, each log1p(-K/(N-i))
    log_miss = math.fsum(math.log1p(-k / (n - i)) for i in range(v))
    return float(min(1.0, max(0.0, -math.expm1(log_miss))))


def _train_work_sizes(data: ResultsData, n_train_works: int | None) -> dict[str, int] | None:
    """Training tracks per work from ``tracks.csv``, or ``None`` when it cannot say."""
    tracks = data.table("tracks")
    if tracks is None or "work_id" not in tracks.columns or tracks.empty:
        return None
    if "split" in tracks.columns:
        tracks = tracks[tracks["split"].astype(str) == "train"]
    works = tracks["work_id"].dropna().astype(str)
    if works.empty:
        return None
    sizes = {str(w): int(n) for w, n in works.value_counts(sort=False).items()}
    if n_train_works is not None and len(sizes) != n_train_works:
        return None  # tracks.csv does not describe the training set planted.csv was scored on
    return sizes


def _planted_sources(data: ResultsData, sizes: dict[str, int]) -> list[str]:
    q = data.table("queries")
    if q is None or not {"split", "work_id"} <= set(q.columns):
        return []
    src = q[q["split"].astype(str) == "planted"]["work_id"].dropna().astype(str)
    return [w for w in src if w in sizes]


def _chance(data: ResultsData, ks: Sequence[int], n_train_works: int | None) -> dict[str, Any]:
    sizes = _train_work_sizes(data, n_train_works)
    if not sizes:
        return {}
    n = sum(sizes.values())
    sources = _planted_sources(data, sizes)
    vs = [sizes[w] for w in sources] if sources else list(sizes.values())
    return {
        "values": {int(k): float(np.mean([chance_recall(n, v, int(k)) for v in vs])) for k in ks},
        "n_tracks": n,
        "versions": sorted(set(vs)),
        "per_query": bool(sources),
    }


def _one_level(data: ResultsData, pl: pd.DataFrame, level: str) -> ReportTable | None:
    sub = pl[pl["level"].astype(str) == level]
    if sub.empty:
        return None
    ks = sorted({int(k) for k in sub["K"]})
    present = list(dict.fromkeys(sub["setting"].astype(str)))
    order = [s for s in data.settings if s in present] + [
        s for s in present if s not in data.settings
    ]
    nw = (
        pd.to_numeric(sub["n_train_works"], errors="coerce").dropna()
        if "n_train_works" in sub.columns
        else pd.Series([], dtype=float)
    )
    n_train_works = int(nw.iloc[0]) if len(nw) and nw.nunique() == 1 else None
    from_table = "chance" in sub.columns and bool(sub["chance"].map(_finite).any())
    chance = _chance(data, ks, n_train_works) if level == "track" and not from_table else {}
    rows = []
    for s in order:
        ss = sub[sub["setting"].astype(str) == s]
        first = ss.iloc[0]
        info = data.setting_info(s) if s in data.settings else {}
        row: dict[str, Any] = {
            "setting": s,
            "method": first["method"] if "method" in ss.columns else info.get("method"),
            "stage": first["stage"] if "stage" in ss.columns else info.get("stage"),
            "verdict": data.verdict(s),
            "n_queries": int(ss["n_queries"].max()),
        }
        if "n_train_works" in ss.columns:
            row["n_train_works"] = ss["n_train_works"].max()
        for k in ks:
            kk = ss[ss["K"] == k]
            row[f"recall_at_{k}"] = float(kk.iloc[-1]["recall"]) if len(kk) else np.nan
        for k in ks:
            if from_table:
                kk = ss[ss["K"] == k]
                row[f"chance_at_{k}"] = float(kk.iloc[-1]["chance"]) if len(kk) else np.nan
            elif chance:
                row[f"chance_at_{k}"] = chance["values"][k]
        rows.append(row)
    df = pd.DataFrame(rows)
    shown = _chance_layout(df, ks)
    nq = max(int(r["n_queries"]) for r in rows)
    what = (
        "Planted influence: held-out versions of training works (the same work rendered with "
        "another instrument, tempo or transposition; its other versions are in the training "
        "set) are generated from and attributed like the other queries. "
    )
    unit = "training track" if level == "track" else "training segment"
    items = (
        "top-K attributed tracks (a track's score is the mean of its segments' scores)"
        if level == "track"
        else "top-K attributed segments"
    )
    queries = "the planted query" if nq == 1 else f"the {nq} planted queries"
    cap = (
        f"{what}recall@K is the fraction of {queries} whose source work has a {unit} among "
        f"the {items}; ties count against the method."
    )
    if n_train_works is not None:
        cap += f" {n_train_works} training works."
    if from_table:
        pool = "training tracks" if level == "track" else f"training {level}s of the stage"
        cap += (
            f" Chance (from planted.csv): recall@K of a random ranking, 1 − C(N−v, K)/C(N, K) "
            f"for N {pool} of which v belong to the source work, averaged over the planted "
            "queries."
        )
    elif chance:
        vs = chance["versions"]
        v_txt = str(vs[0]) if len(vs) == 1 else f"{vs[0]}–{vs[-1]}"
        cap += (
            f" Chance: a random top-K of the N = {chance['n_tracks']} training tracks holds one "
            f"of the source work's v = {v_txt} training tracks with probability "
            "1 − C(N−v, K)/C(N, K) (N and v from tracks.csv"
            + (", averaged over the planted queries" if chance["per_query"] else "")
            + ")."
        )
    elif level == "track":
        cap += " (No chance level: tracks.csv does not give the training tracks per work.)"
    else:
        cap += " (No chance level: the counts per work are not in the results.)"
    name = "planted" if level == "track" else f"planted_{level}"
    title = (
        "Planted influence: recall@K (track level)"
        if level == "track"
        else f"Planted influence: recall@K ({level} level)"
    )
    return ReportTable(
        name,
        title,
        cap,
        df,
        {
            "ks": ks,
            "level": level,
            **shown,
            "chance_source": "planted.csv" if from_table else "tracks.csv" if chance else None,
            "chance_n": chance.get("n_tracks"),
            "chance_v": chance.get("versions", []),
        },
    )


def _finite(x: Any) -> bool:
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def _uniform(values: pd.Series) -> float | None:
    """The common value of ``values`` (all finite and equal to 1e-9), else ``None``."""
    v = pd.to_numeric(values, errors="coerce").astype(float)
    if len(v) == 0 or not v.map(_finite).all() or float(v.max() - v.min()) > 1e-9:
        return None
    return float(v.iloc[0])


def _chance_layout(df: pd.DataFrame, ks: Sequence[int]) -> dict[str, Any]:
    """How to show the ``chance_at_{K}`` columns: one row for the table (``chance``), one row
    per stage block (``chance_blocks``), or beside each cell (``chance_cells``)."""
    out: dict[str, Any] = {"chance": {}, "chance_blocks": {}, "chance_cells": False}
    cols = [f"chance_at_{k}" for k in ks]
    if not all(c in df.columns for c in cols) or not df[cols].map(_finite).to_numpy().any():
        return out
    glob = {int(k): _uniform(df[f"chance_at_{k}"]) for k in ks}
    if all(v is not None for v in glob.values()):
        out["chance"] = glob
        return out
    blocks: dict[str, dict[int, float]] = {}
    for st, g in df.groupby(df["stage"].astype(str), sort=False):
        per = {int(k): _uniform(g[f"chance_at_{k}"]) for k in ks}
        if any(v is None for v in per.values()):
            out["chance_cells"] = True
            return out
        blocks[str(st)] = {k: float(v) for k, v in per.items() if v is not None}
    out["chance_blocks"] = blocks
    return out


def planted_tables(data: ResultsData) -> list[ReportTable]:
    """The planted-influence tables of a results folder (empty without ``planted.csv``).

    Parameters
    ----------
    data : ResultsData
        The results folder, as read by :func:`aria_tda.report.load.load_results`.

    Returns
    -------
    list of ReportTable
        ``planted`` (track level) and ``planted_segment`` (segment level), each present when
        ``planted.csv`` has rows of that level; one row per setting (results order), columns
        ``setting, method, stage, verdict, n_queries, n_train_works, recall_at_{K}...`` and
        ``chance_at_{K}...`` when a chance level is known: ``planted.csv``'s own ``chance``
        column, else (track level) :func:`chance_recall` with N and v from ``tracks.csv``.
        ``layout`` holds ``ks``, ``level``, where to show chance (``chance``: K -> value when
        it is the same for every row; ``chance_blocks``: stage -> K -> value when it is the
        same within each stage; ``chance_cells``: ``True`` otherwise), ``chance_source``
        (``"planted.csv"``, ``"tracks.csv"`` or ``None``), ``chance_n`` and ``chance_v`` (N
        and the distinct v of a ``tracks.csv`` chance).
    """
    pl = data.table("planted")
    if pl is None or pl.empty:
        return []
    out = []
    for level in (*LEVELS, *sorted(set(pl["level"].astype(str)) - set(LEVELS))):
        t = _one_level(data, pl, level)
        if t is not None:
            out.append(t)
    return out


# ----------------------------------------------------------------------------------- HTML


def _chance_row(
    ks: Sequence[int], values: Any, label: str, **attrs: str
) -> tuple[list[Cell], dict[str, str]]:
    cells = [text_cell(f"<i>{esc(label)}</i>", colspan="4")]
    cells += [
        num_cell(
            esc(number_format.pct(values.get(k), 0)), cls="sub", **{"data-col": f"chance_at_{k}"}
        )
        for k in ks
    ]
    cells.append(text_cell(""))
    return cells, {"class": "chance block-start", **attrs}


def planted_html(t: ReportTable) -> str:
    """Recall@K per setting (one column per K), best per stage and K in bold, with the chance
    level as a last row, a row per stage, or beside each cell (``t.layout``).

    Parameters
    ----------
    t : ReportTable
        A ``planted`` / ``planted_<level>`` table from :func:`planted_tables`.

    Returns
    -------
    str
    """
    df = t.df.reset_index(drop=True)
    ks = t.layout["ks"]
    chance = t.layout.get("chance") or {}
    blocks = t.layout.get("chance_blocks") or {}
    in_cells = bool(t.layout.get("chance_cells"))
    stage_list = df["stage"].astype(str).tolist()
    staged = len(set(stage_list)) > 1
    head = [
        [th("Setting"), th("Method"), th("Stage"), th("Verdict")]
        + [th(f"recall@{k} ↑") for k in ks]
        + [th("Planted queries")]
    ]
    by = "stage" if staged else None
    best = {k: best_high_by(df, f"recall_at_{k}", by, distinct=True) for k in ks}
    starts = set(block_starts(stage_list)) if staged else set()
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for i, r in df.iterrows():
        cells = [
            text_cell(esc(r["setting"])),
            text_cell(esc(r["method"])),
            text_cell(esc(r["stage"])),
            text_cell(badge(r["verdict"])),
        ]
        for k in ks:
            ch = r.get(f"chance_at_{k}")
            sub = (
                f'<span class="ci">chance {esc(number_format.pct(ch, 0))}</span>'
                if in_cells and number_format.finite(ch)
                else ""
            )
            cells.append(
                num_cell(
                    esc(number_format.pct(r[f"recall_at_{k}"], 0)) + sub,
                    cls="best" if i in best[k] else "",
                    **{"data-col": f"recall_at_{k}"},
                )
            )
        cells.append(
            num_cell(esc(number_format.integer(r["n_queries"])), **{"data-col": "n_queries"})
        )
        attrs = setting_attrs(r)
        if i in starts and i > 0:
            attrs["class"] = (attrs.get("class", "") + " block-start").strip()
        rows.append((cells, attrs))
        st = stage_list[i]
        if st in blocks and (i + 1 == len(df) or stage_list[i + 1] != st):
            rows.append(
                _chance_row(ks, blocks[st], f"chance, {st} (random top-K)", **{"data-stage": st})
            )
    if chance:
        rows.append(_chance_row(ks, chance, "chance (random top-K)"))
    return html_table(head, rows, attrs={"id": f"table-{t.name}"})


# ---------------------------------------------------------------------------------- LaTeX


def _chance_tex(ks: Sequence[int], values: Any, label: str) -> str:
    cells = [rf"\multicolumn{{2}}{{l}}{{\emph{{{label}}}}}"] + [
        number_format.pct(values.get(k), 0, missing=MISSING).replace("%", r"\%") for k in ks
    ]
    return " & ".join(cells) + r" \\"


def planted_latex(t: ReportTable) -> str:
    """Recall@K per setting (Stage | Method | recall@K ...), best within each stage in bold.

    Parameters
    ----------
    t : ReportTable
        A ``planted`` / ``planted_<level>`` table from
        :func:`planted_tables` (``layout``: ``ks``, ``level`` and where
        the chance level goes: ``chance``, ``chance_blocks`` or ``chance_cells``).

    Returns
    -------
    str
        One ``table`` environment; the chance level, when known, is a last row, a row per
        stage, or a parenthesis in each cell.
    """
    df = t.df.reset_index(drop=True)
    ks, level = t.layout["ks"], t.layout.get("level", "track")
    chance = t.layout.get("chance") or {}
    chance_blocks = t.layout.get("chance_blocks") or {}
    in_cells = bool(t.layout.get("chance_cells"))
    head = ["Stage", "Method", *[rf"$R@{int(k)}\uparrow$" for k in ks]]
    body = [r"\toprule", " & ".join(head) + r" \\", r"\midrule"]
    any_collapsed = False
    for bi, block in enumerate(stage_blocks(df["stage"].astype(str).tolist())):
        if bi:
            body.append(r"\midrule")
        best = {k: best_high(df, block, f"recall_at_{k}", distinct=True) for k in ks}
        for j, i in enumerate(block):
            r = df.iloc[i]
            collapsed = r.get("verdict") == "collapsed"
            any_collapsed |= collapsed
            stage = r["stage"]
            stage_txt = MISSING if str(stage) in ("-", "", "nan", "None") else escape(stage)
            cells = [
                multirow(len(block), stage_txt, j),
                escape(r["method"]) + (DAGGER if collapsed else ""),
            ]
            for k in ks:
                s = number_format.pct(r[f"recall_at_{k}"], 0, missing=MISSING).replace("%", r"\%")
                s = rf"\textbf{{{s}}}" if i in best[k] and s != MISSING else s
                ch = r.get(f"chance_at_{k}")
                if in_cells and number_format.finite(ch):
                    s += " (" + number_format.pct(ch, 0).replace("%", r"\%") + ")"
                cells.append(s)
            body.append(" & ".join(cells) + r" \\")
        st = str(df.iloc[block[0]]["stage"])
        if st in chance_blocks:
            body.append(_chance_tex(ks, chance_blocks[st], "chance"))
    if chance:
        body.append(r"\midrule")
        body.append(_chance_tex(ks, chance, "chance"))
    body.append(r"\bottomrule")
    nq = int(pd.to_numeric(df["n_queries"], errors="coerce").max()) if len(df) else 0
    items = "tracks" if level == "track" else f"{escape(level)}s"
    queries = "the planted query" if nq == 1 else f"the {nq} planted queries"
    cap = (
        f"Planted influence ({escape(level)} level): recall@$K$ is the fraction of {queries} "
        "(generations from held-out versions of training works) whose source "
        f"work has a training {escape(level)} among the top-$K$ attributed {items}. Bold marks "
        "the best value within each stage."
    )
    if chance or chance_blocks or in_cells:
        vs = [int(v) for v in t.layout.get("chance_v") or []]
        n = t.layout.get("chance_n")
        nv = (
            f" ($N{{=}}{int(n)}$, $v{{=}}{vs[0] if len(vs) == 1 else f'{vs[0]}..{vs[-1]}'}$)"
            if n is not None and vs
            else ""
        )
        where = " (in parentheses)" if in_cells else " (per stage)" if chance_blocks else ""
        cap += (
            rf" Chance{where}: $1-\binom{{N-v}}{{K}}/\binom{{N}}{{K}}$ for $N$ training "
            f"{items} of which $v$ belong to the source work{nv}."
        )
    notes = [DAGGER + r"~collapsed (reliability verdict)."] if any_collapsed else []
    return latex_table(
        body,
        colspec="ll" + "c" * len(ks),
        caption=cap,
        label=table_label(t.name),
        resize=len(ks) > 8,
        notes=notes,
    )
