"""Small HTML builders shared by the table renderers and the page.

Escaping (:func:`html.escape` for every string from the results folder), JSON that can sit
inside ``<script>``, table cells ``(inner HTML, attributes)`` and verdict badges.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from aria_tda.report import _fmt

Cell = tuple[str, dict[str, str]]  # (inner HTML, attributes)


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _json_for_script(obj: Any) -> str:
    text = json.dumps(obj, separators=(",", ":"), allow_nan=False, default=_json_default)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _json_default(o: Any) -> Any:
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


def _clean_json(obj: Any) -> Any:
    """Replace non-finite floats by None (JSON has no NaN)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {str(k): _clean_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean_json(v) for v in obj]
    return obj


# ---------------------------------------------------------------- small builders


def _attrs(a: Mapping[str, str]) -> str:
    return "".join(f' {k}="{_e(v)}"' for k, v in a.items())


def _num(text: str, **attrs: str) -> Cell:
    cls = attrs.pop("cls", "")
    return text, {"class": ("num " + cls).strip(), **attrs}


def _txt(text: str, **attrs: str) -> Cell:
    cls = attrs.pop("cls", "")
    return text, {"class": ("txt " + cls).strip(), **attrs}


def _table(
    head: Sequence[Sequence[Cell]],
    rows: Iterable[tuple[Sequence[Cell], dict[str, str]]],
    *,
    cls: str = "data",
    attrs: Mapping[str, str] | None = None,
) -> str:
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


def _th(text: str, **a: str) -> Cell:
    return text, a


def badge(verdict: Any) -> str:
    v = str(verdict).lower() if isinstance(verdict, str) and verdict else "unknown"
    cls = v if v in ("collapsed", "suspect", "ok") else "unknown"
    return f'<span class="badge {cls}">{_e(v)}</span>'


def _zcell(row: Mapping[str, Any], c: str) -> Cell:
    z = row.get(f"{c}_zbar")
    txt = _e(_fmt.signed(z))
    lo, hi = row.get(f"{c}_zbar_lo"), row.get(f"{c}_zbar_hi")
    ci = (
        f'<span class="ci">[{_e(_fmt.signed(lo))}, {_e(_fmt.signed(hi))}]</span>'
        if _fmt.finite(lo) and _fmt.finite(hi)
        else ""
    )
    cls = "first pos" if _fmt.finite(z) and float(z) > 0 else "first"  # type: ignore[arg-type]
    return _num(txt + ci, cls=cls, **{"data-col": f"{c}_zbar"})


def _title(c: str) -> str:
    return _e(c[:1].upper() + c[1:])


def _setting_attrs(row: Mapping[str, Any]) -> dict[str, str]:
    a = {"data-setting": str(row["setting"])}
    if row.get("verdict") == "collapsed":
        a["class"] = "collapsed"
    return a


def _best_low_within(df: pd.DataFrame, col: str) -> set[int]:
    """Row positions holding the lowest value of ``col`` within a method group of several
    settings."""
    out: set[int] = set()
    if col not in df.columns:
        return out
    for _, g in df.reset_index(drop=True).groupby("method", sort=False):
        if len(g) < 2:
            continue
        vals = g[col][g[col].map(_fmt.finite)].astype(float).round(3)
        if len(vals):
            out |= set(vals.index[vals == vals.min()])
    return out
