"""Lazy imports of optional heavy dependencies with an error that names the extra."""

from __future__ import annotations

import importlib
from types import ModuleType

from aria_tda.errors import MissingDependencyError

__all__ = ["require"]


def require(module: str, extra: str, *, purpose: str | None = None) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming the extra to install.

    Parameters
    ----------
    module : str
        Dotted module name, e.g. ``"zarr"``.
    extra : str
        The ``aria-tda`` extra that provides it; the error says ``pip install 'aria-tda[extra]'``.
    purpose : str, optional
        What the module is needed for, added to the message.

    Returns
    -------
    types.ModuleType
        The imported module.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        why = f" (needed for {purpose})" if purpose else ""
        raise MissingDependencyError(
            f"{module} is not installed{why}: pip install 'aria-tda[{extra}]' ({exc})"
        ) from exc
