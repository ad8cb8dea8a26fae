"""A dossier as PDF: the page printed by a headless Chromium, every panel on paper.

:func:`print_pdf` prints a dossier's HTML with a Chromium-family browser in headless mode
(``--print-to-pdf``; the page's print stylesheet shows every item's evidence for every
channel, the pairs and the provenance, and hides the players and controls). The browser is
``$ARIA_BROWSER`` when set, else the first of :data:`BROWSERS` on ``PATH``; none is a
:class:`~aria_tda.errors.MissingDependencyError` that says how to install one. The PDF is
written to a temporary sibling and renamed into place; an existing file is replaced only
when it is a dossier PDF ARIA printed (its title ends with :data:`TITLE_MARK`), anything else
is refused before any work.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aria_tda.errors import DataError, MissingDependencyError, ParameterError, expected

__all__ = ["BROWSERS", "TITLE_MARK", "check_pdf_output", "find_browser", "print_pdf"]

#: Browsers tried, in order, when ``$ARIA_BROWSER`` is not set.
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
#: The end of every dossier's title: how a PDF ARIA printed is recognised.
TITLE_MARK = "ARIA evidence dossier"
_TITLE = re.compile(rb"/Title\s*(?:<FEFF([0-9A-Fa-f]*)>|\(([^)]*)\))")


def find_browser() -> str:
    """The browser :func:`print_pdf` uses (module docstring).

    Raises
    ------
    MissingDependencyError
        None is installed.
    """
    env = os.environ.get("ARIA_BROWSER")
    if env:
        found = shutil.which(env)
        if found is None:
            raise MissingDependencyError(expected(
                "ARIA_BROWSER", "a Chromium-family browser on PATH or its path", env))
        return found
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    raise MissingDependencyError(
        "--pdf: printing needs a Chromium-family browser (none of "
        f"{', '.join(BROWSERS)} is on PATH): install one (Debian/Ubuntu: apt install chromium; "
        "scripts/setup.sh --dev does) or set ARIA_BROWSER to its path; or open the HTML "
        "dossier and print it from the browser (every panel prints)")


def _title(pdf: bytes) -> str | None:
    m = _TITLE.search(pdf[-65536:]) or _TITLE.search(pdf)
    if m is None:
        return None
    if m.group(1) is not None:
        try:
            return bytes.fromhex(m.group(1).decode()).decode("utf-16-be")
        except (ValueError, UnicodeDecodeError):
            return None
    return m.group(2).decode("latin-1")


def check_pdf_output(path: str | os.PathLike[str], *, html: Any = None,
                     keeps: Iterable[Any] = ()) -> Path:
    """``path`` if a PDF may be written there: a new file in an existing folder, or a dossier
    PDF ARIA printed before; never the dossier's own HTML, nor a path ``keeps`` protects.

    Parameters
    ----------
    path : path
        The PDF to write.
    html : path, optional
        The dossier it prints (``--out``): the PDF may not replace it.
    keeps : iterable of aria_tda._outputs.Keep
        Paths it must not be or lie inside (:func:`aria_tda._outputs.results_keeps`: the
        results folder's own files, its cache, the study's inputs).

    Raises
    ------
    ParameterError
        A folder, a link, a file that is not ARIA's dossier PDF, the dossier's HTML, a kept
        path, or a missing parent folder.
    """
    from aria_tda._outputs import check_keeps, refusal, same_path

    p = Path(path)
    if html is not None and same_path(p, html):
        raise refusal("pdf", p, "is the dossier's own HTML (--out)", flag="--pdf",
                      removable=False)
    check_keeps("pdf", p, keeps, flag="--pdf", folder=False)
    if p.suffix.lower() != ".pdf":
        raise ParameterError(expected("--pdf", "a path ending in .pdf", str(path)))
    if p.is_symlink() or p.is_dir():
        raise ParameterError(expected("--pdf", "a new PDF file or a dossier PDF ARIA printed",
                                      f"{'a link' if p.is_symlink() else 'a folder'}: {p}"))
    if not p.parent.is_dir():
        raise ParameterError(expected("--pdf", "a path in an existing folder", str(p)))
    if p.exists():
        head = p.read_bytes()
        title = _title(head) if head.startswith(b"%PDF") else None
        if title is None or not title.endswith(TITLE_MARK):
            raise ParameterError(
                f"--pdf: {p} exists and is not a dossier PDF ARIA printed; it is left as it is "
                "(choose a new path, or move the file away)")
    return p


def print_pdf(html: str | os.PathLike[str], pdf: str | os.PathLike[str], *,
              timeout: float = 180.0) -> Path:
    """Print the dossier ``html`` to ``pdf`` (module docstring).

    Parameters
    ----------
    html : path
        A dossier written by :func:`aria_tda.media.dossier.write_dossier`.
    pdf : path
        The PDF to write (:func:`check_pdf_output`).
    timeout : float
        Seconds the browser may take.

    Returns
    -------
    pathlib.Path
        ``pdf``.

    Raises
    ------
    MissingDependencyError
        No browser (:func:`find_browser`).
    DataError
        The browser failed or wrote no PDF (its last line of output is named).
    """
    out = check_pdf_output(pdf)
    browser = find_browser()
    src = Path(html).resolve()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        with tempfile.TemporaryDirectory(prefix="aria-browser-") as profile:
            cmd = [browser, "--headless", "--disable-gpu", "--no-pdf-header-footer",
                   "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}",
                   f"--print-to-pdf={tmp}", src.as_uri()]
            if hasattr(os, "geteuid") and os.geteuid() == 0:
                cmd.insert(1, "--no-sandbox")  # Chromium refuses to run as root otherwise
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                raise DataError(f"--pdf: {browser} did not finish printing in {timeout:.0f} s"
                                ) from None
        data = tmp.read_bytes() if tmp.exists() else b""
        if not data.startswith(b"%PDF"):
            last = (proc.stderr or proc.stdout or "").strip().splitlines()
            why = last[-1] if last else f"exit code {proc.returncode}"
            raise DataError(f"--pdf: {browser} wrote no PDF ({why})")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out
