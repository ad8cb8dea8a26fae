"""What every report table builder shares: :class:`ReportTable` and the row helpers.

The lowest module of the report's tables: :mod:`aria_tda.report.tables`, the sections
(:mod:`aria_tda.report.sections`, ARIA's own and those of other packages),
:mod:`~aria_tda.report.embeddings` and the LaTeX / HTML renderers import it, and it imports none
of them (so no circle runs through the table builders). The columns the builders read are those
of the results schema, :data:`aria_tda.results.TABLES`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from aria_tda.report.load import ResultsData

__all__ = [
    "ReportTable", "channels_in", "info_cols", "is_staged", "ordered_stages", "settings_in",
]


@dataclass(frozen=True)
class ReportTable:
    """One exported table.

    Attributes
    ----------
    name : str
        File stem of its exports (``name.csv``, ``name.tex``).
    title : str
        Heading in the HTML report.
    caption : str
        One paragraph saying what the table shows (plain text).
    df : pandas.DataFrame
        The data, as exported to CSV.
    layout : dict
        Renderer hints: ``channels``, ``k``, ``variant``, ``groups``, ...
    """

    name: str
    title: str
    caption: str
    df: pd.DataFrame
    layout: dict[str, Any] = field(default_factory=dict)


def info_cols(data: ResultsData, setting: str) -> dict[str, Any]:
    """The leading columns of a per-setting row: setting, method, stage, verdict.

    Parameters
    ----------
    data : ResultsData
        The loaded results folder.
    setting : str
        One of its settings.

    Returns
    -------
    dict
        ``{"setting", "method", "stage", "verdict"}`` (from :meth:`ResultsData.setting_info`).
    """
    info = data.setting_info(setting)
    return {
        "setting": setting,
        "method": info["method"],
        "stage": info["stage"],
        "verdict": info["verdict"],
    }


def settings_in(data: ResultsData, df: pd.DataFrame) -> list[str]:
    """The settings of ``df``, in the report's setting order.

    Parameters
    ----------
    data : ResultsData
        The loaded results folder (its ``settings`` give the order).
    df : pandas.DataFrame
        A table with a ``setting`` column.

    Returns
    -------
    list of str
        The settings that occur in ``df``, each once.
    """
    present = set(df["setting"].astype(str))
    return [s for s in data.settings if s in present]


def channels_in(data: ResultsData, df: pd.DataFrame) -> list[str]:
    """The channels of ``df``, in the report's channel order.

    Parameters
    ----------
    data : ResultsData
        The loaded results folder (its ``channels`` give the order).
    df : pandas.DataFrame
        A table with a ``channel`` column.

    Returns
    -------
    list of str
        The channels that occur in ``df``, each once.
    """
    present = set(df["channel"].astype(str))
    return [c for c in data.channels if c in present]


def _real_stage(x: Any) -> bool:
    return str(x) not in ("-", "", "nan", "None")


def is_staged(df: pd.DataFrame) -> bool:
    """True when ``df`` has a ``stage`` column naming more than one real stage.

    Parameters
    ----------
    df : pandas.DataFrame
        A per-setting table.

    Returns
    -------
    bool
        ``False`` without a ``stage`` column; placeholders (``-``, empty, NaN) are no stage.
    """
    if "stage" not in df.columns:
        return False
    return len({str(x) for x in df["stage"] if _real_stage(x)}) > 1


def ordered_stages(df: pd.DataFrame) -> list[str]:
    """The stages of ``df`` in order of first appearance.

    Parameters
    ----------
    df : pandas.DataFrame
        A table with a ``stage`` column.

    Returns
    -------
    list of str
        Each stage once, as text.
    """
    return list(dict.fromkeys(str(x) for x in df["stage"]))
