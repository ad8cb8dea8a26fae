"""The installed version of ARIA (foundation layer: import this, not the root package)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("aria-tda")
except PackageNotFoundError:  # pragma: no cover - running from a bare source tree
    __version__ = "0+unknown"

#: How to cite the method ARIA implements (printed in every dossier and report).
CITATION = ("Changheon Han, Ashkan Panahi and Kıvanç Tatar. ARIA: A Diagnostic Framework for "
            "Music Training Data Attribution. Chalmers University of Technology and University "
            "of Gothenburg.")

__all__ = ["CITATION", "__version__"]
