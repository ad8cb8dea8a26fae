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
- alignment, confound, ranking, LDS / agreement (per stage for the audio demo), paired
  comparisons, and the sections of installed packages (:mod:`aria_tda.report.sections`:
  ARIA's own and those registered through the entry-point group
  ``aria_tda.report_sections``) when the folder has their tables;
- per-query evidence (top-N tracks, :math:`z_c(q)` against the null, contributing pairs,
  a banner for collapsed settings), searchable by query index, label or metadata;
- the run's parameters, seeds, versions and timings.

With ``latex=True`` every table is also written as ``<name>.csv`` and ``<name>.tex``
(booktabs, the paper's layouts) into ``tables_dir``, with the K-sweep plots as PDFs and a
``ksweep.tex`` figure.

What the report writes over
---------------------------
Nothing it did not write for the same purpose (:mod:`aria_tda._outputs`,
:mod:`aria_tda._output_folders`), checked before any work: the page replaces only an earlier
report page of ARIA; the tables folder and the media folder (``<stem>_media``) must be new,
empty or ARIA's own folder of that kind (it lists what ARIA wrote there in
``.aria-output.json``), and only ARIA's earlier files in them are replaced.
No output may be the results folder, hold it, replace one of its files (``results.json``, the
tables) or lie inside its ``.cache``; a symbolic link at an output path is never written
through. A refusal is one line naming the path and the flag to change.

