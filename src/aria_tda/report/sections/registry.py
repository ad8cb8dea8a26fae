"""The report's sections: ARIA's own, then those installed packages register.

A package adds a section through the entry-point group ``aria_tda.report_sections``
(:data:`ENTRY_POINT_GROUP`); each entry point names a :class:`~aria_tda.report.sections.base.
Section` object or a zero-argument callable that returns one::

    [project.entry-points."aria_tda.report_sections"]
    mine = "my_package.report.sections:MY_SECTION"

Its results tables are registered through ``aria_tda.tables``
(:mod:`aria_tda._result_tables`). A plugin that fails to load, or gives something that is not
a section, or reuses a name, is one :class:`~aria_tda.errors.AriaWarning` naming it and is left
out; the report never fails for it.
"""

from __future__ import annotations

import warnings
from typing import Any

from aria_tda.errors import AriaWarning, one_line
from aria_tda.report.sections.alignment import ALIGNMENT
from aria_tda.report.sections.aspects import ASPECTS
from aria_tda.report.sections.base import Section
from aria_tda.report.sections.confounds import CONFOUNDS
from aria_tda.report.sections.homogeneity import HOMOGENEITY
from aria_tda.report.sections.paired import PAIRED
from aria_tda.report.sections.ranking import RANKING
from aria_tda.report.sections.reliability import RELIABILITY
from aria_tda.report.sections.validation import VALIDATION

__all__ = ["CORE_SECTIONS", "ENTRY_POINT_GROUP", "sections"]

#: Entry-point group through which installed packages add report sections.
ENTRY_POINT_GROUP = "aria_tda.report_sections"

#: ARIA's own sections.
CORE_SECTIONS: tuple[Section, ...] = (RELIABILITY, ASPECTS, HOMOGENEITY, ALIGNMENT, CONFOUNDS,
                                      RANKING, VALIDATION, PAIRED)

_MEMBERS = ("name", "title", "order", "tables", "html", "latex", "validation")


def _plugin(ep: Any) -> Section:
    obj = ep.load()
    if not all(hasattr(obj, m) for m in _MEMBERS) and callable(obj):
        obj = obj()
    lacking = [m for m in _MEMBERS if not hasattr(obj, m)]
    if lacking:
        raise TypeError(f"expected a report section (name, title, order, tables, html, latex, "
                        f"validation), received {type(obj).__name__} lacking {lacking}")
    return obj


def sections() -> list[Section]:
    """Every report section, sorted by ``order`` (ARIA's own first among equals).

    Returns
    -------
    list of Section
        :data:`CORE_SECTIONS`, then those of installed packages (entry-point group
        :data:`ENTRY_POINT_GROUP`); a plugin that cannot be loaded is one warning and is left
        out.
    """
    from importlib.metadata import entry_points

    found: list[Section] = list(CORE_SECTIONS)
    names = {s.name for s in found}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            sec = _plugin(ep)
            if sec.name in names:
                raise ValueError(f"its name {sec.name!r} is already taken")
            int(sec.order)
        except Exception as exc:  # a broken plugin must not cost the report
            warnings.warn(f"report section {ep.name!r} ({ep.value}) could not be loaded "
                          f"({one_line(exc)}); left out", AriaWarning, stacklevel=2)
            continue
        names.add(sec.name)
        found.append(sec)
    return sorted(found, key=lambda s: int(s.order))

