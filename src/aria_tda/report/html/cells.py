"""Small HTML builders shared by the table renderers and the page.

Escaping (:func:`html.escape` for every string from the results folder), JSON that can sit
inside ``<script>``, table cells ``(inner HTML, attributes)`` and verdict badges. ARIA's table
renderers, the report sections and the listening room's dossier build their HTML with these,
as may the sections of other packages.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from aria_tda.report import number_format

__all__ = [
    "Cell", "badge", "best_high_by", "best_low_within", "block_starts", "clean_json",
    "column_title", "esc", "html_table", "json_default", "json_for_script", "num_cell",
    "setting_attrs", "text_cell", "th", "zbar_cell",
]

#: A table cell: ``(inner HTML, attributes)``.
Cell = tuple[str, dict[str, str]]


def esc(x: Any) -> str:
    """HTML-escape any value (quotes too), for text and attribute values alike.

    Parameters
    ----------
    x : Any
        The value; ``None`` is the empty string, anything else goes through ``str``.

    Returns
    -------
    str
    """
    return html.escape("" if x is None else str(x), quote=True)


def json_for_script(obj: Any) -> str:
    """Compact JSON that can sit inside a ``<script>`` element.

    ``<``, ``>``, ``&`` and the line separators U+2028/U+2029 are written as ``\\u`` escapes,
    so no text of the data can close the element; NaN is refused (clean it with
    :func:`clean_json` first).

    Parameters
    ----------
    obj : Any
        JSON-able data; NumPy scalars and arrays go through :func:`json_default`.

    Returns
    -------
    str
    """
    text = json.dumps(obj, separators=(",", ":"), allow_nan=False, default=json_default)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def json_default(o: Any) -> Any:
    """The ``default=`` of :func:`json.dumps` for the page's data.

    Parameters
    ----------
    o : Any
        A value :mod:`json` cannot write.

    Returns
    -------
    Any
        A NumPy integer as ``int``, a NumPy float as ``float`` (non-finite: ``None``), an array
        as a list; anything else as ``str``.
    """
    try:
        import numpy as np

        if isinstance(o, np.integer):
            return int(o)
        if isinstance(o, np.floating):
            v = float(o)
            return v if math.isfinite(v) else None
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    return str(o)


def clean_json(obj: Any) -> Any:
    """Replace non-finite floats by None (JSON has no NaN).

    Parameters
    ----------
    obj : Any
        A float, or mappings and lists/tuples of them (nested); mapping keys become ``str``,
        tuples lists.

    Returns
    -------
    Any
        The same structure, every non-finite float ``None``; other values unchanged.
    """
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {str(k): clean_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_json(v) for v in obj]
    return obj


# ---------------------------------------------------------------- small builders


def _attrs(a: Mapping[str, str]) -> str:
    return "".join(f' {k}="{esc(v)}"' for k, v in a.items())


def num_cell(text: str, **attrs: str) -> Cell:
    """A number cell (class ``num``, right-aligned by the page's CSS).

    Parameters
    ----------
    text : str
        Inner HTML (already escaped).
    **attrs : str
        Attributes of the cell; ``cls`` adds classes.

    Returns
    -------
    Cell
    """
    cls = attrs.pop("cls", "")
    return text, {"class": ("num " + cls).strip(), **attrs}


def text_cell(text: str, **attrs: str) -> Cell:
    """A text cell (class ``txt``).

    Parameters
    ----------
    text : str
        Inner HTML (already escaped).
    **attrs : str
        Attributes of the cell; ``cls`` adds classes.

    Returns
    -------
    Cell
    """
    cls = attrs.pop("cls", "")
    return text, {"class": ("txt " + cls).strip(), **attrs}


def html_table(
    head: Sequence[Sequence[Cell]],
    rows: Iterable[tuple[Sequence[Cell], dict[str, str]]],
    *,
    cls: str = "data",
    attrs: Mapping[str, str] | None = None,
) -> str:
    """A ``<table>`` in its scrolling wrapper.

    Parameters
    ----------
    head : sequence of sequence of Cell
        Header rows, each a sequence of ``<th>`` cells.
    rows : iterable of (sequence of Cell, dict)
        Body rows: the ``<td>`` cells and the row's attributes.
    cls : str
        Class of the table.
    attrs : mapping, optional
        More attributes of the table (values are escaped).

    Returns
    -------
    str
        ``<div class="tablewrap"><table ...>...</table></div>``.
    """
    out = [f'<div class="tablewrap"><table class="{cls}"{_attrs(attrs or {})}><thead>']
    for hr in head:
        out.append("<tr>" + "".join(f"<th{_attrs(a)}>{t}</th>" for t, a in hr) + "</tr>")
    out.append("</thead><tbody>")
    for cells, rattrs in rows:
        out.append(
            f"<tr{_attrs(rattrs)}>"
            + "".join(f"<td{_attrs(a)}>{t}</td>" for t, a in cells)
            + "</tr>"
        )
    out.append("</tbody></table></div>")
    return "".join(out)


def th(text: str, **a: str) -> Cell:
    """A header cell (``<th>``).

    Parameters
    ----------
    text : str
        Inner HTML (already escaped).
    **a : str
        Attributes (``colspan``, ``rowspan``, ``class``, ...).

    Returns
    -------
    Cell
    """
    return text, a


def badge(verdict: Any) -> str:
    """A verdict badge: ``collapsed``, ``suspect``, ``ok``, or ``unknown`` for anything else.

    Parameters
    ----------
    verdict : Any
        The verdict text.

    Returns
    -------
    str
        A ``<span class="badge ...">``.
    """
    v = str(verdict).lower() if isinstance(verdict, str) and verdict else "unknown"
    cls = v if v in ("collapsed", "suspect", "ok") else "unknown"
    return f'<span class="badge {cls}">{esc(v)}</span>'


def zbar_cell(row: Mapping[str, Any], c: str) -> Cell:
    """The z-bar cell of channel ``c``: the signed value and, when known, its interval.

    Parameters
    ----------
    row : mapping
        A table row with ``{c}_zbar`` and optionally ``{c}_zbar_lo`` / ``{c}_zbar_hi``.
    c : str
        The channel.

    Returns
    -------
    Cell
        A number cell (class ``pos`` when z-bar is positive).
    """
    z = row.get(f"{c}_zbar")
    txt = esc(number_format.signed(z))
    lo, hi = row.get(f"{c}_zbar_lo"), row.get(f"{c}_zbar_hi")
    ci = (
        f'<span class="ci">[{esc(number_format.signed(lo))}, '
        f'{esc(number_format.signed(hi))}]</span>'
        if number_format.finite(lo) and number_format.finite(hi)
        else ""
    )
    cls = "first pos" if number_format.finite(z) and float(z) > 0 else "first"  # type: ignore[arg-type]
    return num_cell(txt + ci, cls=cls, **{"data-col": f"{c}_zbar"})


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
    return esc(c[:1].upper() + c[1:])


def setting_attrs(row: Mapping[str, Any]) -> dict[str, str]:
    """The attributes of a per-setting row: ``data-setting``, and class ``collapsed``.

    Parameters
    ----------
    row : mapping
        A row with ``setting`` (and ``verdict``).

    Returns
    -------
    dict
    """
    a = {"data-setting": str(row["setting"])}
    if row.get("verdict") == "collapsed":
        a["class"] = "collapsed"
    return a


def best_low_within(df: pd.DataFrame, col: str) -> set[int]:
    """Row positions holding the lowest value of ``col`` within a method group of several
    settings (values compared rounded to 3 decimals, as shown).

    Parameters
    ----------
    df : pandas.DataFrame
        A per-setting table with a ``method`` column.
    col : str
        The column (absent: no position).

    Returns
    -------
    set of int
        Positions (0-based, in ``df``'s row order).
    """
    out: set[int] = set()
    if col not in df.columns:
        return out
    for _, g in df.reset_index(drop=True).groupby("method", sort=False):
        if len(g) < 2:
            continue
        vals = g[col][g[col].map(number_format.finite)].astype(float).round(3)
        if len(vals):
            out |= set(vals.index[vals == vals.min()])
    return out


def best_high_by(
    df: pd.DataFrame, col: str, by: str | None, *, distinct: bool = False
) -> set[int]:
    """Row positions holding the highest value of ``col`` within each group of ``by`` with
    several values (values compared rounded to 3 decimals, as shown).

    Parameters
    ----------
    df : pandas.DataFrame
        The table.
    col : str
        The column (absent: no position).
    by : str or None
        The grouping column; ``None``: the whole table is one group.
    distinct : bool
        Mark nothing in a group whose values are all equal.

    Returns
    -------
    set of int
        Positions (0-based, in ``df``'s row order).
    """
    out: set[int] = set()
    if col not in df.columns:
        return out
    frame = df.reset_index(drop=True)
    groups = frame.groupby(by, sort=False) if by is not None else [(None, frame)]
    for _, g in groups:
        vals = g[col][g[col].map(number_format.finite)].astype(float).round(3)
        if len(vals) > 1 and not (distinct and vals.nunique() == 1):
            out |= set(vals.index[vals == vals.max()])
    return out


def block_starts(values: Sequence[Any]) -> list[int]:
    """Positions where a run of equal consecutive values starts.

    Parameters
    ----------
    values : sequence
        The values, in row order.

    Returns
    -------
    list of int
        ``0`` and every position whose value differs from the one before.
    """
    return [i for i, v in enumerate(values) if i == 0 or v != values[i - 1]]
