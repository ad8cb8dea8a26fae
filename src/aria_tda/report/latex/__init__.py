r"""LaTeX (booktabs) renderings of the report's tables, in the paper's layouts.

Each function takes a :class:`~aria_tda.report.tables.ReportTable` and returns the text of one
``table`` environment (several for the confound breakdown). The cells are the CSV export's
numbers, rounded: reliability diagnostics, alignment and LDS to 3 decimals, :math:`\bar z` to 2
decimals with an explicit sign, Pos / Sig as percentages with 1 decimal. Bold marks positive
:math:`\bar z` and, within a method group of several stages, the best (lowest) reliability value
(paper Tables 1-2); in the alignment table the best value per column (Table 3). Settings whose
verdict is ``collapsed`` carry a dagger explained under the table.

Needs ``\usepackage{booktabs, multirow, graphicx}`` (and ``subcaption`` for the K-sweep figure).

Layout
------
- :mod:`aria_tda.report.latex.tables` — one renderer per report table (:func:`render_latex`) and
  the K-sweep figure (:func:`ksweep_figure_latex`);
- :mod:`aria_tda.report.latex.ground_truth` — LDS, LDS summary, agreement and planted influence, in
  the symbolic (per method) and audio (per method and stage) layouts;
- ``aria_tda.report.latex._cells`` — escaping (:func:`escape`), number cells, the ``table``
  environment, method/stage row grouping.
"""

from __future__ import annotations

from aria_tda.report.latex._cells import PREAMBLE, escape
from aria_tda.report.latex.tables import ksweep_figure_latex as ksweep_figure_latex
from aria_tda.report.latex.tables import render_latex

__all__ = ["PREAMBLE", "escape", "render_latex"]
