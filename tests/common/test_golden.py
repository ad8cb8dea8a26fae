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
    "stem", ["diagnostics", "s_track", "homogeneity", "alignment", "alignment_planted"]
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
