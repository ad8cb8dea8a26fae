"""What a report section is: the :class:`Section` protocol, the page context it renders in,
and :class:`BaseSection`, the defaults a section may inherit.

A section owns some results tables (their schemas, :attr:`Section.specs`), builds the report
tables of its topic from them (:meth:`Section.tables`: export name → :class:`ReportTable`,
exported as ``<name>.csv``), renders them on the page (:meth:`Section.html`) and as LaTeX
(:meth:`Section.latex`), and may say in plain sentences how a setting's method fared on ground
truth (:meth:`Section.validation`, shown in the per-query dossiers). The page shows the
sections in :attr:`Section.order`; :mod:`aria_tda.report.sections.registry` finds them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from aria_tda._result_tables import TableSpec
from aria_tda.report.load import ResultsData
from aria_tda.report.report_table import ReportTable

__all__ = ["BaseSection", "PageContext", "Section"]


@dataclass
class PageContext:
    """What a section's HTML may use besides its tables, and the page's table of contents.

    Attributes
    ----------
    k : int or None
        Group size of the report's tables.
    plots : bool
        Whether figures are wanted (``write_report(plots=...)``); a section that draws needs
        matplotlib (:func:`aria_tda.report.plots.available`) and says so when it is missing.
    toc : list of (str, str)
        ``(anchor id, link text as HTML)`` of every ``<section>`` made through
        :meth:`section`, in page order; an entry with empty text has no link.
    """

    k: int | None
    plots: bool = True
    toc: list[tuple[str, str]] = field(default_factory=list)

    def section(self, anchor: str, nav: str, title: str, body: str, caption: str = "") -> str:
        """One ``<section>`` of the page, listed in the table of contents.

        Parameters
        ----------
        anchor : str
            Its ``id`` (unique on the page).
        nav : str
            Link text in the table of contents (HTML); ``""``: no link.
        title : str
            Its heading (HTML; escape text from the results folder).
        body : str
            Its content (HTML).
        caption : str
            One paragraph under the heading (plain text, escaped here).

        Returns
        -------
        str
            ``<section id=...><h2>title</h2>[caption]body</section>``.
        """
        from aria_tda.report.html.cells import esc

        self.toc.append((anchor, nav))
        cap = f'<p class="caption">{esc(caption)}</p>' if caption else ""
        return f'<section id="{esc(anchor)}"><h2>{title}</h2>{cap}{body}</section>'


@runtime_checkable
class Section(Protocol):
    """One topic of the report: its tables, their HTML and LaTeX, its ground-truth sentences.

    Attributes
    ----------
    name : str
        Unique name (``"reliability"``); the anchor id of its main ``<section>``.
    title : str
        Its heading and table-of-contents text (``"Reliability"``).
    order : int
        Position on the page, lowest first (ARIA's own: 100, 200, ...; other packages' e.g.
        900).
    specs : tuple of TableSpec
        The results tables it reads (their schemas, registered with
        :data:`aria_tda.results.TABLES` through the entry-point group ``aria_tda.tables``).
    exports : tuple of str
        The export names :meth:`tables` may give (a folder of nothing but known export names
        is recognised as ARIA's own folder of tables).
    """

    name: str
    title: str
    order: int

    @property
    def specs(self) -> tuple[TableSpec, ...]: ...

    @property
    def exports(self) -> tuple[str, ...]: ...

    def tables(self, data: ResultsData, k: int | None) -> dict[str, ReportTable]:
        """Its report tables the folder has data for, by export name (``{}``: none).

        Parameters
        ----------
        data : ResultsData
            The results folder, as read by :func:`aria_tda.report.load.load_results`.
        k : int or None
            The report's group size (:func:`aria_tda.report.load.choose_k`).
        """
        ...

    def html(self, data: ResultsData, tables: Mapping[str, ReportTable],
             ctx: PageContext) -> str | None:
        """Its ``<section>`` element(s), each made by :meth:`PageContext.section` (joined by
        newlines); ``None`` when there is nothing to show.

        Parameters
        ----------
        data : ResultsData
            The results folder.
        tables : Mapping[str, ReportTable]
            Every section's tables by export name.
        ctx : PageContext
            The report's K, whether figures are wanted, and :meth:`PageContext.section`.
        """
        ...

    def latex(self, table: ReportTable) -> str | None:
        """The ``.tex`` of one of its tables (``None``: CSV only, or not its table).

        Parameters
        ----------
        table : ReportTable
            A table of the report (any section's: answer ``None`` for another's).
        """
        ...

    def validation(self, data: ResultsData, setting: str) -> list[str]:
        """Plain sentences about how ``setting``'s method fared on ground truth (``[]``).

        Parameters
        ----------
        data : ResultsData
            The results folder.
        setting : str
            The setting a dossier is about.
        """
        ...


class BaseSection:
    """Defaults for a :class:`Section`: no specs, no exports, its tables as one section each,
    no LaTeX, no validation sentences. Subclasses set ``name``, ``title``, ``order`` and
    override :meth:`tables` (and what else they need)."""

    name: str = ""
    title: str = ""
    order: int = 1000
    specs: tuple[TableSpec, ...] = ()
    exports: tuple[str, ...] = ()

    def tables(self, data: ResultsData, k: int | None) -> dict[str, ReportTable]:
        """None (override it).

        Parameters
        ----------
        data : ResultsData
            The results folder, as read by :func:`aria_tda.report.load.load_results`.
        k : int or None
            The report's group size (:func:`aria_tda.report.load.choose_k`).
        """
        return {}

    def html(self, data: ResultsData, tables: Mapping[str, ReportTable],
             ctx: PageContext) -> str | None:
        """Each of its tables (:attr:`exports`) as a ``<section>``, the first under
        :attr:`title` in the table of contents, rendered by
        :func:`aria_tda.report.html.tables.plain_html` (the CSV's columns).

        Parameters
        ----------
        data : ResultsData
            The results folder.
        tables : Mapping[str, ReportTable]
            Every section's tables by export name.
        ctx : PageContext
            The report's K, whether figures are wanted, and :meth:`PageContext.section`.
        """
        from aria_tda.report.html.cells import esc
        from aria_tda.report.html.tables import plain_html

        own = [t for name, t in tables.items() if name in self.exports]
        if not own:
            return None
        return "\n".join(
            ctx.section(self.name if i == 0 else t.name, esc(self.title) if i == 0 else "",
                        esc(t.title), plain_html(t), t.caption)
            for i, t in enumerate(own))

    def latex(self, table: ReportTable) -> str | None:
        """None: CSV only.

        Parameters
        ----------
        table : ReportTable
            A table of the report (any section's: answer ``None`` for another's).
        """
        return None

    def validation(self, data: ResultsData, setting: str) -> list[str]:
        """None: ``[]``.

        Parameters
        ----------
        data : ResultsData
            The results folder.
        setting : str
            The setting a dossier is about.
        """
        return []
