r"""The report: a results folder → one self-contained HTML page, plus LaTeX and CSV tables.

Conventions
-----------
The report reads a results folder only through :mod:`aria_tda.results` and never fails on a
partial folder: what is missing is listed at the top of the page (and in
:attr:`ReportOutput.missing`). A folder that is not a results folder raises
:class:`~aria_tda.errors.FileFormatError`.

Tables are shown at one group size K (``k``; default: the study's ``K_report``, else 300,
else the largest K). The page holds:

- the reliability table with each setting's collapse verdict;
- homogeneity (:math:`\bar z_c` with its 95% CI, Pos, Sig per channel), original and residual;
- K-sweep plots per setting (original dashed, rank-1 residual solid);
- alignment, confound, ranking, LDS / agreement (per stage for the audio demo), planted
  influence (recall@K with its chance level, :mod:`aria_tda.report.planted`), planted aspects
  (``aria-tda demo planted``: recall and AP against chance, effects, ARIA's leading channel
  right or wrong, confusion, naming, agreement and the plant queries' K-sweeps,
  :mod:`aria_tda.report.planted_aspects`) and TRAK-sensitivity tables when present;
- per-query evidence (top-N tracks, :math:`z_c(q)` against the null, contributing pairs,
  a banner for collapsed settings), searchable by query index, label or metadata;
- the run's parameters, seeds, versions and timings.

With ``latex=True`` every table is also written as ``<name>.csv`` and ``<name>.tex``
(booktabs, the paper's layouts) into ``tables_dir``, with the K-sweep plots as PDFs and a
``ksweep.tex`` figure.

Example
-------
>>> from aria_tda.report import write_report
>>> out = write_report("results", latex=True)      # doctest: +SKIP
>>> out.html, out.exports, out.missing              # doctest: +SKIP
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from aria_tda._checks import check_int, check_writable_path
from aria_tda._io import atomic_path, sweep_leftovers, write_text
from aria_tda._lock import writer_lock
from aria_tda._progress import progress_enabled
from aria_tda.errors import AriaWarning, ParameterError
from aria_tda.report.load import ResultsData, choose_k, load_results
from aria_tda.report.media_pack import MediaStats
from aria_tda.report.tables import ReportTable, build_tables
from aria_tda.results import REPORT_FILE, RESULTS_FILE, is_aria_report

__all__ = ["ReportOutput", "ResultsData", "export_tables", "load_results", "write_report"]


@dataclass(frozen=True)
class ReportOutput:
    """What :func:`write_report` wrote.

    Attributes
    ----------
    html : Path
        The report page.
    exports : Path or None
        Folder of CSV / LaTeX / PDF exports (``latex=True``), else ``None``.
    k : int or None
        Group size of the tables.
    missing : tuple of str
        Pieces of the results folder that were absent or unusable.
    tables : tuple of str
        Names of the tables in the report.
    media : MediaStats or None
        What the listening room wrote beside the page (``report_media/``: files, bytes,
        seconds); ``None`` when it was turned off.
    """

    html: Path
    exports: Path | None
    k: int | None
    missing: tuple[str, ...]
    tables: tuple[str, ...]
    media: MediaStats | None = None


def _plots(data: ResultsData, k: int | None, *, enabled: bool) -> tuple[dict[str, str], str | None]:
    from aria_tda.report import plots

    h = data.table("homogeneity")
    if h is None or h.empty:
        return {}, None
    if not enabled:
        return {}, "K-sweep plots were turned off for this report."
    if not plots.available():
        return (
            {},
            "K-sweep plots need matplotlib: pip install 'aria-tda[report]'. The K-sweep numbers "
            "are in the tables and ksweep.csv.",
        )
    out = {}
    for i, s in enumerate(data.settings):
        rows = h[h["setting"] == s]
        if rows.empty:
            continue
        channels = [c for c in data.channels if c in set(rows["channel"])]
        out[s] = plots.ksweep_svg(
            rows,
            setting=s,
            channels=data.channels if len(channels) == len(data.channels) else channels,
            salt=f"aria-ksweep-{i}",
            k_report=k,
            verdict=data.verdict(s),
        )
    return out, None


def _planted_plots(
    data: ResultsData, *, enabled: bool
) -> tuple[list[tuple[str, str, str]], str | None]:
    """The plant queries' K-sweep panels as ``(setting, aspect, svg)``, and a note."""
    from aria_tda.report import plots
    from aria_tda.report.planted_aspects import CONTROL, planted_sweep_panels

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
        )))
    note = (
        f"{left_out} further panel(s) left out to keep the page small; their numbers are in "
        "planted_sweep.csv." if left_out else None
    )
    return out, note


