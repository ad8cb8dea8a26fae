r"""The report's Table-3 layout for embedding-retrieval baselines (paper §4.3, Table 3).

A study may hold embedding-retrieval settings (cosine similarity of encoder embeddings, e.g.
the three baselines of ``aria-tda demo audio``) beside attribution settings. Their rows appear in
every per-setting table like any other setting; this module adds the paper's Table 3 — the
axis-channel alignment of u₁ (α_max / α_reg per channel) for the embedding settings only.

Which settings are embeddings: ``results.json``'s ``embedding_settings`` list (the audio demo
writes it), else the settings whose ``results.json`` entry has ``kind = "embedding"``.
"""

from __future__ import annotations

from aria_tda.report.load import ResultsData
from aria_tda.report.report_table import ReportTable

__all__ = ["embedding_alignment_table", "embedding_settings"]


def embedding_settings(data: ResultsData) -> list[str]:
    """The embedding-retrieval settings, in the report's setting order (see the module).

    Parameters
    ----------
    data : ResultsData
        The results folder, as read by :func:`aria_tda.report.load.load_results`.
    """
    listed = data.meta.get("embedding_settings")
    names = (
        {str(x) for x in listed}
        if isinstance(listed, list)
        else {
            str(s.get("name"))
            for s in data.meta.get("settings") or []
            if isinstance(s, dict) and s.get("kind") == "embedding"
        }
    )
    return [s for s in data.settings if s in names]


def embedding_alignment_table(
    data: ResultsData, alignment: ReportTable | None
) -> ReportTable | None:
    """Paper Table 3: the alignment table restricted to the embedding-retrieval settings.

    Parameters
    ----------
    data : ResultsData
        The results folder, as read by :func:`aria_tda.report.load.load_results`.
    alignment : ReportTable or None
        The report's ``alignment`` table of the same folder
        (:func:`aria_tda.report.tables.alignment_table`; ``None`` when it has none).

    Returns
    -------
    ReportTable or None
        ``alignment_embeddings`` (the ``alignment`` table's columns and layout), or ``None``
        without embedding settings or alignment rows for them.
    """
    chosen = embedding_settings(data)
    full = alignment if chosen else None
    if full is None:
        return None
    df = full.df[full.df["setting"].isin(chosen)].reset_index(drop=True)
    if df.empty:
        return None
    return ReportTable(
        "alignment_embeddings",
        "Axis-channel alignment of the embedding baselines (Table 3)",
        "The alignment table for the embedding-retrieval settings only (paper Table 3): which "
        "channel each encoder's dominant retrieval axis u₁ follows. α_max is the largest "
        "|corr(u₁, feature dimension)|, α_reg the square root of the R² of u₁ regressed on a "
        "feature group (the feature and the group are named below).",
        df,
        dict(full.layout),
    )
