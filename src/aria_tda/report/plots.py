r"""K-sweep plots: :math:`\bar z_c` against the group size K, one panel per setting.

Conventions (the paper's K-sweep figures)
-----------------------------------------
- one colour *and* one marker per channel (Okabe-Ito palette, safe for the common forms of
  colour blindness and distinguishable in greyscale print through the markers);
- original :math:`S^{\mathrm{seg}}` **dashed**, rank-1 residual **solid**;
- a light band shows the bootstrap 95% CI of :math:`\bar z_c` over queries;
- a grey line at :math:`\bar z = 0` (no more homogeneous than random groups) and a dotted
  vertical line at the report's K.

Figures are drawn with the object-oriented matplotlib API on their own canvas (no pyplot, no
global backend change) and returned as SVG text (for inlining into the HTML report) or written as
PDF (for LaTeX). matplotlib is the ``report`` extra; :func:`available` says whether it is installed.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "MARKERS",
    "OKABE_ITO",
    "available",
    "channel_style",
    "ksweep_figure",
    "ksweep_svg",
    "save_ksweep_pdf",
]

#: Okabe & Ito (2008) colour-blind-safe palette, yellow last (weak on white paper).
OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES: dict[str, Any] = {"original": (0, (5, 2.5)), "residual": "solid"}
VARIANT_LABELS = {"original": r"original $S^{\mathrm{seg}}$", "residual": "rank-1 residual"}

_RC: dict[str, Any] = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.fonttype": "none",
    "pdf.fonttype": 42,
}


def available() -> bool:
    """True when matplotlib (the ``report`` extra) can be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def channel_style(i: int) -> tuple[str, str]:
    """Colour and marker of the ``i``-th channel (cycling).

    Parameters
    ----------
    i : int
        The channel's position in the report's channel order (``>= 0``).

    Returns
    -------
    color : str
        Hex colour from :data:`OKABE_ITO`.
    marker : str
        matplotlib marker from :data:`MARKERS`.
    """
    return OKABE_ITO[i % len(OKABE_ITO)], MARKERS[i % len(MARKERS)]


def _tex_safe(s: str) -> str:
    # '$' would start mathtext; '\' too.
    return str(s).replace("\\", "/").replace("$", r"\$")


