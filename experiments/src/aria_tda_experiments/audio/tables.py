r"""Plain-text tables of ``aria-tda demo audio`` in the paper's layouts (Tables 2 and 3).

- :func:`table2_text` — paper Table 2: one row per setting (method × stage for attribution,
  stage ``—`` for the embedding baselines), the reliability diagnostics r₁, r₂:₅, p, κ and the
  verdict, then z̄ / Pos / Sig per channel at one K; with ``variant="residual"`` the same
  layout on the rank-1 residual (the paper's appendix table "Residual homogeneity"); planted
  recall@K and LDS where the results folder has them.
- :func:`table3_text` — paper Table 3: α_max / α_reg of u₁ of S_track per channel (paper
  Eq. α) for the embedding settings (or any settings given).

They read a results folder (:mod:`aria_tda.results` tables) and print what the HTML report shows
in its own tables, so the numbers agree.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

__all__ = ["embedding_settings", "required_table", "table2_text", "table3_text"]

#: Channels of the audio study, in table order.
AUDIO_CHANNELS: tuple[str, ...] = ("rhythm", "harmony", "timbre")


def required_table(results: str | os.PathLike[str], name: str) -> Any:
    """A results table that must be there.

    Parameters
    ----------
    results : path
        The results folder.
    name : str
        The table.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    FileFormatError
        The table is missing.
    """
    from aria_tda.errors import FileFormatError
    from aria_tda.results import read_table

    df = read_table(results, name)
    if df is None:
        raise FileFormatError(f"{results}: the {name!r} table is missing")
    return df


def _stage_label(stage: Any) -> str:
    s = "" if stage is None else str(stage)
    return "—" if s in ("", "-", "nan", "None") else s


def embedding_settings(results: str | os.PathLike[str]) -> list[str]:
    """The embedding-retrieval settings of a results folder, in table order.

    ``results.json``'s ``embedding_settings`` list when it has one (the audio demo writes it),
    else the settings whose ``results.json`` entry has ``kind = "embedding"``.

    Parameters
    ----------
    results : path
        A results folder.
    """
    from aria_tda.results import read_results_meta

    meta = read_results_meta(results)
    listed = meta.get("embedding_settings")
    if isinstance(listed, list):
        return [str(s) for s in listed]
    return [str(s.get("name")) for s in meta.get("settings") or []
            if isinstance(s, dict) and s.get("kind") == "embedding"]


def table2_text(results: str | os.PathLike[str], k: int, *, variant: str = "original") -> str:
    """The paper's Table-2 layout as text: one row per setting, reliability, z̄/Pos/Sig.

    Parameters
    ----------
    results : path
        A results folder written by the demo (or any audio study).
    k : int
        The K of the homogeneity columns.
    variant : {"original", "residual"}
        Homogeneity of the original matrix or of its rank-1 residual (the reliability columns
        are always those of the original S_seg).
    """
    from aria_tda.results import read_table

    rel = required_table(results, "reliability").set_index("setting")
    hom = required_table(results, "homogeneity")
    hom = hom[(hom["variant"] == variant) & (hom["K"] == k)].set_index(["setting", "channel"])
    planted = lds = None
    if variant == "original":
        planted = read_table(results, "planted")  # optional tables: None when absent
        if planted is not None:
            planted = planted[planted["level"] == "track"]
        lds = read_table(results, "lds")
        if lds is not None:
            lds = lds.set_index("method")
    head = (f"{'method':<13}{'stage':<10}{'r1':>6}{'r2:5':>6}{'p':>7}{'κ':>6}  {'verdict':<10}"
            + "".join(f"{c[:4] + ' z̄/Pos/Sig':>22}" for c in AUDIO_CHANNELS)
            + ("   planted R@K (chance)" if planted is not None else "")
            + ("    LDS ± SE" if lds is not None else ""))
    what = "original matrix" if variant == "original" else f"{variant} matrix (rank-1 removed)"
    lines = [f"Table 2 layout (K = {k}, {what})", head, "-" * len(head)]
    for setting in rel.index:
        r = rel.loc[setting]
        cells = ""
        for c in AUDIO_CHANNELS:
            if (setting, c) in hom.index:
                h = hom.loc[(setting, c)]
                cells += f"{h['zbar']:>+10.2f} {h['pos']:>5.2f} {h['sig']:>5.2f}"
            else:
                cells += f"{'—':>22}"
        extra = ""
        if planted is not None:
            pr = planted[(planted["setting"] == setting) & (planted["K"] == k)]
            if len(pr):
                extra = f"   {pr['recall'].iloc[0]:.2f} ({pr['chance'].iloc[0]:.2f})"
        if lds is not None and setting in lds.index:
            extra += f"   {lds.loc[setting, 'lds']:+.3f} ± {lds.loc[setting, 'lds_se']:.3f}"
        lines.append(f"{str(r['method'])[:12]:<13}{_stage_label(r['stage']):<10}"
                     f"{r['r1']:>6.3f}{r['r2_5']:>6.3f}{r['p']:>7.4f}"
                     f"{r['kappa']:>6.3f}  {r['verdict']!s:<10}{cells}{extra}")
    return "\n".join(lines)


def table3_text(results: str | os.PathLike[str], *,
                settings: Sequence[str] | None = None) -> str:
    """The paper's Table-3 layout as text: α_max / α_reg of u₁ per channel.

    Parameters
    ----------
    results : path
        A results folder with an ``alignment`` table.
    settings : sequence of str, optional
        Which settings (default: :func:`embedding_settings`, else every setting).
    """
    al = required_table(results, "alignment")
    chosen = list(settings) if settings is not None else embedding_settings(results)
    if not chosen:
        chosen = list(dict.fromkeys(al["setting"].astype(str)))
    al = al.set_index(["setting", "channel"])
    head = f"{'setting':<14}" + "".join(f"{c + ' αmax / αreg':>24}" for c in AUDIO_CHANNELS)
    lines = ["Table 3 layout: axis-channel alignment of u1 of S_track (α_max: best single "
             "feature |corr|; α_reg: sqrt R² of a feature group)", head, "-" * len(head)]
    for s in chosen:
        cells = ""
        for c in AUDIO_CHANNELS:
            if (s, c) in al.index:
                a = al.loc[(s, c)]
                cells += f"{a['alpha_max']:>15.3f} / {a['alpha_reg']:>5.3f}"
            else:
                cells += f"{'—':>24}"
        lines.append(f"{s[:13]:<14}{cells}")
    return "\n".join(lines)
