"""The installed version of ARIA (foundation layer: import this, not the root package)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("aria-tda")
except PackageNotFoundError:  # pragma: no cover - running from a bare source tree
    __version__ = "0+unknown"

__all__ = ["__version__"]
