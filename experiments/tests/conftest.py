"""Fixtures shared by the experiments' tests: a tiny real corpus (a few Bach chorales via
music21), built once per test session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory):
    pytest.importorskip("music21")
    from aria_tda_experiments.corpus import build_corpus

    root = tmp_path_factory.mktemp("bench")
    return build_corpus(root / "corpus", work_cache=root / "works", max_works=6, window=32,
                        test_fraction=0.34, seed=0, progress_bar=False)
