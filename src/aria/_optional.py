"""Lazy imports of optional heavy dependencies with an error that names the extra."""

from __future__ import annotations

import importlib
from types import ModuleType

from aria.errors import MissingDependencyError

__all__ = ["require"]


def require(module: str, extra: str, *, purpose: str | None = None) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming ``pip install aria-tda[extra]``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        why = f" (needed for {purpose})" if purpose else ""
        raise MissingDependencyError(
            f"{module} is not installed{why}: pip install 'aria-tda[{extra}]' ({exc})"
        ) from exc
