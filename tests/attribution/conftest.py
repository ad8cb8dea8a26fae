"""Fixtures of the attribution tests (the model and helpers are in ``_lm.py``)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("dattri")

from _lm import make_tiny


@pytest.fixture(scope="session")
def tiny():
    """Windows, a trained model, its trajectory and a 2-model ensemble."""
    return make_tiny()
