"""Progress for long work, on stderr: a tqdm bar on a terminal, plain lines elsewhere.

- On a terminal: a tqdm bar, redrawn in place.
- Anywhere else (``nohup``, a pipe, a log file, a CI job, a notebook): plain lines for work
  that lasts — the first after :data:`LINE_INTERVAL` seconds, then at most one per
  :data:`LINE_INTERVAL` seconds (``ARIA_PROGRESS_INTERVAL`` changes it), and the final state
  when the work ends (work done sooner prints nothing) — no carriage returns, no terminal
  codes, e.g.
  ``audio features:  35% (120/345 file) [01:02<01:55, 1.93 file/s]``.
- ``ARIA_PROGRESS=0`` (or ``TQDM_DISABLE=1``, or ``enabled=False``: ``--no-progress``)
  silences both; ``ARIA_PROGRESS=1`` draws the bar even when stderr is not a terminal.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from typing import Any, TextIO, TypeVar

T = TypeVar("T")

__all__ = ["LINE_INTERVAL", "progress", "progress_enabled", "progress_mode"]

#: Seconds between two progress lines when stderr is not a terminal.
LINE_INTERVAL = 20.0
_INTERVAL_ENV = "ARIA_PROGRESS_INTERVAL"
#: What a line shows (with and without a known total).
_LINE_FORMAT = ("{desc}: {percentage:3.0f}% ({n_fmt}/{total_fmt} {unit}) "
                "[{elapsed}<{remaining}, {rate_fmt}{postfix}]")
_LINE_FORMAT_NO_TOTAL = "{desc}: {n_fmt} {unit} [{elapsed}, {rate_fmt}{postfix}]"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _disabled_by_env() -> bool:
    return os.environ.get("ARIA_PROGRESS", "").strip() == "0" or bool(
        os.environ.get("TQDM_DISABLE"))


def progress_enabled(enabled: bool | None = None) -> bool:
    """Resolve whether to draw bars: explicit ``enabled`` wins, then the environment, then TTY."""
    if enabled is not None:
        return enabled
    if _disabled_by_env():
        return False
    if os.environ.get("ARIA_PROGRESS", "").strip() == "1":
        return True
    return sys.stderr.isatty()


def progress_mode(enabled: bool | None = None) -> str | None:
    """``"bar"``, ``"lines"`` or ``None`` (silent), by the rules of the module docstring.

    Parameters
    ----------
    enabled : bool, optional
        ``False``: silent; ``True``: a bar; ``None``: the environment, then whether stderr is a
        terminal (a bar) or not (lines).
    """
    if enabled is False or (enabled is None and _disabled_by_env()):
        return None
    if progress_enabled(enabled):
        return "bar"
    return "lines"


def _line_interval() -> float:
    try:
        value = float(os.environ.get(_INTERVAL_ENV, "") or LINE_INTERVAL)
    except ValueError:
        return LINE_INTERVAL
    return value if value >= 0 else LINE_INTERVAL


class _Lines:
    """A file for tqdm that turns its in-place redraws into whole lines."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        for part in _ANSI.sub("", text).replace("\r", "\n").split("\n"):
            if part.strip():
                self.stream.write(part.rstrip() + "\n")
        return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except (OSError, ValueError):
            pass


def progress(
    iterable: Iterable[T] | None = None,
    *,
    total: int | float | None = None,
    desc: str | None = None,
    unit: str = "it",
    enabled: bool | None = None,
    **kwargs: Any,
) -> Any:
    """Wrap ``iterable`` in progress on stderr: a bar, plain lines, or nothing (module docstring).

    Parameters
    ----------
    iterable : iterable, optional
        What to iterate (or ``None`` and call ``update``).
    total : int or float, optional
        The number of steps (``len(iterable)`` when it has one).
    desc : str, optional
        What the work is (starts each line).
    unit : str
        What a step is.
    enabled : bool, optional
        See :func:`progress_mode`.
    **kwargs : Any
        Passed on to tqdm.
    """
    mode = progress_mode(enabled)
    if mode is None:  # silent: plain tqdm (tqdm.auto loads asyncio and the notebook check)
        from tqdm import tqdm as silent_tqdm

        return silent_tqdm(iterable, total=total, desc=desc, unit=unit, disable=True,
                           file=sys.stderr, **kwargs)
    if mode == "bar":
        from tqdm.auto import tqdm

        # disable=False: the environment was read above (tqdm reads TQDM_DISABLE once, when
        # first imported, which may be before a caller changed it)
        return tqdm(iterable, total=total, desc=desc, unit=unit, dynamic_ncols=True,
                    file=sys.stderr, disable=False, **kwargs)
    from tqdm import tqdm as plain_tqdm  # never the notebook widget for lines

    interval = _line_interval()
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    for key in ("mininterval", "maxinterval", "miniters", "delay", "dynamic_ncols", "ncols",
                "ascii"):
        kwargs.pop(key, None)
    fmt = _LINE_FORMAT if total else _LINE_FORMAT_NO_TOTAL
    return plain_tqdm(iterable, total=total, desc=desc or "progress", unit=unit,
                      file=_Lines(sys.stderr), mininterval=interval,
                      maxinterval=max(interval, 1.0), miniters=1, delay=interval,
                      ascii=True, ncols=200,
                      bar_format=fmt.replace("{unit}", unit), **kwargs)
