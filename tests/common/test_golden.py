"""Golden fixtures: the numbers of a fixed small study must not move.

``scripts/make_golden.py`` wrote ``tests/data/golden/*.json`` from a seeded score matrix and
feature store (diagnostics, S_track, homogeneity summary original + residual, alignment); this
test recomputes them with the same code and compares to 1e-10. If it fails after a refactor,
the refactor changed behaviour. Regenerate only when a change of numbers is intended.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location(
        "make_golden", ROOT / "scripts" / "make_golden.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def fresh():
    gen = _generator()
    return gen, json.loads(json.dumps(gen.compute()))


@pytest.mark.parametrize(
    "stem",
    ["diagnostics", "diagnostics_scaled", "s_track", "homogeneity", "alignment",
     "alignment_planted"],
)
def test_golden_fixture_unchanged(fresh, stem):
    gen, content = fresh
    stored = json.loads((ROOT / "tests" / "data" / "golden" / f"{stem}.json").read_text())
    errs = gen._compare(stored, content[stem], stem, 1e-10)
    assert not errs, "golden numbers moved:\n" + "\n".join(errs[:20])


def test_golden_comparison_detects_a_change(fresh):
    gen, content = fresh
    moved = json.loads(json.dumps(content["diagnostics"]))
    moved["kappa"] = moved["kappa"] * (1 + 1e-8)
    assert gen._compare(content["diagnostics"], moved, "diagnostics", 1e-10)


def test_tiny_float32_scores_give_the_golden_diagnostics(fresh):
    """x 1e-21 as float32 (squares would underflow) and columns 1e20 apart: same numbers."""
    _, content = fresh
    ref = content["diagnostics"]
    for name, d in content["diagnostics_scaled"].items():
        for key in ("kappa", "p", "constant_columns"):
            assert d[key] == pytest.approx(ref[key], rel=1e-5), (name, key)
    whole = content["diagnostics_scaled"]["x1e-21"]
    for key in ("r1", "r2_5", "v1_constancy"):
        assert whole[key] == pytest.approx(ref[key], rel=1e-5), key
