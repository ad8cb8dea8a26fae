"""The output rule: ARIA writes over, into or through nothing it did not make for that purpose.

Every command that writes checks its outputs here before any work, and each refusal is one line
naming the parameter, the path, what is there and the flag to change::

    out: 'paper/main.tex' is a file ARIA did not write; choose another --out (or remove it
    yourself)

Conventions
-----------
What counts as ARIA's own output, by kind:

- **Pages** (:data:`REPORT_PAGE`, :data:`DOSSIER_PAGE`): an HTML file whose head carries
  ``<meta name="generator" content="aria-tda ...">`` and ``<meta name="aria-output"
  content="KIND">`` (:func:`mark_page`, :func:`page_kind`). Pages written before the kind was
  marked are told apart by their title (a dossier's is "Evidence dossier: ...").
- **Folders** (:data:`TABLES_FOLDER`, the ``--latex`` tables; :data:`MEDIA_FOLDER`, a report's
  ``<stem>_media``): a folder holding ``.aria-output.json``, a small JSON manifest with the
  folder's kind and the files ARIA wrote there. Only those files are ever replaced or removed;
  anything else in the folder is kept, and a file of another origin where ARIA would write is
  refused (:mod:`aria_tda._output_folders`).
- A path that is a **symbolic link** is never ARIA's: ARIA makes no links, so an output that
  is one is refused rather than written through (or replacing the user's link).
- Writes are atomic renames of a temporary sibling (:func:`aria_tda._io.atomic_path`): a file
  hard-linked elsewhere is never modified in place; its other name keeps the old bytes.

The results folder of a study (``results.json``, its tables, ``report.html``, ``.cache``) and
the study's inputs are kept by every output of ``aria-tda report`` and ``aria-tda evidence``
(:func:`results_keeps`); ``aria-tda run`` keeps its own rule for the folder it writes
(:func:`aria_tda.study.runner.check_output`), built on the same helpers.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aria_tda._io import write_text
from aria_tda._lock import LOCK_NAME
from aria_tda._paths import describe_mode
from aria_tda.errors import FileFormatError, ParameterError, expected
from aria_tda.manifest import package_version
from aria_tda.results import REPORT_FILE, RESULTS_FILE, TABLES

__all__ = [
    "DOSSIER_PAGE",
    "MEDIA_FOLDER",
    "REPORT_PAGE",
    "RESULTS_CACHE",
    "TABLES_FOLDER",
    "Keep",
    "check_keeps",
    "check_lock_file",
    "check_page_output",
    "check_path_type",
    "check_writable",
    "inside",
    "kind_label",
    "mark_page",
    "page_kind",
    "refusal",
    "results_keeps",
    "same_path",
    "what_is",
    "write_page",
]

#: Kinds of output: the report page, an evidence dossier, the ``--latex`` tables, report media
#: (folders: :mod:`aria_tda._output_folders`).
REPORT_PAGE = "report"
DOSSIER_PAGE = "dossier"
TABLES_FOLDER = "report-tables"
MEDIA_FOLDER = "report-media"
#: Folders of aria_tda.integrations.miditok: a tokenised corpus and its MIDI excerpts.
TOKEN_CORPUS_FOLDER = "token-corpus"
EXCERPTS_FOLDER = "midi-excerpts"
#: The cache folder inside a results folder (the study runner's step folders).
RESULTS_CACHE = ".cache"

#: How messages name each kind.
_LABEL = {
    REPORT_PAGE: "report page",
    DOSSIER_PAGE: "evidence dossier",
    TABLES_FOLDER: "folder of report tables",
    MEDIA_FOLDER: "report media folder",
    TOKEN_CORPUS_FOLDER: "token corpus folder",
    EXCERPTS_FOLDER: "folder of MIDI excerpts",
}
_GENERATOR = b'<meta name="generator" content="aria-tda'
_KIND_META = re.compile(rb'<meta name="aria-output" content="([A-Za-z0-9_-]+)">')
#: Bytes of a page's head read to tell whose it is.
_HEAD_BYTES = 16384


def kind_label(kind: str, *, article: bool = True) -> str:
    """How messages name an output kind ("an evidence dossier"; "evidence dossier")."""
    label = _LABEL.get(kind, kind)
    if not article:
        return label
    return ("an " if label[:1] in "aeiou" else "a ") + label


def refusal(name: str, path: str | os.PathLike[str], what: str, *, flag: str,
            removable: bool = True) -> ParameterError:
    """The one-line refusal of an output: ``NAME: 'PATH' WHAT; choose another FLAG (...)``.

    Parameters
    ----------
    name : str
        The parameter (``out``, ``tables_dir``, ``output``).
    path : path-like
        The path refused.
    what : str
        What is there, e.g. ``"is a file ARIA did not write"``.
    flag : str
        The command-line flag that names another path (``--out``, ``--tables-dir``).
    removable : bool
        End with "(or remove it yourself)" (not for a path that must stay: an input).
    """
    tail = " (or remove it yourself)" if removable else ""
    return ParameterError(f"{name}: {str(path)!r} {what}; choose another {flag}{tail}")


def same_path(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """``a`` and ``b`` name one file or folder (the same path, or one reached through a link)."""
    with contextlib.suppress(OSError):
        if os.path.samefile(a, b):
            return True
    return Path(a).absolute().resolve() == Path(b).absolute().resolve()


def inside(inner: str | os.PathLike[str], outer: str | os.PathLike[str]) -> bool:
    """``inner`` lies inside the folder ``outer`` (links resolved; not ``outer`` itself)."""
    return Path(outer).absolute().resolve() in Path(inner).absolute().resolve().parents


# ---- pages -------------------------------------------------------------------------------


def page_kind(path: str | os.PathLike[str]) -> str | None:
    """The kind of ARIA page at ``path`` (:data:`REPORT_PAGE`, :data:`DOSSIER_PAGE`), or None.

    None for anything else: a missing path, a folder, a special file (never opened), a file
    whose head does not name aria-tda as its generator.

    Parameters
    ----------
    path : path-like
        Any path.
    """
    p = Path(path)
    if not p.is_file():
        return None
    try:
        with open(p, "rb") as fh:
            head = fh.read(_HEAD_BYTES)
    except OSError:
        return None
    if _GENERATOR not in head:
        return None
    m = _KIND_META.search(head)
    if m is not None:
        return m.group(1).decode("ascii")
    # written before pages named their kind
    return DOSSIER_PAGE if b"<title>Evidence dossier" in head else REPORT_PAGE


def mark_page(html: str, kind: str) -> str:
    """``html`` with ``<meta name="aria-output" content="KIND">`` after its generator tag.

    A page without the generator tag gets one too (in its ``<head>``).

    Parameters
    ----------
    html : str
        A rendered page.
    kind : str
        :data:`REPORT_PAGE` or :data:`DOSSIER_PAGE`.
    """
    tag = f'<meta name="aria-output" content="{kind}">'
    if tag in html:
        return html
    i = html.find('<meta name="generator" content="aria-tda')
    if i >= 0:
        j = html.index(">", i) + 1
        return html[:j] + tag + html[j:]
    gen = f'<meta name="generator" content="aria-tda {package_version()}">'
    i = html.find("<head>")
    j = i + len("<head>") if i >= 0 else 0
    return html[:j] + gen + tag + html[j:]


# ---- paths to keep -------------------------------------------------------------------------


@dataclass(frozen=True)
class Keep:
    """A path that an output must not be (nor hold; nor, with ``inside``, lie inside).

    Attributes
    ----------
    path : Path
        The path kept.
    what : str
        How messages name it (``"the results folder 'results'"``).
    inside : bool
        Nothing may be written inside it either (a cache, a feature store).
    """

    path: Path
    what: str
    inside: bool = False


def results_keeps(results_dir: str | os.PathLike[str], meta: Mapping[str, Any] | None = None,
                  *, allow: Iterable[str] = ()) -> list[Keep]:
    """What an output of a command reading ``results_dir`` must leave alone.

    The results folder itself (its own files may not be replaced by a page or folder of
    another purpose, nor the folder be held by an output folder): ``results.json``, every
    table's file name (present or not), ``report.html``, the writer lock, everything in
    ``.cache``, and the study's inputs that ``results.json`` names and that exist.

    Parameters
    ----------
    results_dir : path-like
        The results folder.
    meta : mapping, optional
        Its ``results.json`` (for the study's inputs).
    allow : iterable of str
        Names in the folder the caller writes on purpose (``report.html`` for the report).
    """
    root = Path(results_dir)
    keeps = [Keep(root, f"the results folder {str(root)!r}"),
             Keep(root / RESULTS_CACHE, f"the results folder's cache {str(root / RESULTS_CACHE)!r}",
                  inside=True)]
    allowed = set(allow)
    names = [RESULTS_FILE, REPORT_FILE, LOCK_NAME, *(t.filename for t in TABLES.values())]
    keeps += [Keep(root / n, f"the results folder's {n}") for n in dict.fromkeys(names)
              if n not in allowed]
    for key, value in _recorded_inputs(meta or {}):
        p = Path(value).expanduser()
        # a relative path is read against the results folder, and as the run wrote it
        for cand in ([p] if p.is_absolute() else [root / p, p]):
            if cand.exists():
                keeps.append(Keep(cand, f"the study's {key} {str(cand)!r}", inside=cand.is_dir()))
    return keeps


def _recorded_inputs(meta: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(key, path)`` of the inputs ``results.json`` names (study and settings)."""
    found: list[tuple[str, str]] = []
    study = meta.get("study")
    if isinstance(study, Mapping):
        for key in ("feature_store", "queries", "query_features"):
            if isinstance(study.get(key), str) and study[key]:
                found.append((key, study[key]))
    for s in meta.get("settings") or []:
        if isinstance(s, Mapping):
            for key in ("scores", "segments", "train_embeddings", "query_embeddings"):
                if isinstance(s.get(key), str) and s[key]:
                    found.append((key, s[key]))
    return found


def check_keeps(name: str, p: Path, keeps: Iterable[Keep], *, flag: str, folder: bool) -> None:
    """Refuse ``p`` when it is (or lies inside, or, for a ``folder``, holds) a kept path."""
    for k in keeps:
        if same_path(p, k.path):
            raise refusal(name, p, f"is {k.what}", flag=flag, removable=False)
        if k.inside and inside(p, k.path):
            raise refusal(name, p, f"lies inside {k.what}", flag=flag, removable=False)
        if folder and k.path.exists() and inside(k.path, p):
            raise refusal(name, p, f"holds {k.what}", flag=flag, removable=False)


def check_writable(name: str, p: Path, *, flag: str) -> None:
    """The nearest existing folder above ``p`` is a writable folder (nothing is created)."""
    for parent in p.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise refusal(name, p, f"lies inside the file {str(parent)!r}", flag=flag)
            if not os.access(parent, os.W_OK | os.X_OK):
                raise FileFormatError(f"{name}: directory is not writable: {str(parent)!r}")
            return


def check_path_type(name: str, value: Any) -> Path:
    """``value`` as a Path (a non-empty string or path-like)."""
    if not isinstance(value, str | os.PathLike) or not str(value):
        raise ParameterError(expected(name, "a path", value))
    return Path(value)


def what_is(p: Path) -> str:
    """``p`` in words, for a path that is neither a regular file nor a folder."""
    try:
        return describe_mode(os.stat(p).st_mode)
    except OSError:
        return "a special file"


def check_page_output(name: str, path: Any, kind: str, *, flag: str,
                      keeps: Iterable[Keep] = ()) -> Path:
    """Check, before any work, that an HTML page of ``kind`` may be written at ``path``.

    Allowed: a new path, or ARIA's own earlier page of the same kind (replaced atomically).
    Refused: a symbolic link, a folder, a special file, any other file (the user's, an input,
    an ARIA page of another kind), a path that is or lies inside one of ``keeps``.

    Parameters
    ----------
    name : str
        The parameter (``out``).
    path : str or path-like
        The page.
    kind : str
        :data:`REPORT_PAGE` or :data:`DOSSIER_PAGE`.
    flag : str
        The flag messages point to (``--out``).
    keeps : iterable of Keep
        Paths the page must not be or lie inside (:func:`results_keeps`).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ParameterError
        One line naming the path, what is there and ``flag``.
    """
    p = check_path_type(name, path)
    if p.is_symlink():
        raise refusal(name, p, "is a symbolic link (ARIA writes through no link)", flag=flag)
    check_keeps(name, p, keeps, flag=flag, folder=False)
    if p.exists():
        if p.is_dir():
            raise refusal(name, p, "is a folder; expected a path for an HTML "
                          f"{kind_label(kind, article=False)}", flag=flag)
        if not p.is_file():
            raise refusal(name, p, f"is {what_is(p)}", flag=flag)
        found = page_kind(p)
        if found is None:
            raise refusal(name, p, "is a file ARIA did not write", flag=flag)
        if found != kind:
            raise refusal(name, p, f"is an ARIA {kind_label(found, article=False)}, not "
                          f"{kind_label(kind)}", flag=flag)
    check_writable(name, p, flag=flag)
    return p


def check_lock_file(name: str, folder: str | os.PathLike[str], *, flag: str) -> None:
    """Refuse a writer lock file in ``folder`` that is a link or not a regular file.

    The writer lock (:func:`aria_tda._lock.writer_lock`) opens ``FOLDER/.aria-lock`` and writes
    its holder's name into it: through a symbolic or hard link that would write into a file of
    someone else.

    Parameters
    ----------
    name : str
        The parameter naming the folder.
    folder : path-like
        The folder about to be locked.
    flag : str
        The flag messages point to.
    """
    p = Path(folder) / LOCK_NAME
    if p.is_symlink():
        raise refusal(name, p, "is a symbolic link (ARIA writes through no link)", flag=flag)
    if not p.exists():
        return
    if not p.is_file():
        raise refusal(name, p, f"is {what_is(p)} where ARIA keeps its writer lock", flag=flag)
    if os.stat(p).st_nlink > 1:
        raise refusal(name, p, "is a hard link to another file (ARIA writes its lock there)",
                      flag=flag)


def write_page(path: Path, html: str, kind: str) -> Path:
    """Write ``html`` marked as ``kind`` (:func:`mark_page`) to ``path``, atomically."""
    return write_text(path, mark_page(html, kind))
