r"""The report's tables, built once from a :class:`~aria_tda.report.load.ResultsData`.

Each report section (:mod:`aria_tda.report.sections`) builds the tables of its topic; each
is a :class:`ReportTable` whose ``df`` is the CSV export (full precision, one row per setting
where the table is per setting) and whose ``layout`` tells the HTML and LaTeX renderers how to
group its columns. HTML, LaTeX and CSV all render the same frame, so their numbers agree by
construction.

Column names of the per-channel (wide) tables are ``{channel}_{quantity}``, e.g.
``harmony_zbar``, ``harmony_zbar_lo``, ``harmony_zbar_hi``, ``harmony_pos``, ``harmony_sig``
(fractions in [0, 1]), ``timbre_alpha_max``. Which columns a table holds is read from the
results schema (:data:`aria_tda.results.TABLES` and its column groups), never declared here.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from aria_tda.errors import AriaWarning, one_line
from aria_tda.report.load import ResultsData
from aria_tda.report.report_table import ReportTable
from aria_tda.report.sections.base import Section

__all__ = ["ReportTable", "build_tables"]


def build_tables(data: ResultsData, *, k: int | None,
                 sections: Sequence[Section] | None = None) -> dict[str, ReportTable]:
    """All tables the folder supports, by export name, in report order.

    Parameters
    ----------
    data : ResultsData
        The results folder, as read by :func:`aria_tda.report.load.load_results`.
    k : int or None
        Group size of the per-K tables (homogeneity per variant, confound, ranking, LDS
        summary, ...), usually from :func:`aria_tda.report.load.choose_k`. ``None`` leaves the
        homogeneity tables out; the confound and ranking tables then use the largest K they
        hold (as they do when ``k`` is not among their K).
    sections : sequence of Section, optional
        The sections whose tables to build, in page order (default: every registered one,
        :func:`aria_tda.report.sections.registry.sections`).

    Returns
    -------
    dict[str, ReportTable]
        Only the tables the folder has data for, section by section: ARIA's own are
        ``reliability``, ``aspects``, ``set_aspects``, ``homogeneity``,
        ``homogeneity_<variant>``, ``ksweep``, ``null``, ``alignment``,
        ``alignment_embeddings``, ``confound``, ``ranking``, ``lds_summary``, ``lds``,
        ``agreement``, ``lds_paired``, ``paired``; installed packages' sections add theirs. A
        section that fails is one :class:`~aria_tda.errors.AriaWarning` and adds none; a name
        an earlier section gave is kept.
    """
    if sections is None:
        from aria_tda.report.sections.registry import sections as registered

        sections = registered()
    out: dict[str, ReportTable] = {}
    for sec in sections:
        try:
            got = sec.tables(data, k)
        except Exception as exc:
            if type(sec).__module__.startswith("aria_tda.report.sections."):
                raise  # ARIA's own section: a bug, loud
            warnings.warn(f"report section {sec.name!r}: its tables failed ({one_line(exc)}); "
                          "left out", AriaWarning, stacklevel=2)
            continue
        for name, t in got.items():
            out.setdefault(name, t)
    return out
