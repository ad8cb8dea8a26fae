"""What the report's sections add to a dossier (private to :mod:`aria_tda.media`)."""

from __future__ import annotations

import warnings
from typing import Any

from aria_tda.errors import AriaWarning, one_line

__all__ = ["section_validation"]


def section_validation(data: Any, setting: str) -> list[str]:
    """The validation sentences every registered report section gives for ``setting``
    (a section's ``validation``); a section that fails is one warning and gives none.

    Parameters
    ----------
    data : ResultsData
        The results folder.
    setting : str
        The setting.
    """
    from aria_tda.report.sections.registry import sections

    out: list[str] = []
    for sec in sections():
        try:
            out.extend(str(x) for x in sec.validation(data, setting) or ())
        except Exception as exc:  # a plugin's bug must not cost the dossier
            warnings.warn(f"report section {getattr(sec, 'name', sec)!r}: validation failed "
                          f"({one_line(exc)}); left out", AriaWarning, stacklevel=2)
    return out
