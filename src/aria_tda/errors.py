"""Exceptions and warnings raised by ARIA.

One hierarchy, so callers (and the CLI) can tell a user mistake from a bug:

- :class:`AriaError` — base of everything ARIA raises on purpose.
- :class:`ParameterError` — an argument has the wrong type, range or value.
- :class:`DataError` — input data is malformed (NaN scores, wrong shape, ids that do not match).
- :class:`FileFormatError` — a file cannot be read: missing, truncated, not the format claimed.
- :class:`ManifestMismatchError` — a stored artefact was computed with other settings.
- :class:`MissingDependencyError` — an optional extra is not installed.

Warnings are :class:`AriaWarning` (degenerate-but-defined input: a constant column, a group
larger than the pool); they always say what was done about it.

Messages name the parameter, what was expected and what was received::

    ParameterError: chunk_rows: expected a positive integer, got -3
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AriaError",
    "AriaWarning",
    "DataError",
    "FileFormatError",
    "ManifestMismatchError",
    "MissingDependencyError",
    "ParameterError",
    "expected",
]


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
        The value received. Strings are shown with ``repr`` (quotes visible), anything else
        with ``str``; the shown text is cut to 200 characters.

    Returns
    -------
    str
        ``"{name}: expected {what}, got {got}"``.

    Examples
    --------
    >>> expected("chunk_rows", "a positive integer", -3)
    'chunk_rows: expected a positive integer, got -3'
    """
    shown = repr(got) if isinstance(got, str) else str(got)
    if len(shown) > 200:
        shown = shown[:197] + "..."
    return f"{name}: expected {what}, got {shown}"
