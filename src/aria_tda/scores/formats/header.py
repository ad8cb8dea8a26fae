r"""What a score file's header claims, checked against the file before anything is read.

Conventions
-----------
Every reader distrusts its header — bergson's ``info.json``, a safetensors JSON header, the
dict of an ``.npy`` file, a zip's member sizes, Kronfluence's score arguments and partition
names, a zarr array's metadata. A size, offset, shape, dtype or grid is a *claim*, checked in
this order before any allocation, seek or loop that it sizes:

1. its type (an integer is an ``int``: not a ``bool``, a float or a number written as text);
2. its range (non-negative; offsets ordered; a grid of at least one cell);
3. what the file holds (shape x item size == the byte span; offsets inside the file; the row
   count the file's size implies; no more grid cells than files present).

An absurd number is refused in O(1) time, never looped over. A refusal is one line, a
:class:`~aria_tda.errors.FileFormatError`::

    FILE: FIELD = VALUE: expected WHAT, the file holds WHAT_IS_THERE

JSON headers are parsed with :func:`read_json_header`: a size limit checked before reading,
repeated keys refused (JSON keeps the last one silently), nesting too deep for the parser is
one line too.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aria_tda.errors import FileFormatError, library_message

__all__ = [
    "MAX_JSON_HEADER_BYTES",
    "SHOWN_CHARS",
    "header_dims",
    "header_error",
    "header_int",
    "json_object",
    "read_json_header",
    "shown",
    "span_bytes",
]

#: The most characters of a header value a message shows (longer values are cut with "...").
SHOWN_CHARS = 80
#: The largest JSON header file read (bytes): bergson's ``info.json`` for a million queries is
#: about 70 MB; a larger one is refused before it is read.
MAX_JSON_HEADER_BYTES = 256 * 2**20


def shown(value: Any) -> str:
    """``value`` as a message shows it: strings quoted, anything else as text, cut short.

    Parameters
    ----------
    value : Any
        A header value (from JSON, an ``.npy`` dict, a file name).
    """
    text = repr(value) if isinstance(value, str) else str(value)
    text = " ".join(text.split())
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def header_error(
    where: str | os.PathLike[str],
    field: str,
    value: Any,
    what: str,
    holds: str | None = None,
    *,
    holder: str = "the file",
) -> FileFormatError:
    """The one-line refusal of a header field: ``"WHERE: FIELD = VALUE: expected WHAT[, HOLDS]"``.

    Parameters
    ----------
    where : str or path-like
        The file (and tensor, member or key) as messages name it.
    field : str
        The header field, e.g. ``"num_rows"`` or ``"dtype.offsets[3]"``.
    value : Any
        The value the header holds (shown with :func:`shown`).
    what : str
        What was expected, phrased to follow "expected".
    holds : str, optional
        What the file holds instead, phrased to follow "the file holds" (e.g. ``"288000
        bytes"``); omitted when the type alone is wrong.
    holder : str
        What holds it, when not "the file" (``"the store"``, ``"the folder"``).

    Returns
    -------
    FileFormatError
        To be raised by the caller.
    """
    tail = f", {holder} holds {holds}" if holds else ""
    return FileFormatError(f"{where}: {field} = {shown(value)}: expected {what}{tail}")


def header_int(
    where: str | os.PathLike[str],
    field: str,
    value: Any,
    *,
    min_value: int = 0,
    max_value: int | None = None,
    holds: str | None = None,
) -> int:
    """``value`` if it is an ``int`` within ``[min_value, max_value]``, else a one-line refusal.

    ``bool``, floats (even integral ones) and numbers written as text are refused: no writer of
    these formats writes them, so they mean a damaged or hand-edited header.

    Parameters
    ----------
    where : str or path-like
        The file as messages name it.
    field : str
        The header field.
    value : Any
        The value the header holds.
    min_value, max_value : int, optional
        The allowed range (``max_value=None``: no upper bound).
    holds : str, optional
        What the file holds, for a value out of range (see :func:`header_error`).

    Raises
    ------
    FileFormatError
        Not an ``int``, or out of range.
    """
    if max_value is None:
        what = "a non-negative integer" if min_value == 0 else f"an integer >= {min_value}"
    elif max_value < min_value:
        what = f"an integer >= {min_value} (none fits)"
    else:
        what = f"an integer from {min_value} to {max_value}"
    if type(value) is not int:
        raise header_error(where, field, value, what)
    if value < min_value or (max_value is not None and value > max_value):
        raise header_error(where, field, value, what, holds)
    return value


def header_dims(
    where: str | os.PathLike[str], field: str, value: Any, *, ndim: int | None = None
) -> tuple[int, ...]:
    """A shape (or offset pair): a list or tuple of non-negative ``int``, else a refusal.

    Parameters
    ----------
    where : str or path-like
        The file as messages name it.
    field : str
        The header field, e.g. ``"shape"``.
    value : Any
        The value the header holds.
    ndim : int, optional
        The number of entries required.

    Raises
    ------
    FileFormatError
        Not a list of non-negative integers (of length ``ndim``).
    """
    what = "a list of non-negative integers" if ndim is None else (
        f"a list of {ndim} non-negative integers")
    if not isinstance(value, list | tuple) or (ndim is not None and len(value) != ndim):
        raise header_error(where, field, value, what)
    if not all(type(d) is int and d >= 0 for d in value):
        raise header_error(where, field, value, what)
    return tuple(value)


def span_bytes(shape: Sequence[int], itemsize: int) -> int:
    """Bytes of a C- or Fortran-ordered array of ``shape`` (exact: Python integers, no overflow).

    Parameters
    ----------
    shape : sequence of int
        Non-negative dimensions (checked with :func:`header_dims`).
    itemsize : int
        Bytes per element.
    """
    return math.prod(int(d) for d in shape) * int(itemsize)


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _RepeatedKey(key)
        out[key] = value
    return out


class _RepeatedKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def read_json_header(
    path: Path,
    where: str,
    *,
    raw: bytes | None = None,
    what: str,
    max_bytes: int = MAX_JSON_HEADER_BYTES,
) -> Any:
    """Parse a JSON header (a file, or ``raw`` bytes already read from one), in one line if bad.

    Parameters
    ----------
    path : pathlib.Path
        The JSON file (read when ``raw`` is None; its size is checked first).
    where : str
        How messages name it.
    raw : bytes, optional
        The header's bytes, already read (a safetensors header).
    what : str
        What the file should be, for messages, e.g. ``"bergson info.json"``.
    max_bytes : int
        The largest file read.

    Returns
    -------
    Any
        The parsed JSON value (the caller checks its type).

    Raises
    ------
    FileFormatError
        Too large, not UTF-8, not JSON, nested too deep, or holding a key twice.
    """
    try:
        if raw is None:
            size = path.stat().st_size
            if size > max_bytes:
                raise header_error(where, "size", size, f"at most {max_bytes} bytes for {what}")
            raw = path.read_bytes()
        return json.loads(raw.decode("utf-8"), object_pairs_hook=_no_repeats)
    except _RepeatedKey as exc:
        raise FileFormatError(
            f"{where}: key {shown(exc.key)} appears twice: expected each key once in {what}"
        ) from None
    except RecursionError:
        raise FileFormatError(f"{where}: not a readable {what} (JSON nested too deep)") from None
    except (OSError, ValueError) as exc:  # UnicodeDecodeError and JSONDecodeError included
        raise FileFormatError(f"{where}: not a readable {what} ({library_message(exc)})") from None


#: JSON's names for the Python types :func:`json.loads` returns.
_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", int: "a number",
               float: "a number", bool: "true or false", type(None): "null"}


def json_object(value: Any, where: str, what: str) -> dict[str, Any]:
    """``value`` if it is a JSON object, else the one-line refusal naming what it is.

    Parameters
    ----------
    value : Any
        A parsed JSON value (:func:`read_json_header`).
    where : str
        How messages name the file.
    what : str
        What the file should be, for messages.

    Raises
    ------
    FileFormatError
        ``value`` is not a dict.
    """
    if not isinstance(value, dict):
        got = _JSON_TYPES.get(type(value), type(value).__name__)
        raise FileFormatError(f"{where}: expected {what}, a JSON object, got {got}")
    return value
