"""Fixtures of the ``aria-tda embed`` tests: the toy encoder registered, a checkpoint, a corpus."""

from __future__ import annotations

import _toy_encoder as toy
import pytest


@pytest.fixture
def toy_encoder(monkeypatch, tmp_path):
    """Register the toy encoder as ``"toy"``; returns its checkpoint path."""
    from aria_tda.embed.encoders.registry import ENCODERS

    monkeypatch.setitem(ENCODERS, "toy", toy.SPEC)
    return toy.save_checkpoint(tmp_path / "toy.npy")


@pytest.fixture
def corpus(tmp_path):
    """Four tone tracks and one corrupt file under ``tmp_path/audio``."""
    return toy.make_corpus(tmp_path / "audio")
