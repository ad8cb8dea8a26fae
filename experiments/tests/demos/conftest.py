"""A tiny real corpus (a few Bach chorales via music21), built once per test session; and the
attribution tests' tiny token model, for the experiments built on attribution (the sweep)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory):
    pytest.importorskip("music21")
    from aria_tda_experiments.corpus import build_corpus

    root = tmp_path_factory.mktemp("bench")
    return build_corpus(root / "corpus", work_cache=root / "works", max_works=6, window=32,
                        test_fraction=0.34, seed=0, progress_bar=False)


@pytest.fixture(scope="session")
def tiny():
    """Windows, a trained tiny token model, its trajectory and a 2-model ensemble (the fixture of
    tests/attribution/conftest.py, built from the same code in tests/attribution/_lm.py)."""
    pytest.importorskip("torch")
    pytest.importorskip("dattri")
    path = Path(__file__).resolve().parents[3] / "tests" / "attribution" / "_lm.py"
    spec = importlib.util.spec_from_file_location("_aria_attribution_test_helpers", path)
    assert spec is not None and spec.loader is not None
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    return helpers.make_tiny()
