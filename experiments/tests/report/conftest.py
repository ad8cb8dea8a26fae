"""Fixtures of the tests of the experiments' report sections: results folders with ARIA's own
tables (the library's fixture) and the experiments' (``_experiment_tables.py``); ``rng`` is
the repository's root fixture."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _experiment_tables import build_results, write_planted_aspects


@pytest.fixture
def make_results(tmp_path, rng):
    """Factory: ``make_results(name='results', **kw) -> (path, frames)``, the experiments'
    ``planted`` and ``sensitivity`` tables included."""

    def make(name: str = "results", **kw: Any) -> tuple[Path, dict[str, Any]]:
        root = tmp_path / name
        return root, build_results(root, rng, **kw)

    return make


@pytest.fixture
def results(make_results):
    """A complete results folder: ``(path, frames)``."""
    return make_results()


@pytest.fixture
def planted(make_results, rng):
    """A full results folder plus the six planted-aspect tables: ``(path, frames)``."""
    path, _ = make_results()
    return path, write_planted_aspects(path, rng)
