"""The report's sections: one topic each — its results tables, report tables, HTML and LaTeX.

- :mod:`~aria_tda.report.sections.base` — the :class:`Section` protocol, :class:`PageContext`
  and :class:`BaseSection` (defaults to inherit);
- :mod:`~aria_tda.report.sections.registry` — :func:`sections`: ARIA's own, then those of
  installed packages (entry-point group ``aria_tda.report_sections``), sorted by ``order``;
- ARIA's own, in page order: :mod:`~aria_tda.report.sections.reliability` (100),
  :mod:`~aria_tda.report.sections.aspects` (200, "Which aspect"),
  :mod:`~aria_tda.report.sections.homogeneity` (300, with the K-sweep and the null),
  :mod:`~aria_tda.report.sections.alignment` (400), :mod:`~aria_tda.report.sections.confounds`
  (500), :mod:`~aria_tda.report.sections.ranking` (550),
  :mod:`~aria_tda.report.sections.validation` (600, LDS and agreement) and
  :mod:`~aria_tda.report.sections.paired` (700, paired comparisons).

The summary, the per-query view and the run details are the page's own
(:mod:`aria_tda.report.html.page`). "Writing a report section" in the user guide shows how a
package adds one.
"""

from __future__ import annotations

from aria_tda.report.sections.base import BaseSection, PageContext, Section
from aria_tda.report.sections.registry import ENTRY_POINT_GROUP, sections

__all__ = ["ENTRY_POINT_GROUP", "BaseSection", "PageContext", "Section", "sections"]
