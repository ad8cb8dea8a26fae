"""How result objects show themselves: a short ``repr`` and a notebook table.

Result objects (:class:`~aria_tda.diagnostics.Diagnostics`, :class:`~aria_tda.verdict.Verdict`,
:class:`~aria_tda.homogeneity.HomogeneityResult` …) hold arrays a person rarely wants printed.
Their ``repr`` is one line of the numbers that matter (:func:`short_repr`), their
``_repr_html_`` the same as a small table (:func:`html_table`) with the arrays summarised by
shape, and ``to_frame()`` the tidy table (pandas, imported when called).
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["fmt_value", "html_table", "short_repr"]


def fmt_value(value: Any, *, digits: int = 3) -> str:
    """One value as a person reads it: floats to ``digits`` significant digits, arrays by shape.

    Parameters
    ----------
    value : object
        A number, string, ``None``, sequence or array.
    digits : int
        Significant digits of a float.
    """
    if value is None:
        return "None"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:.{digits}g}"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return repr(value)
    shape = getattr(value, "shape", None)
    if shape is not None and getattr(value, "ndim", 0) > 0:
        return f"<array {'×'.join(str(s) for s in shape)}>"
    if shape is not None:  # a numpy scalar
        return fmt_value(value.item(), digits=digits)
    if isinstance(value, (tuple, list)):
        if len(value) > 4:
            return f"<{len(value)} values>"
        return "(" + ", ".join(fmt_value(v, digits=digits) for v in value) + ")"
    text = str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def short_repr(name: str, fields: Mapping[str, Any]) -> str:
    """``Name(a=1, b=0.123, …)`` on one line, arrays summarised by shape.

    Parameters
    ----------
    name : str
        The class name.
    fields : mapping of str to object
        The fields to show, in order.
    """
    inner = ", ".join(f"{k}={fmt_value(v)}" for k, v in fields.items())
    return f"{name}({inner})"


def html_table(title: str, rows: Iterable[tuple[str, Any]], *, note: str | None = None) -> str:
    """A two-column HTML table (name, value) for a notebook's ``_repr_html_``.

    Parameters
    ----------
    title : str
        The caption.
    rows : iterable of (str, object)
        Names and values; values are formatted with :func:`fmt_value` (strings unquoted).
    note : str, optional
        A line under the table (plain text).
    """
    cells = []
    for key, value in rows:
        text = value if isinstance(value, str) else fmt_value(value)
        cells.append(
            f"<tr><th style='text-align:left'>{html.escape(str(key))}</th>"
            f"<td style='text-align:left'>{html.escape(text)}</td></tr>"
        )
    foot = f"<p style='margin:0.2em 0'>{html.escape(note)}</p>" if note else ""
    return (
        f"<div><table><caption style='text-align:left'><b>{html.escape(title)}</b></caption>"
        + "".join(cells)
        + f"</table>{foot}</div>"
    )
