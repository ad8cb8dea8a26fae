"""Folders ARIA writes and lists: replace only what ARIA wrote there, keep everything else.

The ``--latex`` tables folder and a report's ``<stem>_media`` folder are written through
:func:`owned_folder` (a temporary sibling, then renamed into place, or its files renamed in)
and carry :data:`MARK_FILE`, a JSON manifest with the folder's kind and the files ARIA wrote.
Those files are ARIA's to replace or remove; anything else in the folder (a user's notes, an
empty folder, a link) is kept, and a file of another origin where ARIA would write is refused
(:func:`check_collisions`). A folder without the manifest is ARIA's only when the caller's
``legacy`` test recognises it (folders written before the manifest existed); otherwise it must
be new or empty (:func:`folder_state`). The refusals follow :mod:`aria_tda._outputs`.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aria_tda._io import as_disk_full, is_temporary, remove_path, temp_name
from aria_tda._outputs import (
    Keep,
    check_keeps,
    check_path_type,
    check_writable,
    kind_label,
    refusal,
    same_path,
    what_is,
)
from aria_tda.errors import ParameterError
from aria_tda.manifest import package_version

__all__ = [
    "MARK_FILE",
    "FolderState",
    "Legacy",
    "check_collisions",
    "check_folder_output",
    "folder_state",
    "owned_folder",
    "remove_owned_folder",
]

#: The manifest file of a folder ARIA wrote (kind and files).
MARK_FILE = ".aria-output.json"

#: Recognises a folder written before folders carried :data:`MARK_FILE`: given the folder, its
#: regular files and its other entries (relative paths), the files ARIA wrote there, or None
#: when the folder is not one of ARIA's.
Legacy = Callable[[Path, list[str], list[str]], frozenset[str] | None]


@dataclass(frozen=True)
class FolderState:
    """What an output folder holds, by origin.

    Attributes
    ----------
    path : Path
        The folder.
    exists : bool
        Whether it exists (an empty folder counts as existing).
    owned : frozenset of str
        Files ARIA wrote there (relative, ``/``-separated), manifest excluded.
    foreign : tuple of str
        Everything else (relative paths of files, links, special files, empty folders;
        temporaries of ARIA's writers excluded).
    """

    path: Path
    exists: bool
    owned: frozenset[str]
    foreign: tuple[str, ...]


#: At most this many entries are walked to tell whether a folder without a manifest is one of
#: ARIA's older folders (a larger one is not).
_LEGACY_WALK = 5000


class _TooMany(Exception):
    pass


def _entries(folder: Path, *, limit: int | None = None) -> tuple[list[str], list[str]]:
    """``(files, others)`` under ``folder``: regular files, and links / special files / empty
    folders, as relative ``/``-separated paths; links are not followed and temporaries are
    skipped.

    Raises ``_TooMany`` after ``limit`` entries.
    """
    files: list[str] = []
    others: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        rel_dir = Path(dirpath).relative_to(folder)
        if rel_dir != Path(".") and not dirnames and not filenames:
            others.append(rel_dir.as_posix())  # an empty folder someone made: kept
        for d in list(dirnames):
            full = Path(dirpath) / d
            if full.is_symlink():
                others.append((rel_dir / d).as_posix())
                dirnames.remove(d)
            elif is_temporary(d):
                dirnames.remove(d)
        for f in filenames:
            if is_temporary(f):
                continue
            full = Path(dirpath) / f
            rel = (rel_dir / f).as_posix()
            if full.is_symlink() or not full.is_file():
                others.append(rel)
            else:
                files.append(rel)
        if limit is not None and len(files) + len(others) > limit:
            raise _TooMany
    return sorted(files), sorted(others)


def _top_names(folder: Path) -> list[str]:
    """Names at the top of ``folder`` (temporaries of ARIA's writers left out)."""
    with os.scandir(folder) as it:
        return sorted(e.name for e in it if not is_temporary(e.name))


def _listed(names: list[str]) -> str:
    """``a, b, c, d and 3 more``."""
    more = f" and {len(names) - 4} more" if len(names) > 4 else ""
    return ", ".join(names[:4]) + more


def _read_mark(folder: Path) -> dict[str, Any] | None:
    mark = folder / MARK_FILE
    if mark.is_symlink() or not mark.is_file():
        return None
    try:
        with open(mark, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str) or not isinstance(
            data.get("files"), list):
        return None
    return data


def folder_state(name: str, path: Path, kind: str, *, flag: str,
                 legacy: Legacy | None = None
                 ) -> FolderState:
    """What the output folder ``path`` holds; refuses one that ARIA did not write as ``kind``.

    Allowed: no folder, an empty folder, a folder with ARIA's manifest of ``kind``
    (:data:`MARK_FILE`), or one that ``legacy(path, files, others)`` recognises (it returns
    the files ARIA wrote there; the others are kept).

    Raises
    ------
    ParameterError
        A symbolic link, a file, an ARIA folder of another kind, a folder ARIA did not write.
    """
    if path.is_symlink():
        raise refusal(name, path, "is a symbolic link (ARIA writes through no link)", flag=flag)
    if not path.exists():
        return FolderState(path, False, frozenset(), ())
    if not path.is_dir():
        what = "is a file" if path.is_file() else f"is {what_is(path)}"
        raise refusal(name, path, f"{what}; expected a path for {kind_label(kind)}", flag=flag)
    top = _top_names(path)
    if not top:
        return FolderState(path, True, frozenset(), ())
    mark = _read_mark(path)
    if mark is not None:
        files, others = _entries(path)
        if mark["kind"] != kind:
            other = kind_label(str(mark["kind"]), article=False)
            raise refusal(name, path, f"is an ARIA {other}, not {kind_label(kind)}", flag=flag)
        listed = {str(f) for f in mark["files"]}
        owned = frozenset(f for f in files if f in listed)
        foreign = tuple(f for f in [*files, *others] if f not in owned and f != MARK_FILE)
        return FolderState(path, True, owned, foreign)
    if legacy is not None:
        try:
            files, others = _entries(path, limit=_LEGACY_WALK)
        except _TooMany:
            files, others = [], ["..."]
        found = legacy(path, files, others) if files else None
        if found:
            return FolderState(path, True, found,
                               tuple(f for f in [*files, *others] if f not in found))
    raise refusal(name, path, f"holds files ARIA did not write ({_listed(top)})", flag=flag)


def check_folder_output(name: str, path: Any, kind: str, *, flag: str,
                        keeps: Iterable[Keep] = (), others: Iterable[tuple[Path, str]] = (),
                        legacy: Legacy | None = None
                        ) -> FolderState:
    """Check, before any work, that a folder of ``kind`` may be written at ``path``.

    See :func:`folder_state`; besides, the folder must not be, hold or lie inside a path of
    ``keeps``, nor be one of ``others`` (another output of the same command).

    Parameters
    ----------
    name : str
        The parameter (``tables_dir``).
    path : str or path-like
        The folder.
    kind : str
        :data:`TABLES_FOLDER` or :data:`MEDIA_FOLDER`.
    flag : str
        The flag messages point to (``--tables-dir``).
    keeps : iterable of Keep
        :func:`results_keeps`.
    others : iterable of (Path, str)
        The command's other outputs, with how to name them.
    legacy : callable, optional
        Recognises a folder of ``kind`` written before folders carried :data:`MARK_FILE`.

    Returns
    -------
    FolderState
    """
    p = check_path_type(name, path)
    for other, what in others:
        if same_path(p, other):
            raise refusal(name, p, f"is also {what}", flag=flag)
    if not p.is_symlink():  # a link is refused as such (folder_state)
        check_keeps(name, p, keeps, flag=flag, folder=True)
    state = folder_state(name, p, kind, flag=flag, legacy=legacy)
    check_writable(name, p, flag=flag)
    return state


def check_collisions(name: str, state: FolderState, names: Iterable[str], *, flag: str) -> None:
    """Refuse when a file ARIA is about to write into the folder is not ARIA's own.

    Parameters
    ----------
    name : str
        The parameter.
    state : FolderState
        From :func:`check_folder_output` (or :func:`folder_state`).
    names : iterable of str
        Relative paths (``/``-separated) that will be written.
    flag : str
        The flag messages point to.
    """
    foreign = set(state.foreign)
    for rel in names:
        parts = rel.split("/")
        # a folder on the way may be anyone's (ARIA writes into it); a file or link may not
        clash = next((h for h in ("/".join(parts[:i + 1]) for i in range(len(parts) - 1))
                      if (state.path / h).is_symlink() or (state.path / h).is_file()), None)
        if clash is None and state.exists:
            full = state.path / rel
            if rel in foreign or full.is_symlink() or full.is_dir():
                clash = rel
        if clash is not None:
            p = state.path / clash
            what = ("a symbolic link" if p.is_symlink() else "a folder" if p.is_dir()
                    else "a file ARIA did not write")
            raise refusal(name, p, f"is {what}, where ARIA would write {rel}", flag=flag)


def _write_mark(folder: Path, kind: str, files: list[str]) -> None:
    text = json.dumps({"kind": kind, "aria_version": package_version(), "files": files},
                      indent=1)
    (folder / MARK_FILE).write_text(text + "\n", encoding="utf-8")


@contextlib.contextmanager
def owned_folder(path: str | os.PathLike[str], kind: str, *, name: str, flag: str,
                 legacy: Legacy | None = None
                 ) -> Iterator[Path]:
    """Yield an empty temporary folder; on success its files become the output folder.

    On success, with :data:`MARK_FILE` listing what was written: a missing folder is the
    temporary renamed into place; a folder that holds only ARIA's earlier files of ``kind`` is
    swapped for it whole; otherwise (an empty folder, or one that also holds files ARIA did
    not write) each new file is renamed in, ARIA's earlier files that were not written again
    are removed, and everything else stays. The folder is checked again first
    (:func:`folder_state`, :func:`check_collisions`), so nothing is written over that is not
    ARIA's. On an exception the temporary goes and the folder is left as it was.

    Parameters
    ----------
    path : path-like
        The output folder.
    kind : str
        :data:`TABLES_FOLDER` or :data:`MEDIA_FOLDER`.
    name, flag : str
        For messages (``tables_dir``, ``--tables-dir``).
    legacy : callable, optional
        As for :func:`folder_state`.
    """
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(temp_name(final.name))
    try:
        tmp.mkdir()
        yield tmp
        files = [f for f in _entries(tmp)[0] if f != MARK_FILE]
        _write_mark(tmp, kind, files)
        state = folder_state(name, final, kind, flag=flag, legacy=legacy)
        check_collisions(name, state, files, flag=flag)
        if not state.exists:
            os.replace(tmp, final)
        elif state.owned and not state.foreign:
            old = final.with_name(temp_name(final.name, "old"))
            os.replace(final, old)
            os.replace(tmp, final)
            remove_path(old)
        else:
            for rel in files:
                dst = final / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.replace(tmp / rel, dst)
            _remove_files(final, state.owned - set(files))
            os.replace(tmp / MARK_FILE, final / MARK_FILE)
    except OSError as exc:
        full = as_disk_full(exc, final)
        if full is not exc:
            raise full from None
        raise
    finally:
        remove_path(tmp)


def _remove_files(folder: Path, rels: Iterable[str]) -> None:
    """Remove ARIA's files ``rels`` from ``folder``, and the sub-folders they leave empty."""
    for rel in sorted(rels, key=lambda r: -r.count("/")):
        f = folder / rel
        if f.is_file() and not f.is_symlink():
            f.unlink()
        parent = f.parent
        while parent != folder:
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent


def remove_owned_folder(path: str | os.PathLike[str], kind: str, *,
                        legacy: Legacy | None = None
                        ) -> bool:
    """Remove ARIA's files of ``kind`` from ``path`` (and the folder, when nothing else is left).

    Nothing happens to a folder ARIA did not write as ``kind``, nor to a link.

    Parameters
    ----------
    path : path-like
        The folder.
    kind : str
        Its kind.
    legacy : callable, optional
        As for :func:`folder_state`.

    Returns
    -------
    bool
        Whether anything was removed.
    """
    p = Path(path)
    try:
        state = folder_state("path", p, kind, flag="path", legacy=legacy)
    except ParameterError:
        return False
    marked = state.exists and _read_mark(p) is not None
    if not state.owned and not marked:
        return False
    _remove_files(p, state.owned)
    if marked:
        (p / MARK_FILE).unlink()
    with contextlib.suppress(OSError):
        p.rmdir()  # only when nothing else is left
    return True