def ksweep_figure(
    rows: pd.DataFrame,
    *,
    setting: str,
    channels: Sequence[str],
    k_report: int | None = None,
    verdict: str | None = None,
    ci: bool = True,
    emphasis: str | None = None,
    emphasis_label: str = "emphasised",
) -> Any:
    r"""One K-sweep panel.

    Parameters
    ----------
    rows : pandas.DataFrame
        Homogeneity rows of this setting (columns ``variant``, ``K``, ``channel``, ``zbar`` and,
        for the band, ``zbar_lo`` / ``zbar_hi``).
    setting : str
        Panel title.
    channels : sequence of str
        Channel order (fixes each channel's colour and marker across panels).
    k_report : int, optional
        Marked with a dotted vertical line.
    verdict : str, optional
        Added to the title when it is ``collapsed`` or ``suspect``.
    ci : bool
        Draw the 95% CI band.
    emphasis : str, optional
        A channel drawn with thicker lines and labelled ``(emphasis_label)`` in the legend
        (e.g. the channel a panel's queries were built to follow).
    emphasis_label : str
        The legend's word for the ``emphasis`` channel.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    fig = Figure(figsize=(4.8, 3.7), layout="constrained")
    ax = fig.add_subplot()
    ax.axhline(0.0, color="#777777", linewidth=0.8, zorder=0)
    present_variants = [v for v in ("original", "residual") if v in set(rows["variant"])]
    present_variants += sorted(set(rows["variant"]) - set(present_variants))
    handles, vhandles = [], []
    for i, ch in enumerate(channels):
        color, marker = channel_style(i)
        drawn = False
        for v in present_variants:
            d = rows[(rows["channel"] == ch) & (rows["variant"] == v)].sort_values("K")
            if d.empty:
                continue
            k = d["K"].to_numpy(dtype=float)
            z = d["zbar"].to_numpy(dtype=float)
            ls = LINESTYLES.get(v, (0, (1, 1.5)))
            ax.plot(
                k,
                z,
                color=color,
                linestyle=ls,
                marker=marker,
                markersize=4.5,
                linewidth=2.8 if ch == emphasis else 1.5,
                markerfacecolor=color if v == "residual" else "white",
                markeredgewidth=1.1,
            )
            if ci and {"zbar_lo", "zbar_hi"} <= set(d.columns):
                lo, hi = d["zbar_lo"].to_numpy(dtype=float), d["zbar_hi"].to_numpy(dtype=float)
                ok = np.isfinite(lo) & np.isfinite(hi)
                if ok.any():
                    ax.fill_between(k[ok], lo[ok], hi[ok], color=color, alpha=0.09, linewidth=0)
            drawn = True
        if drawn:
            handles.append(
                Line2D(
                    [],
                    [],
                    color=color,
                    marker=marker,
                    linestyle="none",
                    markersize=5,
                    label=_tex_safe(ch) + (f" ({emphasis_label})" if ch == emphasis else ""),
                )
            )
    for v in present_variants:
        vhandles.append(
            Line2D(
                [],
                [],
                color="#333333",
                linestyle=LINESTYLES.get(v, (0, (1, 1.5))),
                linewidth=1.5,
                label=VARIANT_LABELS.get(v, _tex_safe(v)),
            )
        )
    ks = sorted(int(x) for x in set(rows["K"]))
    if k_report is not None and ks and min(ks) <= k_report <= max(ks):
        ax.axvline(k_report, color="#999999", linestyle=":", linewidth=1.0, zorder=0)
    if 1 < len(ks) <= 12:
        ax.set_xticks(ks, labels=_thin_labels(ks))
    ax.set_xlabel("group size K (top-K attributed tracks)")
    ax.set_ylabel(r"$\bar z_c$ (SD units of the random-group null)")
    title = _tex_safe(setting)
    if verdict in ("collapsed", "suspect"):
        title += f" ({verdict})"
    ax.set_title(title, color="#B03A00" if verdict == "collapsed" else "black")
    ax.grid(True, axis="y", color="#e6e6e6", linewidth=0.6)
    # Two legend rows below the axes: channels (colour + marker), then variants (line style).
    leg = ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.19),
        ncol=min(3, max(1, len(handles))),
        frameon=False,
        handletextpad=0.3,
        columnspacing=1.0,
        borderaxespad=0.0,
    )
    if vhandles:
        ax.add_artist(leg)
        n_rows = -(-len(handles) // 3)
        ax.legend(
            handles=vhandles,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.19 - 0.075 * n_rows - 0.01),
            ncol=len(vhandles),
            frameon=False,
            handlelength=2.8,
            columnspacing=1.2,
            borderaxespad=0.0,
        )
    return fig


def _thin_labels(ks: Sequence[int]) -> list[str]:
    """Tick labels for every K, blank where a label would collide with the previous one."""
    span = max(ks) - min(ks) or 1
    out, last = [], None
    for k in ks:
        if last is None or (k - last) / span >= 0.07:
            out.append(str(k))
            last = k
        else:
            out.append("")
    return out


def _render(fig: Any, fmt: str, salt: str) -> bytes:
    import matplotlib

    buf = io.BytesIO()
    with matplotlib.rc_context({**_RC, "svg.hashsalt": salt}):  # type: ignore[dict-item]
        meta = {"Date": None} if fmt == "svg" else {"CreationDate": None}
        fig.savefig(buf, format=fmt, metadata=meta)
    return buf.getvalue()


_SVG_ROOT = re.compile(r"<svg\b[^>]*>", re.S)


def ksweep_svg(
    rows: pd.DataFrame, *, setting: str, channels: Sequence[str], salt: str, **kw: Any
) -> str:
    """The K-sweep panel of one setting as inline-able ``<svg>`` text.

    The text has no XML prolog and no fixed size (it scales with its container).

    Parameters
    ----------
    rows : pandas.DataFrame
        Homogeneity rows of this setting (see :func:`ksweep_figure`).
    setting : str
        Panel title.
    channels : sequence of str
        Channel order (fixes each channel's colour and marker across panels).
    salt : str
        Makes the SVG's internal ids unique in a page holding several plots: every id, and
        every reference to one, is prefixed with ``salt`` (characters other than letters,
        digits, ``_`` and ``-`` replaced by ``_``). It also seeds matplotlib's id hashing, so
        the same input gives the same text.
    **kw : Any
        Further keywords of :func:`ksweep_figure` (``k_report``, ``verdict``, ``ci``,
        ``emphasis``, ``emphasis_label``).

    Returns
    -------
    str
        One ``<svg class="plot" role="img" ...>`` element.
    """
    import matplotlib

    with matplotlib.rc_context(_RC):  # type: ignore[arg-type]
        fig = ksweep_figure(rows, setting=setting, channels=channels, **kw)
    text = _render(fig, "svg", salt).decode("utf-8")
    start = text.find("<svg")
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text[start:], flags=re.S)
    root = _SVG_ROOT.match(text)
    if root is None:  # pragma: no cover - matplotlib always writes a root element
        raise RuntimeError("matplotlib produced no <svg> element")
    tag = root.group(0)
    tag = re.sub(r'\s(width|height)="[^"]*"', "", tag)
    tag = tag.replace("<svg", '<svg class="plot" role="img"', 1)
    body = text[root.end() :]
    # prefix every id (and every reference to one) so several plots can share one page
    prefix = re.sub(r"[^A-Za-z0-9_-]", "_", salt)
    body = re.sub(r'\bid="([^"]+)"', rf'id="{prefix}-\1"', body)
    body = re.sub(r"url\(#([^)]+)\)", rf"url(#{prefix}-\1)", body)
    body = re.sub(r'href="#([^"]+)"', rf'href="#{prefix}-\1"', body)
    return tag + body


def save_ksweep_pdf(
    rows: pd.DataFrame, path: Path, *, setting: str, channels: Sequence[str], **kw: Any
) -> Path:
    """Write the K-sweep panel of one setting as a PDF (for ``\\includegraphics``).

    Parameters
    ----------
    rows : pandas.DataFrame
        Homogeneity rows of this setting (see :func:`ksweep_figure`).
    path : pathlib.Path
        The PDF file to write (its folder must exist).
    setting : str
        Panel title.
    channels : sequence of str
        Channel order (fixes each channel's colour and marker across panels).
    **kw : Any
        Further keywords of :func:`ksweep_figure` (``k_report``, ``verdict``, ``ci``).

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    import matplotlib

    with matplotlib.rc_context(_RC):  # type: ignore[arg-type]
        fig = ksweep_figure(rows, setting=setting, channels=channels, **kw)
    Path(path).write_bytes(_render(fig, "pdf", setting))
    return Path(path)
