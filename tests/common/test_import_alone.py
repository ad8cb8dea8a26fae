"""Every module of the library imports on its own, first, in a fresh process: no import circle
that only shows when a module is the first of its package to be imported (the layer test
counts each ``import`` line, not the package ``__init__`` a submodule's import runs first).

Found by hand once: ``import aria_tda.media.query_evidence`` first ran ``aria_tda.report``'s
``__init__``, whose page imported the half-initialised ``query_evidence`` back.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

_SCRIPT = r"""
import importlib, pkgutil, sys, traceback
import aria_tda
names = sorted(m.name for m in pkgutil.walk_packages(aria_tda.__path__, "aria_tda.")
               if not m.name.endswith("__main__"))  # (runs the command line)
bad = []
for name in names:
    for mod in [m for m in sys.modules if m == "aria_tda" or m.startswith("aria_tda.")]:
        del sys.modules[mod]
    try:
        importlib.import_module(name)
    except ImportError as exc:
        if "circular import" in str(exc) or "partially initialized" in str(exc):
            bad.append(f"{name}: {exc}")
    except Exception:  # an optional dependency missing or a runtime guard: not a circle
        pass
print("\n".join(bad))
print(f"checked {len(names)}")
"""


def test_every_module_imports_first_without_a_circle():
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                         timeout=600, check=True).stdout.strip().splitlines()
    assert out[-1].startswith("checked ") and int(out[-1].split()[1]) > 150, out[-1:]
    assert out[:-1] == [], "\n".join(out[:-1])
