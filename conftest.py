"""Shared by the library's and the experiments' tests: a seeded ``rng``, a quiet environment (no
progress bars) and a private cache folder."""

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


@pytest.fixture(scope="session", autouse=True)
def _private_cache_dir(tmp_path_factory):
    """Keep caches (music21 work conversions, ...) out of the user's home during tests."""
    old = os.environ.get("ARIA_CACHE_DIR")
    os.environ["ARIA_CACHE_DIR"] = str(tmp_path_factory.mktemp("aria-cache"))
    yield
    if old is None:
        os.environ.pop("ARIA_CACHE_DIR", None)
    else:
        os.environ["ARIA_CACHE_DIR"] = old
