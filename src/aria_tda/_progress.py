"""Progress bars for long work (tqdm), silenced by ``ARIA_PROGRESS=0`` or ``TQDM_DISABLE=1``."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["progress", "progress_enabled"]


def progress_enabled(enabled: bool | None = None) -> bool:
    """Resolve whether to draw bars: explicit ``enabled`` wins, then the environment, then TTY."""
    if enabled is not None:
        return enabled
    if os.environ.get("ARIA_PROGRESS", "").strip() == "0" or os.environ.get("TQDM_DISABLE"):
        return False
    if os.environ.get("ARIA_PROGRESS", "").strip() == "1":
        return True
    return sys.stderr.isatty()


def progress(
    iterable: Iterable[T] | None = None,
    *,
    total: int | float | None = None,
    desc: str | None = None,
    unit: str = "it",
    enabled: bool | None = None,
    **kwargs: Any,
) -> Any:
    """Wrap ``iterable`` in a tqdm bar on stderr (or return a no-op bar when disabled)."""
    from tqdm.auto import tqdm

    return tqdm(
        iterable,
        total=total,
        desc=desc,
        unit=unit,
        disable=not progress_enabled(enabled),
        dynamic_ncols=True,
        file=sys.stderr,
        **kwargs,
    )
