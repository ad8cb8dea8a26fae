"""The attribution tests' tiny token model, for the experiments built on attribution (the sweep).

(The tiny real corpus, ``tiny_corpus``, is in ``experiments/tests/conftest.py``: the planted
experiment's tests use it too.)"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


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
