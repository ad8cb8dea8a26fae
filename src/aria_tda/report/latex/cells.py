r"""LaTeX building blocks shared by the table renderers.

Escaping of text, number cells formatted by :mod:`aria_tda.report.number_format` (so LaTeX
shows the digits the HTML page shows), the booktabs ``table`` environment, and the Method / Stage
grouping of the per-setting tables (paper Tables 1-2: one ``\multirow`` per method, stages
abbreviated S/C/F, the best reliability value in bold within a method group).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from aria_tda.report import number_format
from aria_tda.report.report_table import ReportTable

__all__ = [
    "DAGGER",
    "MISSING",
    "PREAMBLE",
    "STAGE_ABBREV",
    "best_high",
    "column_title",
    "escape",
    "latex_table",
    "multirow",
    "num_cell",
    "pct_cell",
    "setting_rows",
    "signed_cell",
    "stage_blocks",
    "table_label",
]

#: The packages the tables need, as a comment heading each ``.tex`` file.
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


def num_cell(x: Any, nd: int = 3, *, bold: bool = False) -> str:
    """A number with ``nd`` decimals (not a finite number: :data:`MISSING`).

    Parameters
    ----------
    x : Any
        The value.
    nd : int
        Decimals.
    bold : bool
        Set a number (not :data:`MISSING`) in ``\\textbf``.

    Returns
    -------
    str
    """
    s = number_format.fixed(x, nd, missing=MISSING)
    return rf"\textbf{{{s}}}" if bold and s != MISSING else s


def signed_cell(x: Any, nd: int = 2, *, bold_positive: bool = True) -> str:
    """A signed number (z-bar, z) with a math minus; not a finite number: :data:`MISSING`.

    Parameters
    ----------
    x : Any
        The value.
    nd : int
        Decimals.
    bold_positive : bool
        Set a positive value in ``\\textbf``.

    Returns
    -------
    str
    """
    if not number_format.finite(x):
        return MISSING
    s = number_format.signed(x, nd)
    if s.startswith("-"):
        return "$-$" + s[1:]
    return rf"\textbf{{{s}}}" if bold_positive and float(x) > 0 else s


def pct_cell(x: Any) -> str:
    """A fraction as a percentage with one decimal (``85.8\\%``); else :data:`MISSING`.

    Parameters
    ----------
    x : Any
        The fraction in [0, 1].

    Returns
    -------
    str
    """
    s = number_format.pct(x, missing=MISSING)
    return s.replace("%", r"\%")


def table_label(name: str) -> str:
    """The ``\\label`` of a table: ``tab:aria-`` and the name, non-alphanumerics as ``-``.

    Parameters
    ----------
    name : str
        The table's name.

    Returns
    -------
    str
    """
    return "tab:aria-" + "".join(ch if ch.isalnum() else "-" for ch in name)


def latex_table(
    body: list[str],
    *,
    colspec: str,
    caption: str,
    label: str,
    resize: bool,
    notes: Sequence[str] = (),
) -> str:
    """A booktabs ``table`` float around a ``tabular`` body.

    Parameters
    ----------
    body : list of str
        The lines of the ``tabular`` (rules and rows).
    colspec : str
        The ``tabular``'s column specification.
    caption : str
        The caption (LaTeX, already escaped).
    label : str
        The ``\\label`` (:func:`table_label`).
    resize : bool
        Scale the tabular to the line width (``\\resizebox``).
    notes : sequence of str
        Footnote lines under the table, small type.

    Returns
    -------
    str
        The environment's text, ending in a newline.
    """
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


def column_title(c: str) -> str:
    """A channel or column name as a heading: first letter upper case, escaped.

    Parameters
    ----------
    c : str
        The name.

    Returns
    -------
    str
    """
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
    vals = [(float(df.iloc[i][col]), i) for i in rows if number_format.finite(df.iloc[i][col])]
    if not vals:
        return set()
    best = round(min(v for v, _ in vals), 3)
    return {i for v, i in vals if round(v, 3) == best}


def setting_rows(
    t: ReportTable, cells_after: Any, *, rel_cols: Sequence[str]
) -> tuple[list[str], bool, bool]:
    """Body rows (one per setting) with Method/Stage grouping.

    Consecutive settings of one method form a group: one ``\\multirow`` method cell, the
    stages abbreviated S/C/F when all are known stages, a ``\\midrule`` around groups of
    several, and the lowest value of each reliability column in bold within a group. A
    collapsed setting carries :data:`DAGGER`.

    Parameters
    ----------
    t : ReportTable
        A per-setting table (columns ``setting``, ``method``, ``stage``, ``verdict`` and
        ``rel_cols``).
    cells_after : callable
        Given a row, the cells (LaTeX text) that follow the reliability columns.
    rel_cols : sequence of str
        The reliability columns, as :func:`num_cell` cells.

    Returns
    -------
    tuple of (list of str, bool, bool)
        ``(rows, any_collapsed, abbreviated)``.
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
            rel = [num_cell(r[c], bold=i in bold[c]) for c in rel_cols]
            rows.append(" & ".join(first + rel + cells_after(r)) + r" \\")
    return rows, any_collapsed, abbreviated


def stage_blocks(values: Sequence[Any]) -> list[list[int]]:
    """Runs of equal consecutive values, as lists of row positions.

    Parameters
    ----------
    values : sequence
        The values (a table's stages), in row order.

    Returns
    -------
    list of list of int
        One list of consecutive positions per run.
    """
    out: list[list[int]] = []
    for i, v in enumerate(values):
        if out and values[out[-1][0]] == v:
            out[-1].append(i)
        else:
            out.append([i])
    return out


def best_high(
    df: pd.DataFrame, rows: Sequence[int], col: str, *, distinct: bool = False
) -> set[int]:
    """The positions among ``rows`` holding the highest value of ``col`` (rounded to 3
    decimals, as shown), for bold type.

    Parameters
    ----------
    df : pandas.DataFrame
        The table.
    rows : sequence of int
        Row positions of one group; fewer than two: nothing is marked.
    col : str
        The column.
    distinct : bool
        Mark nothing when the group's values are all equal.

    Returns
    -------
    set of int
    """
    vals = [
        (round(float(df.iloc[i][col]), 3), i) for i in rows if number_format.finite(df.iloc[i][col])
    ]
    if len(rows) < 2 or not vals or (distinct and len({v for v, _ in vals}) == 1):
        return set()
    best = max(v for v, _ in vals)
    return {i for v, i in vals if v == best}


def multirow(n: int, text: str, j: int) -> str:
    """The cell of row ``j`` of an ``n``-row group that shows ``text`` once.

    Parameters
    ----------
    n : int
        Rows in the group (one: ``text`` itself, no ``\\multirow``).
    text : str
        The cell's LaTeX text.
    j : int
        The row's position within the group (only row 0 carries the text).

    Returns
    -------
    str
    """
    if j:
        return ""
    return rf"\multirow{{{n}}}{{*}}{{{text}}}" if n > 1 else text
