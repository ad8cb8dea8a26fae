"""The experiments' report sections, registered through the entry-point group
``aria_tda.report_sections`` (``experiments/pyproject.toml``).

- :data:`PLANTED` — planted influence of the audio demo (``planted.csv``:
  :mod:`aria_tda_experiments.report.planted`), order 900;
- :data:`PLANTED_ASPECTS` — the planted-aspect tables of ``aria-tda demo planted`` and the plant
  queries' K-sweeps (:mod:`aria_tda_experiments.report.planted_aspects`), order 910; its
  :meth:`~PlantedAspectsSection.validation` tells a dossier how a setting found the plants;
- :data:`SENSITIVITY` — the TRAK sensitivity sweep
  (:mod:`aria_tda_experiments.report.sensitivity`), order 950.

Their results tables are registered through ``aria_tda.tables``
(:mod:`aria_tda_experiments.report.specs`).
"""

from __future__ import annotations

from collections.abc import Mapping

from aria_tda.report.html.cells import esc
from aria_tda.report.latex.cells import PREAMBLE
from aria_tda.report.load import ResultsData
from aria_tda.report.report_table import ReportTable
from aria_tda.report.sections.base import BaseSection, PageContext
from aria_tda_experiments.report.planted import planted_html, planted_latex, planted_tables
from aria_tda_experiments.report.planted_aspects import (
    CONTROL,
    above_chance,
    planted_aspect_tables,
    planted_sweep_panels,
)
from aria_tda_experiments.report.planted_aspects_html import (
    PLANTED_ASPECT_TABLES,
    planted_aspects_section,
)
from aria_tda_experiments.report.planted_aspects_latex import PLANTED_ASPECT_LATEX
from aria_tda_experiments.report.sensitivity import (
    sensitivity_html,
    sensitivity_latex,
    sensitivity_table,
)
from aria_tda_experiments.report.specs import (
    PLANTED_ASPECT_SPECS,
    PLANTED_SPECS,
    SENSITIVITY_SPECS,
)

__all__ = ["PLANTED", "PLANTED_ASPECTS", "SENSITIVITY", "sweep_plots"]

_LEVEL_TABLES = ("planted", "planted_segment")


class PlantedSection(BaseSection):
    """Planted influence: recall@K of the planted queries, track level first, other levels
    folded."""

    name = "planted"
    title = "Planted influence"
    order = 900
    specs = PLANTED_SPECS
    exports = _LEVEL_TABLES

    def tables(self, data: ResultsData, k: int | None) -> dict[str, ReportTable]:
        return {t.name: t for t in planted_tables(data)}

    def html(self, data: ResultsData, tables: Mapping[str, ReportTable],
             ctx: PageContext) -> str | None:
        levels = [t for name, t in tables.items() if name in _LEVEL_TABLES]
        if not levels:
            return None
        main, rest = levels[0], levels[1:]
        body = planted_html(main)
        for t in rest:
            body += (
                f'<details class="planted-more" id="details-{esc(t.name)}"><summary>'
                f"{esc(t.title)}</summary>"
                f'<p class="caption">{esc(t.caption)}</p>{planted_html(t)}</details>'
            )
        return ctx.section("planted", "Planted influence", esc(main.title), body, main.caption)

    def latex(self, table: ReportTable) -> str | None:
        return PREAMBLE + planted_latex(table) if table.name in _LEVEL_TABLES else None


