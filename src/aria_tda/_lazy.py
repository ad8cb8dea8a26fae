"""Lazy re-exports of a package: a name loads its module on first use (PEP 562).

A package that re-exports names of heavy modules (``aria_tda``, ``aria_tda.scores``,
``aria_tda.embed``) keeps a table name -> module and takes its module ``__getattr__`` and
``__dir__`` from :func:`lazy_exports`, so importing the package loads none of them.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    module: str, table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose ``table`` names load lazily.

    Parameters
    ----------
    module : str
        The package's ``__name__`` (it must be importing: its module object exists).
    table : mapping of str to str
        Exported name -> the module that defines it. A name, once loaded, is stored in the
        package, so the next access does not come back here.

    Examples
    --------
    >>> __getattr__, __dir__ = lazy_exports(__name__, {"diagnose": "aria_tda.diagnostics"})
    """
    package = sys.modules[module]

    def __getattr__(name: str) -> Any:
        if name in table:
            value = getattr(importlib.import_module(table[name]), name)
            setattr(package, name, value)
            return value
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(package)) | set(table))

    return __getattr__, __dir__
