r"""LaTeX (booktabs) renderings of the report's tables, in the paper's layouts.

Each renderer takes a :class:`~aria_tda.report.report_table.ReportTable` and returns the text of one
``table`` environment (several for the confound breakdown). The cells are the CSV export's
numbers, rounded: reliability diagnostics, alignment and LDS to 3 decimals, :math:`\bar z` to 2
decimals with an explicit sign, Pos / Sig as percentages with 1 decimal. Bold marks positive
:math:`\bar z` and, within a method group of several stages, the best (lowest) reliability value
(paper Tables 1-2); in the alignment table the best value per column (Table 3). Settings whose
verdict is ``collapsed`` carry a dagger explained under the table.

Needs ``\usepackage{booktabs, multirow, graphicx}`` (and ``subcaption`` for the K-sweep figure).

Layout
------
- :func:`render_latex` — the ``.tex`` of one table, from the report section that owns it
  (:meth:`aria_tda.report.sections.base.Section.latex`);
- :mod:`aria_tda.report.latex.tables` — the renderers of ARIA's own tables and the K-sweep
  figure (:func:`ksweep_figure_latex`);
- :mod:`aria_tda.report.latex.ground_truth` — LDS, LDS summary and agreement, in the symbolic
  (per method) and audio (per method and stage) layouts;
- :mod:`aria_tda.report.latex.cells` — escaping (:func:`escape`), number cells, the ``table``
  environment, method/stage row grouping.
"""

from __future__ import annotations

from collections.abc import Sequence

from aria_tda.report.latex.cells import PREAMBLE, escape
from aria_tda.report.latex.tables import ksweep_figure_latex as ksweep_figure_latex
from aria_tda.report.report_table import ReportTable
from aria_tda.report.sections.base import Section

__all__ = ["PREAMBLE", "escape", "render_latex"]


def render_latex(t: ReportTable, sections: Sequence[Section] | None = None) -> str | None:
    """LaTeX of table ``t``, from the section that owns it (``None``: exported as CSV only).

    Parameters
    ----------
    t : ReportTable
        A table from :func:`aria_tda.report.tables.build_tables`.
    sections : sequence of Section, optional
        The sections to ask, in order (default: every registered one); the first that gives
        a ``.tex`` wins.

    Returns
    -------
    str or None
        :data:`PREAMBLE` (a comment naming the packages needed) followed by one ``table``
        environment (one per group for ``confound``); ``None`` for a table without a LaTeX
        layout (e.g. the K-sweep data).
    """
    if sections is None:
        from aria_tda.report.sections.registry import sections as registered

        sections = registered()
    for sec in sections:
        tex = sec.latex(t)
        if tex is not None:
            return tex
    return None
