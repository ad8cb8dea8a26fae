"""Shared by the library's and the experiments' tests: a seeded ``rng``, a quiet environment (no
progress bars) and a private cache folder."""

from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np
import pytest

os.environ.setdefault("ARIA_PROGRESS", "0")
os.environ.setdefault("TQDM_DISABLE", "1")

_OLD_CACHE_DIR: list[str | None] = []


def pytest_configure(config):
    """Keep caches (music21 work conversions, numba's compiled kernels, ...) out of the user's
    home during tests: one private ``ARIA_CACHE_DIR`` for the whole session, set before any test
    module is imported.

    It must be set this early: importing :mod:`aria_tda.features.audio` (which test modules do
    at collection) points ``NUMBA_CACHE_DIR`` at ``$ARIA_CACHE_DIR/numba/...``. Set later (a
    session fixture), this process cached its kernels in ``~/.cache/aria`` while the commands
    the tests start compiled librosa's kernels again into the private folder.
    """
    _OLD_CACHE_DIR.append(os.environ.get("ARIA_CACHE_DIR"))
    os.environ["ARIA_CACHE_DIR"] = tempfile.mkdtemp(prefix="aria-test-cache-")


def pytest_unconfigure(config):
    if not _OLD_CACHE_DIR:
        return
    old = _OLD_CACHE_DIR.pop()
    path = os.environ.get("ARIA_CACHE_DIR")
    if old is None:
        os.environ.pop("ARIA_CACHE_DIR", None)
    else:
        os.environ["ARIA_CACHE_DIR"] = old
    if path:
        shutil.rmtree(path, ignore_errors=True)


def pytest_collection_modifyitems(session, config, items):
    """Files that hold ``slow`` tests first, so that with ``pytest -n`` (one file per worker at
    a time) the longest files start at once instead of finishing last on one worker while the
    others idle. Within a file, and among the other files, the order stays as collected."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded generator; tests must not depend on global random state."""
    return np.random.default_rng(20261125)
