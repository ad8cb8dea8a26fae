"""Exceptions and warnings raised by ARIA.

One hierarchy, so callers (and the CLI) can tell a user mistake from a bug:

- :class:`AriaError` — base of everything ARIA raises on purpose.
- :class:`ParameterError` — an argument has the wrong type, range or value.
- :class:`DataError` — input data is malformed (NaN scores, wrong shape, ids that do not match).
- :class:`FileFormatError` — a file cannot be read: missing, truncated, not the format claimed.
- :class:`ManifestMismatchError` — a stored artefact was computed with other settings.
- :class:`MissingDependencyError` — an optional extra is not installed.
- :class:`DiskFullError` — a writer would not fit on its file system (checked before writing).
- :class:`LockedError` — another ARIA process is writing the same store or results folder.
- :class:`MemoryLimitError` — an allocation does not fit in the memory the process may use.

Warnings are :class:`AriaWarning` (degenerate-but-defined input: a constant column, a group
larger than the pool); they always say what was done about it.

Messages name the parameter, what was expected and what was received::

    ParameterError: chunk_rows: expected a positive integer, got -3
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "AriaError",
    "AriaWarning",
    "DataError",
    "DiskFullError",
    "FileFormatError",
    "LockedError",
    "ManifestMismatchError",
    "MemoryLimitError",
    "MissingDependencyError",
    "ParameterError",
    "expected",
    "library_message",
    "one_line",
]

#: ANSI escape sequences (colours, bold) that terminal-minded libraries put in their messages.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
#: Longest text :func:`one_line` keeps.
ONE_LINE_LIMIT = 300


class AriaError(Exception):
    """Base class of every error ARIA raises on purpose."""


class ParameterError(AriaError, ValueError):
    """An argument has the wrong type, range or value."""


class DataError(AriaError, ValueError):
    """Input data is malformed: NaN or inf, wrong shape, ids that do not match."""


class FileFormatError(DataError):
    """A file cannot be read: missing, truncated, or not in the format claimed."""


class ManifestMismatchError(AriaError):
    """A stored artefact was computed with other settings than the ones asked for."""


class MissingDependencyError(AriaError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class DiskFullError(AriaError, OSError):
    """An output does not fit: ``No space left on DEVICE: need N, have M``; nothing was left."""


class LockedError(AriaError):
    """Another process holds the writer lock of a store or results folder (named in the text)."""


class MemoryLimitError(AriaError, MemoryError):
    """An allocation does not fit in the memory the process may use; the message names the
    limit and the mode or budget that needs less (:mod:`aria_tda._memory`)."""


class AriaWarning(UserWarning):
    """Degenerate-but-defined input; the message says what was done about it."""


def expected(name: str, what: str, got: Any) -> str:
    """Format the house error message ``"name: expected what, got got"``.

    Parameters
    ----------
    name : str
        The offending parameter (or input), as the caller knows it, e.g. ``"chunk_rows"``.
    what : str
        What was expected, phrased to follow "expected", e.g. ``"a positive integer"``.
    got : Any
        The value received. Strings are shown with ``repr`` (quotes visible), arrays and
        tensors by their type, shape and dtype, anything else with ``str``; the shown text is
        cut to 200 characters.

    Returns
    -------
    str
        ``"{name}: expected {what}, got {got}"``.

    Examples
    --------
    >>> expected("chunk_rows", "a positive integer", -3)
    'chunk_rows: expected a positive integer, got -3'
    """
    shape = getattr(got, "shape", None)
    if isinstance(shape, tuple) and len(shape) >= 1 and hasattr(got, "dtype"):
        # an array or tensor: its kind and shape, not its printed values
        kind = f"{type(got).__module__.split('.')[0]}.{type(got).__name__}"
        shown = f"a {kind} of shape {tuple(int(x) for x in shape)} and dtype {got.dtype}"
    else:
        shown = repr(got) if isinstance(got, str) else str(got)
    if len(shown) > 200:
        shown = shown[:197] + "..."
    return f"{name}: expected {what}, got {shown}"


def one_line(text: Any, *, limit: int = ONE_LINE_LIMIT) -> str:
    r"""``text`` as one short line: ANSI codes removed, its first non-empty line, cut to ``limit``.

    For quoting another library's message inside ARIA's own (torch's, zarr's and pandas'
    messages run to several lines and ~1,000 characters, some with terminal colour codes).

    Parameters
    ----------
    text : Any
        The message (``str()`` is taken).
    limit : int
        The most characters kept; a longer line ends in ``"..."``.

    Examples
    --------
    >>> one_line("\x1b[1mbad\x1b[0m header\n\tdetails follow")
    'bad header'
    """
    clean = _ANSI.sub("", str(text))
    lines = [" ".join(line.split()) for line in clean.splitlines()]
    first = next((line for line in lines if line), "")
    if len(first) > limit:
        first = first[: max(0, limit - 3)].rstrip() + "..."
    return first


def _torch_unpickling(text: str) -> str | None:
    """A short reading of torch's ``weights_only`` refusal, or None for other messages."""
    match = re.search(r"[Uu]nsupported (?:global: )?GLOBAL ([\w.]+)", text)
    if match is None:
        inner = re.search(r"WeightsUnpickler error:\s*(.+?)\s*(?:Check the documentation|$)",
                          text, flags=re.S)
        if inner is None:
            return None
        return (
            f"torch refused to unpickle it ({one_line(inner.group(1))}); ARIA reads tensors "
            "only (torch.load weights_only=True)"
        )
    name = match.group(1)
    what = "a pickled NumPy array" if name.startswith("numpy") else f"a pickled {name}"
    return (
        f"it holds {what}, which ARIA does not unpickle (torch.load weights_only=True); save "
        "a torch tensor (torch.save(torch.from_numpy(a), path)) or a .npy file (np.save)"
    )


def library_message(exc: BaseException, *, limit: int = ONE_LINE_LIMIT) -> str:
    """Another library's exception as one short line ``"TypeName: first line"``, no ANSI codes.

    Used wherever ARIA wraps a library's error into its own (:class:`FileFormatError`). torch's
    refusal to unpickle a non-tensor object (``weights_only``) is read as what it means.

    Parameters
    ----------
    exc : BaseException
        The library's exception.
    limit : int
        The most characters of the library's message kept.
    """
    text = _ANSI.sub("", str(exc))
    torch_reading = _torch_unpickling(text)
    if torch_reading is not None:
        return torch_reading
    return f"{type(exc).__name__}: {one_line(text, limit=limit)}"
