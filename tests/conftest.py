"""Shared fixtures: a seeded ``rng`` and a quiet environment (no progress bars)."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("ARIA_PROGRESS", "0")
os.environ.setdefault("TQDM_DISABLE", "1")


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded generator; tests must not depend on global random state."""
    return np.random.default_rng(20261125)
