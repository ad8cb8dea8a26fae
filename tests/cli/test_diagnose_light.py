"""``aria-tda diagnose`` of a small file loads only what a diagnosis uses.

A structural guard, not a timing: in a fresh interpreter the command runs on a small ``.npy``
and must leave none of the heavy libraries it never needs in ``sys.modules`` (numba and its
compiler, the table and array-store libraries, torch, Dask, plotting, scikit-learn, SciPy's
statistics). NumPy and SciPy's linear algebra (the Gram's eigenvalues) are what it uses.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

#: Top-level packages (and submodules) a small diagnosis must not import.
HEAVY = (
    "numba", "llvmlite", "pandas", "pyarrow", "zarr", "torch", "dask", "distributed",
    "matplotlib", "sklearn", "scipy.stats", "scipy.sparse", "scipy.special", "safetensors",
    "h5py", "asyncio", "sqlite3",
)

_CHILD = """
import json, sys
from aria_tda.cli import main
status = main(["diagnose", sys.argv[1], "--json"])
sys.stdout.flush()
print("\\nMODULES " + json.dumps(sorted(sys.modules)))
sys.exit(status)
"""


def _modules_after(*argv: str) -> tuple[dict, set[str]]:
    proc = subprocess.run([sys.executable, "-c", _CHILD, *argv], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out, _, mods = proc.stdout.rpartition("\nMODULES ")
    return json.loads(out), set(json.loads(mods))


def test_small_diagnosis_leaves_heavy_libraries_unloaded(tmp_path, rng):
    path = tmp_path / "small.npy"
    np.save(path, rng.standard_normal((500, 20)).astype(np.float32))
    rec, loaded = _modules_after(str(path))
    assert rec["n_train"] == 500 and rec["verdict"]["label"]
    assert rec["concentration"] is not None  # the top-K measure ran, without numba
    heavy = sorted(m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert not heavy, f"a small diagnosis imported {heavy}"


def test_aria_tda_and_its_scores_package_import_nothing_heavy():
    code = ("import json, sys, aria_tda, aria_tda.scores, aria_tda.diagnostics; "
            "print(json.dumps(sorted(sys.modules)))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=True)
    loaded = set(json.loads(proc.stdout))
    heavy = sorted(m for m in loaded
                   if any(m == h or m.startswith(h + ".") for h in (*HEAVY, "scipy", "tqdm")))
    assert not heavy, f"importing the packages loaded {heavy}"
    assert "aria_tda.scores.aggregation" not in loaded  # loaded on first use only
