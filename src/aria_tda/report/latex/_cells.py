r"""LaTeX building blocks shared by the table renderers.

Escaping of text, number cells formatted by :mod:`aria_tda.report._fmt` (so LaTeX shows the digits
the HTML page shows), the booktabs ``table`` environment, and the Method / Stage grouping of
the per-setting tables (paper Tables 1-2: one ``\multirow`` per method, stages abbreviated
S/C/F, the best reliability value in bold within a method group).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from aria_tda.report import _fmt
from aria_tda.report._table import ReportTable

PREAMBLE = (
    "% needs \\usepackage{booktabs,multirow,graphicx} (and subcaption for the K-sweep figure)\n"
)

_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}
STAGE_ABBREV = {"semantic": "S", "coarse": "C", "fine": "F"}
DAGGER = r"$^\dagger$"
MISSING = "---"


def escape(s: Any) -> str:
    """Escape text for LaTeX (every special character; newlines become spaces).

    Parameters
    ----------
    s : Any
        Text, or any value (converted with ``str``). Runs of whitespace become one space;
        ``\\ & % $ # _ { } ~ ^ < > |`` become their LaTeX text commands.

    Returns
    -------
    str
    """
    text = " ".join(str(s).split())
    return "".join(_SPECIAL.get(ch, ch) for ch in text)


def _num(x: Any, nd: int = 3, *, bold: bool = False) -> str:
    s = _fmt.fixed(x, nd, missing=MISSING)
    return rf"\textbf{{{s}}}" if bold and s != MISSING else s


def _signed(x: Any, nd: int = 2, *, bold_positive: bool = True) -> str:
    if not _fmt.finite(x):
        return MISSING
    s = _fmt.signed(x, nd)
    if s.startswith("-"):
        return "$-$" + s[1:]
    return rf"\textbf{{{s}}}" if bold_positive and float(x) > 0 else s


def _pct(x: Any) -> str:
    s = _fmt.pct(x, missing=MISSING)
    return s.replace("%", r"\%")


def _label(name: str) -> str:
    return "tab:aria-" + "".join(ch if ch.isalnum() else "-" for ch in name)


def _table(
    body: list[str],
    *,
    colspec: str,
    caption: str,
    label: str,
    resize: bool,
    notes: Sequence[str] = (),
) -> str:
    lines = [r"\begin{table}[t]", r"\centering", rf"\caption{{{caption}}}", rf"\label{{{label}}}"]
    if resize:
        lines.append(r"\resizebox{\linewidth}{!}{%")
    lines.append(rf"\begin{{tabular}}{{{colspec}}}")
    lines += body
    lines.append(r"\end{tabular}" + ("%" if resize else ""))
    if resize:
        lines.append("}")
    if notes:
        lines.append(r"\par\smallskip\begin{minipage}{\linewidth}\footnotesize")
        lines += [n + r"\\" for n in notes]
        lines.append(r"\end{minipage}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def _title(c: str) -> str:
    return escape(c[:1].upper() + c[1:])


def _stage_text(stages: Sequence[Any]) -> tuple[dict[str, str], bool]:
    real = [str(s) for s in stages if str(s) not in ("-", "", "nan", "None")]
    abbreviate = bool(real) and all(s.lower() in STAGE_ABBREV for s in real)
    out = {}
    for s in {str(x) for x in stages}:
        if s in ("-", "", "nan", "None"):
            out[s] = MISSING
        else:
            out[s] = STAGE_ABBREV[s.lower()] if abbreviate else escape(s)
    return out, abbreviate


def _method_groups(df: pd.DataFrame) -> list[list[int]]:
    """Consecutive rows sharing a method (with a real stage) form a group."""
    groups: list[list[int]] = []
    prev = None
    for i, (m, st) in enumerate(
        zip(df["method"].astype(str), df["stage"].astype(str), strict=True)
    ):
        key = m if st not in ("-", "", "nan", "None") else None
        if groups and key is not None and key == prev:
            groups[-1].append(i)
        else:
            groups.append([i])
        prev = key
    return groups


def _best_low(df: pd.DataFrame, rows: list[int], col: str) -> set[int]:
    if len(rows) < 2 or col not in df.columns:
        return set()
    vals = [(float(df.iloc[i][col]), i) for i in rows if _fmt.finite(df.iloc[i][col])]
    if not vals:
        return set()
    best = round(min(v for v, _ in vals), 3)
    return {i for v, i in vals if round(v, 3) == best}


def _setting_rows(
    t: ReportTable, cells_after: Any, *, rel_cols: Sequence[str]
) -> tuple[list[str], bool, bool]:
    """Body rows (one per setting) with Method/Stage grouping.

    Returns ``(rows, any_collapsed, abbreviated)``.
    """
    df = t.df
    stage_map, abbreviated = _stage_text(df["stage"].tolist())
    groups = _method_groups(df)
    rows: list[str] = []
    any_collapsed = False
    for gi, g in enumerate(groups):
        if gi > 0 and (len(g) > 1 or len(groups[gi - 1]) > 1):
            rows.append(r"\midrule")
        bold = {c: _best_low(df, g, c) for c in rel_cols}
        for j, i in enumerate(g):
            r = df.iloc[i]
            collapsed = r.get("verdict") == "collapsed"
            any_collapsed |= collapsed
            mark = DAGGER if collapsed else ""
            stage = stage_map[str(r["stage"])]
            if len(g) > 1:
                method = rf"\multirow{{{len(g)}}}{{*}}{{{escape(r['method'])}}}" if j == 0 else ""
                first = [method, stage + mark]
            else:
                first = [escape(r["setting"]) + mark, stage]
            rel = [_num(r[c], bold=i in bold[c]) for c in rel_cols]
            rows.append(" & ".join(first + rel + cells_after(r)) + r" \\")
    return rows, any_collapsed, abbreviated