def export_tables(
    data: ResultsData,
    tables: dict[str, ReportTable],
    tables_dir: str | os.PathLike[str],
    *,
    k: int | None,
    plots: bool = True,
) -> Path:
    """Write ``<name>.csv`` and ``<name>.tex`` of every table (and K-sweep PDFs) to a folder.

    The folder is written atomically (a temporary sibling renamed into place).

    Parameters
    ----------
    data : ResultsData
        The results folder, as read by :func:`load_results` (its ``homogeneity`` table feeds
        the K-sweep PDFs).
    tables : dict[str, ReportTable]
        The report's tables by export name, from :func:`aria_tda.report.tables.build_tables`.
        Every table gets a CSV; tables with a LaTeX layout also get a ``.tex``.
    tables_dir : str or path-like
        The folder to write; an existing folder of that name is replaced.
    k : int or None
        The tables' group size, marked with a dotted line in the K-sweep PDFs and named in
        the caption of ``ksweep.tex``.
    plots : bool
        Also write ``ksweep/ksweep_NN.pdf`` (one per setting) and ``ksweep.tex`` when
        matplotlib is installed and the folder has homogeneity results.

    Returns
    -------
    pathlib.Path
        ``tables_dir``.

    Raises
    ------
    FileFormatError
        if the parent folder of ``tables_dir`` cannot be created or is not writable.
    """
    from aria_tda.report import latex

    tables_dir = check_writable_path("tables_dir", tables_dir)
    with atomic_path(tables_dir) as tmp:
        tmp.mkdir(parents=True)
        for name, t in tables.items():
            t.df.to_csv(tmp / f"{name}.csv", index=False)
            tex = latex.render_latex(t)
            if tex is not None:
                (tmp / f"{name}.tex").write_text(tex, encoding="utf-8")
        h = data.table("homogeneity")
        from aria_tda.report import plots as P

        if plots and h is not None and not h.empty and P.available():
            files = []
            (tmp / "ksweep").mkdir()
            for i, s in enumerate(data.settings):
                rows = h[h["setting"] == s]
                if rows.empty:
                    continue
                rel = f"ksweep/ksweep_{i + 1:02d}.pdf"
                P.save_ksweep_pdf(
                    rows,
                    tmp / rel,
                    setting=s,
                    channels=data.channels,
                    k_report=k,
                    verdict=data.verdict(s),
                )
                files.append((rel, s))
            (tmp / "ksweep.tex").write_text(latex.ksweep_figure_latex(files, k=k), encoding="utf-8")
    return Path(tables_dir)


def _stderr_line(msg: str) -> None:
    """Print one progress line on stderr, above a tqdm bar when one is drawn."""
    import sys

    from tqdm.auto import tqdm

    tqdm.write(msg, file=sys.stderr)
    sys.stderr.flush()


def _check_target(name: str, path: Path, what: str, *, want_dir: bool) -> None:
    """Raise unless ``path`` can be written as a file (``want_dir=False``) or a folder.

    An existing page is replaced only when ARIA wrote it (its head says so): the report never
    writes over a file it did not create.
    """
    if path.exists() and path.is_dir() != want_dir:
        kind = "an existing folder" if path.is_dir() else "an existing file"
        raise ParameterError(f"{name}: expected {what}, got {kind}: {str(path)!r}")
    if not want_dir and path.is_file() and not is_aria_report(path):
        raise ParameterError(
            f"{name}: expected {what} (new, or a report ARIA wrote), got an existing file "
            f"ARIA did not write: {str(path)!r}; move it or choose another --out"
        )
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise ParameterError(
                    f"{name}: expected {what}, got a path inside the file {str(parent)!r}"
                )
            break


