"""Number formatting shared by the HTML and LaTeX renderers (so both show the same digits).

Every formatter takes any value and gives text; a value that is not a finite real number (None,
NaN, a string, a bool) gives ``missing`` (:data:`DASH` unless told).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["DASH", "finite", "fixed", "general", "integer", "lam", "pct", "seconds", "signed"]

#: What a missing or non-finite value shows.
DASH = "—"


def finite(x: Any) -> bool:
    """True for a finite real number.

    Parameters
    ----------
    x : Any
        Any value; a bool is not a number here.

    Returns
    -------
    bool
    """
    try:
        return x is not None and not isinstance(x, bool) and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def fixed(x: Any, nd: int = 3, *, missing: str = DASH) -> str:
    """``0.282`` — reliability diagnostics, alignment, LDS (``nd`` decimals).

    Parameters
    ----------
    x : Any
        The value.
    nd : int
        Decimals.
    missing : str
        The text of a value that is not a finite number.

    Returns
    -------
    str
    """
    return f"{float(x):.{nd}f}" if finite(x) else missing


def signed(x: Any, nd: int = 2, *, missing: str = DASH) -> str:
    """``+1.51`` / ``-3.63`` — z-bar and z values (explicit sign).

    Parameters
    ----------
    x : Any
        The value.
    nd : int
        Decimals.
    missing : str
        The text of a value that is not a finite number.

    Returns
    -------
    str
    """
    return f"{float(x):+.{nd}f}" if finite(x) else missing


def pct(x: Any, nd: int = 1, *, missing: str = DASH) -> str:
    """``85.8%`` — a fraction in [0, 1] shown as a percentage.

    Parameters
    ----------
    x : Any
        The fraction.
    nd : int
        Decimals of the percentage.
    missing : str
        The text of a value that is not a finite number.

    Returns
    -------
    str
    """
    return f"{100.0 * float(x):.{nd}f}%" if finite(x) else missing


def general(x: Any, sig: int = 4, *, missing: str = DASH) -> str:
    """``0.01234`` / ``1.235e+04`` — scores, similarities (``sig`` significant digits).

    Parameters
    ----------
    x : Any
        The value.
    sig : int
        Significant digits (``format``'s ``g``).
    missing : str
        The text of a value that is not a finite number.

    Returns
    -------
    str
    """
    return f"{float(x):.{sig}g}" if finite(x) else missing


def integer(x: Any, *, missing: str = DASH) -> str:
    """``7,148`` — counts with thousands separators (rounded to an integer).

    Parameters
    ----------
    x : Any
        The count.
    missing : str
        The text of a value that is not a finite number.

    Returns
    -------
    str
    """
    return f"{round(float(x)):,}" if finite(x) else missing


def seconds(x: Any) -> str:
    """``754.2 s (12 min 34 s)`` — a duration (under a minute: ``42.0 s``).

    Parameters
    ----------
    x : Any
        Seconds; not a finite number gives :data:`DASH`.

    Returns
    -------
    str
    """
    if not finite(x):
        return DASH
    s = float(x)
    if s < 60:
        return f"{s:.1f} s"
    m, sec = divmod(round(s), 60)
    h, m = divmod(m, 60)
    long = f"{h} h {m} min {sec} s" if h else f"{m} min {sec} s"
    return f"{s:,.1f} s ({long})"


def lam(x: Any) -> str:
    """A regularisation strength as in the paper.

    ``0``, ``1e-02`` (an exact power of ten below 1; LaTeX shows it as ``10^{-2}``), ``1.0``,
    ``30``.

    Parameters
    ----------
    x : Any
        The strength; not a finite number gives :data:`DASH`.

    Returns
    -------
    str
    """
    if not finite(x):
        return DASH
    v = float(x)
    if v == 0:
        return "0"
    if 0 < v < 1:
        e = math.log10(v)
        if abs(e - round(e)) < 1e-9:
            return f"1e{round(e):+03d}"
    if v == 1:
        return "1.0"
    return f"{v:g}"