Example
-------
>>> from aria_tda.report import write_report
>>> out = write_report("results", latex=True)      # doctest: +SKIP
>>> out.html, out.exports, out.missing              # doctest: +SKIP
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from aria_tda._checks import check_int
from aria_tda._io import sweep_leftovers
from aria_tda._lock import writer_lock
from aria_tda._output_folders import (
    FolderState,
    check_collisions,
    check_folder_output,
    owned_folder,
)
from aria_tda._outputs import (
    REPORT_PAGE,
    TABLES_FOLDER,
    check_lock_file,
    check_page_output,
    results_keeps,
    write_page,
)
from aria_tda._progress import progress_enabled
from aria_tda.errors import AriaWarning
from aria_tda.media.report_media import MediaStats, check_media_folder, media_folder
from aria_tda.report.load import ResultsData, choose_k, load_results
from aria_tda.report.tables import ReportTable, build_tables
from aria_tda.results import REPORT_FILE, RESULTS_FILE

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
        The folder to write: new, empty, or a folder of tables ARIA wrote, of which only
        ARIA's earlier files are replaced (files of others stay; one where ARIA writes is
        refused).
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
    ParameterError
        ``tables_dir`` is not new, empty or ARIA's own folder of tables, or holds a file ARIA
        did not write where a table goes.
    FileFormatError
        if the parent folder of ``tables_dir`` is not writable.
    """
    from aria_tda.report import latex
    from aria_tda.report.sections.registry import sections

    secs = sections()
    state = check_folder_output("tables_dir", tables_dir, TABLES_FOLDER, flag="--tables-dir",
                                legacy=_legacy_tables)
    check_collisions("tables_dir", state, _export_names(data, tables), flag="--tables-dir")
    with owned_folder(tables_dir, TABLES_FOLDER, name="tables_dir", flag="--tables-dir",
                      legacy=_legacy_tables) as tmp:
        for name, t in tables.items():
            t.df.to_csv(tmp / f"{name}.csv", index=False)
            tex = latex.render_latex(t, secs)
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


def _known_exports() -> frozenset[str]:
    """The export names the registered sections may write (their ``exports``): a folder of
    only these, written before folders listed their files, is recognised as ARIA's (see
    :func:`_legacy_tables`)."""
    from aria_tda.report.sections.registry import sections

    return frozenset(n for sec in sections() for n in getattr(sec, "exports", ()))


_LEGACY_PDF = re.compile(r"ksweep/ksweep_\d{2,}\.pdf")


def _legacy_tables(path: Path, files: list[str], others: list[str]) -> frozenset[str] | None:
    """A folder of tables written before it carried its manifest: nothing but ARIA's export
    names (then all its files are ARIA's)."""
    if others or not any(f.endswith(".csv") for f in files):
        return None
    known = _known_exports()
    for f in files:
        if _LEGACY_PDF.fullmatch(f):
            continue
        stem, _, ext = f.partition(".")
        if "/" in f or ext not in ("csv", "tex"):
            return None
        if stem not in known and not stem.startswith("homogeneity_"):
            return None
    return frozenset(files)


def _export_names(data: ResultsData, tables: dict[str, ReportTable]) -> list[str]:
    """The files :func:`export_tables` may write (``.tex`` counted for every table)."""
    names = [f"{n}.{ext}" for n in tables for ext in ("csv", "tex")]
    names += ["ksweep.tex", *(f"ksweep/ksweep_{i + 1:02d}.pdf"
                              for i in range(len(data.settings)))]
    return names


def _check_outputs(data: ResultsData, out_path: Path, tdir: Path | None,
                   media: Path | None) -> FolderState | None:
    """Refuse, before any work, outputs that would write over what ARIA did not write for them.

    The page, the media folder and the tables folder are checked against each other and
    against the results folder (:func:`aria_tda._outputs.results_keeps`).

    Returns
    -------
    FolderState or None
        What the tables folder holds (``None`` without one).
    """
    keeps = results_keeps(data.path, data.meta)
    page_keeps = [k for k in keeps if k.path != data.path / REPORT_FILE]
    check_page_output("out", out_path, REPORT_PAGE, flag="--out", keeps=page_keeps)
    if media is not None:
        check_media_folder(media, keeps=keeps, others=[(out_path, "the report page")])
    if tdir is not None:
        others = [(out_path, "the report page")]
        if media is not None:
            others.append((media, "the report's media folder"))
        return check_folder_output("tables_dir", tdir, TABLES_FOLDER, flag="--tables-dir",
                                   keeps=keeps, others=others, legacy=_legacy_tables)
    return None


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
    media_pick: str | Sequence[Any] = "reading",
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
        The HTML file; default ``results_dir/report.html``. An existing file is replaced only
        when it is a report page ARIA wrote.
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
        Folder of the exports; default ``<out folder>/<out stem>-tables``. It must be new,
        empty or a folder of tables ARIA wrote (:func:`export_tables`).
    plots : bool
        Draw the K-sweep plots (needs matplotlib, the ``report`` extra; without it the report
        says so and carries the numbers).
    media : bool
        The listening room: write clips and pictures of a bounded set of queries and items
        into the folder ``<out stem>_media/`` beside the page (``report_media/`` for
        ``report.html``), which the per-query view loads lazily
        (:func:`aria_tda.media.report_media.write_report_media`). Missing media are named on
        the page; nothing fails for them.
    media_queries : int
        Keep media for this many queries (>= 0) ...
    media_pick : {"reading", "first"} or sequence of query ids
        ... chosen so (:func:`aria_tda.media.selection.pick_media_queries`): by default the
        strongest and the weakest by the distinctive reading; ``"first"``: the first ones of
        the per-query view; a list: those queries (ids as ``aria-tda evidence`` takes them).
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
        for an invalid ``k``, ``top_n`` or ``pairs_per_channel``, or an output that would
        write over what ARIA did not write for it: an ``out`` that is a folder, a link or a
        file other than an earlier report page of ARIA; a ``tables_dir`` or media folder that
        is not new, empty or ARIA's own of that kind; any output that is, holds or replaces
        the results folder or its files (checked before anything is written).
    """
    top_n = check_int("top_n", top_n, min_value=1)
    pairs_per_channel = check_int("pairs_per_channel", pairs_per_channel, min_value=0)
    media_opts: _MediaOptions = {
        "media": bool(media),
        "media_queries": check_int("media_queries", media_queries, min_value=0),
        "media_pick": _check_pick(media_pick),
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
    check_lock_file("out", results_path, flag="--out")
    with writer_lock(results_path, "results folder"):
        sweep_leftovers(results_path)
        return _write_report(results_dir, out_path, latex=latex, k=k, top_n=top_n,
                             pairs_per_channel=pairs_per_channel, tables_dir=tables_dir,
                             plots=plots, **media_opts)


def _check_pick(pick: Any) -> str | tuple[Any, ...]:
    """``media_pick`` checked: a rule of :data:`aria_tda.media.selection.PICKS` or query ids."""
    from aria_tda.errors import ParameterError, expected
    from aria_tda.media.selection import PICKS

    if isinstance(pick, str):
        if pick in PICKS:
            return pick
        raise ParameterError(expected("media_pick", "'reading', 'first' or a list of query ids",
                                      pick))
    ids = tuple(pick) if isinstance(pick, Sequence) else None
    if not ids:
        raise ParameterError(expected("media_pick", "'reading', 'first' or a list of query ids",
                                      pick))
    return ids


class _MediaOptions(TypedDict):
    """The media keywords that :func:`write_report` passes on to :func:`_write_report`."""

    media: bool
    media_queries: int
    media_pick: str | tuple[Any, ...]
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
    media_pick: str | tuple[Any, ...],
    media_top: int,
    media_max_items: int,
    media_progress: bool,
    media_log: Callable[[str], None] | None,
) -> ReportOutput:
    """The body of :func:`write_report` (its arguments checked, its lock held)."""
    from aria_tda.media.query_evidence import build_evidence
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
    # refuse before anything is written: nothing is written over that ARIA did not write for
    # the same purpose (aria_tda._outputs)
    tables_state = _check_outputs(data, out_path, tdir, media_folder(out_path) if media else None)
    tables = build_tables(data, k=kk)
    if tables_state is not None:  # the names are known now: a file of others where one goes
        check_collisions("tables_dir", tables_state, _export_names(data, tables),
                         flag="--tables-dir")
    evidence = build_evidence(data, k=kk, top_n=top_n, pairs_per_channel=pairs_per_channel)
    manifest, stats = None, None
    if media and not evidence.empty:
        from aria_tda.media.report_media import write_report_media

        manifest, stats = write_report_media(data, media_folder(out_path),
                                             queries=media_queries, pick=media_pick,
                                             top=media_top,
                                             max_items=media_max_items,
                                             log=media_log, progress=media_progress)
    page = render_html(data, tables, k=kk, evidence=evidence, plots=plots, media=manifest)
    write_page(out_path, page, REPORT_PAGE)
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