def write_report(
    results_dir: str | os.PathLike[str],
    *,
    out: str | os.PathLike[str] | None = None,
    latex: bool = False,
    k: int | None = None,
    top_n: int = 25,
    pairs_per_channel: int = 5,
    tables_dir: str | os.PathLike[str] | None = None,
    plots: bool = True,
    media: bool = True,
    media_queries: int = 20,
    media_top: int = 3,
    media_max_items: int = 120,
    quiet: bool = False,
    progress: bool | None = None,
    log: Callable[[str], None] | None = None,
) -> ReportOutput:
    r"""Write the HTML report of a results folder (and, with ``latex=True``, its LaTeX/CSV tables).

    Parameters
    ----------
    results_dir : path
        A results folder written by ``aria-tda run`` or ``aria-tda demo``.
    out : path, optional
        The HTML file; default ``results_dir/report.html``.
    latex : bool
        Also export every table as CSV and LaTeX (booktabs, the paper's layouts), and the
        K-sweep plots as PDF.
    k : int, optional
        Group size of the tables and of the per-query evidence; must be one of the K in the
        results. Default: the study's ``K_report``, else 300, else the largest K.
    top_n : int
        Attributed tracks embedded per query and (setting, variant) (>= 1). The page size grows
        linearly with it: about ``8 * top_n`` bytes per query and block before compression.
    pairs_per_channel : int
        Contributing track pairs embedded per query, channel and block (>= 0).
    tables_dir : path, optional
        Folder of the exports; default ``<out folder>/<out stem>-tables``.
    plots : bool
        Draw the K-sweep plots (needs matplotlib, the ``report`` extra; without it the report
        says so and carries the numbers).
    media : bool
        The listening room: write clips and pictures of a bounded set of queries and items
        into the folder ``<out stem>_media/`` beside the page (``report_media/`` for
        ``report.html``), which the per-query view loads lazily
        (:func:`aria_tda.report.media_pack.write_report_media`). Missing media are named on
        the page; nothing fails for them.
    media_queries : int
        Keep media for the first ``media_queries`` queries (>= 0).
    media_top : int
        ... and their ``media_top`` best-ranked items in every setting (>= 0).
    media_max_items : int
        At most this many training clips in all (>= 0; the first settings' first; with a
        segment map, each query's segment of a track is a clip of its own), so that a study
        with many settings keeps a bounded folder and build time.
    quiet : bool
        No progress lines and no bar while the media are built.
    progress : bool or None
        Draw a tqdm bar over the queries whose media are built (``None``: the library's
        convention, :func:`aria_tda._progress.progress_enabled` — ``ARIA_PROGRESS`` /
        ``TQDM_DISABLE``, else whether stderr is a terminal).
    log : callable, optional
        Receives the progress lines of the media (``media: query 3/20 (2), 4 clips, 4.1 s``,
        then one with the files, MB and seconds); default: printed on stderr (above the bar
        when one is drawn).

    Returns
    -------
    ReportOutput

    Raises
    ------
    FileFormatError
        if ``results_dir`` is not an ARIA results folder.
    ParameterError
        for an invalid ``k``, ``top_n`` or ``pairs_per_channel``, an ``out`` that is an
        existing folder or a ``tables_dir`` that is an existing file (checked before anything
        is written).
    """
    top_n = check_int("top_n", top_n, min_value=1)
    pairs_per_channel = check_int("pairs_per_channel", pairs_per_channel, min_value=0)
    media_opts: _MediaOptions = {
        "media": bool(media),
        "media_queries": check_int("media_queries", media_queries, min_value=0),
        "media_top": check_int("media_top", media_top, min_value=0),
        "media_max_items": check_int("media_max_items", media_max_items, min_value=0),
        "media_progress": False if quiet else progress_enabled(progress),
        "media_log": None if quiet else (log if log is not None else _stderr_line),
    }
    out_path = Path(results_dir) / REPORT_FILE if out is None else Path(out)
    results_path = Path(results_dir)
    if not (results_path / RESULTS_FILE).is_file() or (
        out_path.absolute().parent != results_path.absolute()
    ):  # not a results folder (load_results says so), or the page goes elsewhere: no lock
        return _write_report(results_dir, out_path, latex=latex, k=k, top_n=top_n,
                             pairs_per_channel=pairs_per_channel, tables_dir=tables_dir,
                             plots=plots, **media_opts)
    # the page goes into the results folder: one writer at a time (a run publishing its
    # tables, another report)
    with writer_lock(results_path, "results folder"):
        sweep_leftovers(results_path)
        return _write_report(results_dir, out_path, latex=latex, k=k, top_n=top_n,
                             pairs_per_channel=pairs_per_channel, tables_dir=tables_dir,
                             plots=plots, **media_opts)


