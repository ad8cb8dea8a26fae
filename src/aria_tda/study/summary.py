"""The short summary a study run ends with: one row per setting, read from its results folder.

``aria-tda run`` and ``aria-tda homogeneity`` print it as a table (or, with ``--json``, as
JSON on stdout). Nothing is recomputed: every value is read from what the run wrote —

- ``verdict``: the collapse verdict of ``reliability.csv`` (``collapsed`` | ``suspect`` |
  ``ok``);
- ``leading``: the channels whose z-bar 95% CI lies above 0 in ``homogeneity.csv`` (variant
  ``original``, ``K = K_report``; without CIs, ``n_bootstrap = 0``: whose z-bar is above 0),
  highest z-bar first, at most :data:`MAX_LEADING`; empty when no channel's group coheres
  beyond chance;
- ``zbar``: the first leading channel's z-bar (``None`` without one);
- ``aspect``: the distinctive reading's method aspect of ``aspects.csv`` (variant
  ``original``, anchor ``query`` when the study has query features, else ``group``):
  a channel or ``"none"``; ``None`` when the run wrote no reading;
- ``K``: the K of those columns (the study's ``K_report``).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from aria_tda.results import read_results_meta, read_table

__all__ = ["MAX_LEADING", "format_summary", "results_summary"]

#: Leading channels named per setting.
MAX_LEADING = 2


def _number(value: Any) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def _original(df: Any, setting: str, k: int | None) -> Any:
    rows = df[df["setting"].astype(str) == setting]
    if "variant" in rows.columns:
        rows = rows[rows["variant"].astype(str) == "original"]
    if k is not None and "K" in rows.columns:
        rows = rows[rows["K"] == k]
    return rows


def _leading(hom: Any, setting: str, k: int | None) -> tuple[list[str], float | None]:
    if hom is None:
        return [], None
    rows = _original(hom, setting, k)
    lo = rows["zbar_lo"].astype(float)
    lo = lo.where(lo.notna(), rows["zbar"].astype(float))  # no CI (n_bootstrap = 0): z-bar
    rows = rows[lo > 0].sort_values("zbar", ascending=False)
    names = [str(c) for c in rows["channel"].head(MAX_LEADING)]
    return names, (_number(rows["zbar"].iloc[0]) if len(rows) else None)


def _aspect(aspects: Any, setting: str) -> str | None:
    if aspects is None:
        return None
    rows = _original(aspects, setting, None)
    if not len(rows):
        return None
    anchors = set(rows["anchor"].astype(str)) if "anchor" in rows.columns else set()
    if "query" in anchors:
        rows = rows[rows["anchor"].astype(str) == "query"]
    return str(rows["method_aspect"].iloc[0])


def results_summary(results_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The summary of a results folder: one entry per setting (see the module docstring).

    Parameters
    ----------
    results_dir : str or path-like
        A results folder written by :func:`aria_tda.study.run_study`.

    Returns
    -------
    dict
        ``results`` (the folder), ``K`` (the study's K sweep), ``K_report`` and ``settings``:
        a list of ``{"setting", "verdict", "leading", "zbar", "aspect", "K"}``.
    """
    meta = read_results_meta(results_dir)
    study = meta.get("study") or {}
    k_report = study.get("K_report")
    k = int(k_report) if k_report is not None else None
    rel = read_table(results_dir, "reliability")
    hom = read_table(results_dir, "homogeneity")
    aspects = read_table(results_dir, "aspects")
    settings = []
    for s in meta.get("settings") or []:
        name = str(s.get("name"))
        verdict = None
        if rel is not None:
            row = rel[rel["setting"].astype(str) == name]
            verdict = str(row["verdict"].iloc[0]) if len(row) else None
        leading, zbar = _leading(hom, name, k)
        settings.append({"setting": name, "verdict": verdict, "leading": leading,
                         "zbar": zbar, "aspect": _aspect(aspects, name), "K": k})
    return {"results": str(Path(results_dir)), "K": list(study.get("K") or []),
            "K_report": k, "settings": settings}


def format_summary(summary: dict[str, Any]) -> str:
    """The summary as a plain-text table (a header, then one line per setting).

    Parameters
    ----------
    summary : dict
        :func:`results_summary`'s result.
    """
    head = ("setting", "verdict", "leading (z-bar)", "distinctive aspect", "K")
    rows = []
    for s in summary["settings"]:
        lead = ", ".join(s["leading"]) or "none"
        if s["zbar"] is not None:
            lead += f" ({s['zbar']:.2f})"
        rows.append((s["setting"], s["verdict"] or "-", lead,
                     "-" if s["aspect"] is None else s["aspect"],
                     "-" if s["K"] is None else str(s["K"])))
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
             for r in (head, *rows)]
    return "\n".join(lines)