def sweep_plots(data: ResultsData, *,
                enabled: bool) -> tuple[list[tuple[str, str, str]], str | None]:
    """The plant queries' K-sweep panels as ``(setting, aspect, svg)``, and a note.

    Parameters
    ----------
    data : ResultsData
        The results folder (its ``planted_sweep`` table).
    enabled : bool
        Whether plots are wanted.
    """
    from aria_tda.report import plots

    panels, left_out = planted_sweep_panels(data)
    if not panels:
        return [], None
    if not enabled:
        return [], "K-sweep plots were turned off for this report."
    if not plots.available():
        return [], (
            "K-sweep plots need matplotlib: pip install 'aria-tda[report]'. Their numbers are "
            "in planted_sweep.csv."
        )
    out = []
    for i, p in enumerate(panels):
        present = set(p.rows["channel"].astype(str))
        channels = data.channels + sorted(present - set(data.channels))
        out.append((p.setting, p.aspect, plots.ksweep_svg(
            p.rows, setting=p.title, channels=channels, salt=f"aria-planted-{i}",
            k_report=p.k, emphasis=None if p.aspect == CONTROL else p.aspect,
            emphasis_label="planted",
        )))
    note = (
        f"{left_out} further panel(s) left out to keep the page small; their numbers are in "
        "planted_sweep.csv." if left_out else None
    )
    return out, note


class PlantedAspectsSection(BaseSection):
    """Planted aspects (``aria-tda demo planted``): recall and AP against chance, effects,
    ARIA's leading channel right or wrong, confusion, naming, agreement, and the plant
    queries' K-sweeps."""

    name = "planted-aspects"
    title = "Planted aspects"
    order = 910
    specs = PLANTED_ASPECT_SPECS
    exports = PLANTED_ASPECT_TABLES

    def tables(self, data: ResultsData, k: int | None) -> dict[str, ReportTable]:
        return {t.name: t for t in planted_aspect_tables(data)}

    def html(self, data: ResultsData, tables: Mapping[str, ReportTable],
             ctx: PageContext) -> str | None:
        panels, note = sweep_plots(data, enabled=ctx.plots)
        sec = planted_aspects_section(tables, panels, note)
        if sec is None:
            return None
        return ctx.section("planted-aspects", "Planted aspects", *sec)

    def latex(self, table: ReportTable) -> str | None:
        fn = PLANTED_ASPECT_LATEX.get(table.name)
        return PREAMBLE + fn(table) if fn else None

    def validation(self, data: ResultsData, setting: str) -> list[str]:
        """How ``setting`` found the planted aspects: the plants whose recall@k interval lies
        above chance, of those planted (``[]`` without the table or the setting)."""
        df = data.table("planted_aspects")
        if df is None or df.empty:
            return []
        col = "setting" if "setting" in df.columns else "method"
        info = data.setting_info(setting)
        key = setting if col == "setting" else str(info.get("method", setting))
        rows = df[(df[col].astype(str) == key) & (df["aspect"].astype(str) != CONTROL)]
        if rows.empty:
            return []
        found = [str(r["aspect"]) for _, r in rows.iterrows()
                 if above_chance(r["ci_low"], r["chance"])]
        ks = sorted({int(k) for k in rows["k"]})
        k_txt = f"top-{ks[0]}" if len(ks) == 1 else "top-k"
        names = f" ({', '.join(found)})" if found else ""
        return [f"Planted ground truth: its {k_txt} recovered the marked training items above "
                f"chance for {len(found)} of {len(rows)} planted aspects{names}."]


class SensitivitySection(BaseSection):
    """The TRAK sensitivity sweep over projection dimension × λ."""

    name = "sensitivity"
    title = "Sensitivity"
    order = 950
    specs = SENSITIVITY_SPECS
    exports = ("sensitivity",)

    def tables(self, data: ResultsData, k: int | None) -> dict[str, ReportTable]:
        t = sensitivity_table(data, k=k)
        return {} if t is None else {t.name: t}

    def html(self, data: ResultsData, tables: Mapping[str, ReportTable],
             ctx: PageContext) -> str | None:
        t = tables.get("sensitivity")
        if t is None:
            return None
        return ctx.section("sensitivity", "Sensitivity", esc(t.title), sensitivity_html(t),
                           t.caption)

    def latex(self, table: ReportTable) -> str | None:
        return PREAMBLE + sensitivity_latex(table) if table.name == "sensitivity" else None


#: The section objects (the ``aria_tda.report_sections`` entry points).
PLANTED = PlantedSection()
PLANTED_ASPECTS = PlantedAspectsSection()
SENSITIVITY = SensitivitySection()