class _MediaOptions(TypedDict):
    """The media keywords that :func:`write_report` passes on to :func:`_write_report`."""

    media: bool
    media_queries: int
    media_top: int
    media_max_items: int
    media_progress: bool
    media_log: Callable[[str], None] | None


def _write_report(
    results_dir: str | os.PathLike[str],
    out_path: Path,
    *,
    latex: bool,
    k: int | None,
    top_n: int,
    pairs_per_channel: int,
    tables_dir: str | os.PathLike[str] | None,
    plots: bool,
    media: bool,
    media_queries: int,
    media_top: int,
    media_max_items: int,
    media_progress: bool,
    media_log: Callable[[str], None] | None,
) -> ReportOutput:
    """The body of :func:`write_report` (its arguments checked, its lock held)."""
    from aria_tda.report.evidence import build_evidence
    from aria_tda.report.html import render_html

    data = load_results(results_dir, top_n=top_n)
    kk = choose_k(data, k)
    tdir = None
    if latex:
        tdir = (
            Path(tables_dir)
            if tables_dir is not None
            else out_path.with_name(out_path.stem + "-tables")
        )
    # refuse before anything is written (a folder is never replaced by the page, a file never
    # by the tables' folder)
    _check_target("out", out_path, "an HTML file path", want_dir=False)
    if tdir is not None:
        _check_target("tables_dir", tdir, "a folder path", want_dir=True)
    tables = build_tables(data, k=kk)
    svgs, plot_note = _plots(data, kk, enabled=plots)
    planted_svgs, planted_note = _planted_plots(data, enabled=plots)
    evidence = build_evidence(data, k=kk, top_n=top_n, pairs_per_channel=pairs_per_channel)
    manifest, stats = None, None
    if media and not evidence.empty:
        from aria_tda.report.media_pack import media_folder, write_report_media

        manifest, stats = write_report_media(data, media_folder(out_path),
                                             queries=media_queries, top=media_top,
                                             max_items=media_max_items,
                                             log=media_log, progress=media_progress)
    page = render_html(data, tables, k=kk, plots=svgs, plot_note=plot_note, evidence=evidence,
                       planted_plots=planted_svgs, planted_plot_note=planted_note,
                       media=manifest)
    write_text(check_writable_path("out", out_path), page)
    exports = None
    if tdir is not None:
        exports = export_tables(data, tables, tdir, k=kk, plots=plots)
    if data.missing:
        warnings.warn(
            f"report: {len(data.missing)} piece(s) of the results folder missing or unusable "
            "(listed in the "
            "report): " + "; ".join(data.missing),
            AriaWarning,
            stacklevel=3,
        )
    return ReportOutput(out_path, exports, kk, tuple(data.missing), tuple(tables), stats)
