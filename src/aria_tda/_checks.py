"""Declarative parameter checks shared by every public function.

Each check returns the (possibly converted) value or raises
:class:`~aria_tda.errors.ParameterError` whose message names the parameter, what was
expected and what was received.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Collection
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from aria_tda._paths import input_path, os_error_message, special_file
from aria_tda.errors import FileFormatError, ParameterError, expected

T = TypeVar("T")

__all__ = [
    "check_choice",
    "check_existing_path",
    "check_float",
    "check_int",
    "check_int_list",
    "check_rng",
    "check_writable_path",
]


def check_int(
    name: str, value: Any, *, min_value: int | None = None, max_value: int | None = None
) -> int:
    """Return ``value`` as an ``int`` within ``[min_value, max_value]``.

    ``bool`` is rejected; integral numpy scalars are accepted.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(expected(name, _range_text("an integer", min_value, max_value), value))
    out = int(value)
    if (min_value is not None and out < min_value) or (max_value is not None and out > max_value):
        raise ParameterError(expected(name, _range_text("an integer", min_value, max_value), out))
    return out


def check_float(
    name: str,
    value: Any,
    *,
    min_value: float | None = None,
    max_value: float | None = None,
    min_inclusive: bool = True,
    max_inclusive: bool = True,
) -> float:
    """Return ``value`` as a finite ``float`` within the given bounds."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(expected(name, "a real number", value))
    out = float(value)
    what = _range_text("a finite number", min_value, max_value, min_inclusive, max_inclusive)
    if not math.isfinite(out):
        raise ParameterError(expected(name, what, out))
    if min_value is not None and (out < min_value or (not min_inclusive and out == min_value)):
        raise ParameterError(expected(name, what, out))
    if max_value is not None and (out > max_value or (not max_inclusive and out == max_value)):
        raise ParameterError(expected(name, what, out))
    return out


def check_choice(name: str, value: Any, choices: Collection[T]) -> T:
    """Return ``value`` if it is one of ``choices``."""
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise ParameterError(expected(name, f"one of {listed}", value))
    return value


def check_int_list(name: str, value: Any, *, min_value: int | None = None) -> list[int]:
    """Return a non-empty, strictly increasing list of integers (duplicates removed, sorted)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = [value]
    try:
        items = list(value)
    except TypeError:
        raise ParameterError(expected(name, "a list of integers", value)) from None
    if not items:
        raise ParameterError(expected(name, "a non-empty list of integers", value))
    out = sorted({check_int(f"{name}[{i}]", v, min_value=min_value) for i, v in enumerate(items)})
    return out


def check_rng(seed: Any) -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` from ``None``, an int seed or a Generator."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng(check_int("seed", seed, min_value=0))


def check_existing_path(name: str, value: Any, *, kind: str = "any") -> Path:
    """Return ``value`` as a :class:`~pathlib.Path` to an existing, readable file or directory.

    Nothing is opened (:func:`aria_tda._paths.input_path`): a FIFO, a device or a socket is
    refused before any read, a broken symlink names its missing target and a symlink loop is
    called one.

    Parameters
    ----------
    name : str
        The parameter the message names.
    value : str or path-like
        The path given.
    kind : {"any", "file", "dir"}
        A regular file, a directory, or either.
    """
    return input_path(value, name, kind=kind)


def check_writable_path(name: str, value: Any) -> Path:
    """Return ``value`` as a Path whose parent directory exists (or can be made) and is writable."""
    if not isinstance(value, (str, os.PathLike)):
        raise ParameterError(expected(name, "a path", value))
    path = Path(value)
    special = special_file(path)
    if special is not None:  # opening a FIFO to write blocks until a reader comes
        raise FileFormatError(
            f"{name}: expected a path to write a file at, got {special}: {str(path)!r}"
        )
    parent = path.absolute().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FileFormatError(os_error_message(exc, name=name)) from None
    if not os.access(parent, os.W_OK):
        raise FileFormatError(f"{name}: directory is not writable: {str(parent)!r}")
    return path


def _range_text(
    what: str,
    lo: float | None,
    hi: float | None,
    lo_inclusive: bool = True,
    hi_inclusive: bool = True,
) -> str:
    if lo is None and hi is None:
        return what
    if hi is None:
        return f"{what} {'>=' if lo_inclusive else '>'} {lo}"
    if lo is None:
        return f"{what} {'<=' if hi_inclusive else '<'} {hi}"
    left = "[" if lo_inclusive else "("
    right = "]" if hi_inclusive else ")"
    return f"{what} in {left}{lo}, {hi}{right}"
