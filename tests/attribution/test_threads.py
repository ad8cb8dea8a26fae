"""Pinning torch's thread count for a block, and restoring it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from aria_tda.attribution.threads import pinned_threads, torch_threads  # noqa: E402
from aria_tda.errors import ParameterError  # noqa: E402


def test_threads_are_pinned_and_restored():
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pinned_threads(None):
        assert torch.get_num_threads() == before
    with pytest.raises(ParameterError, match="num_threads"), pinned_threads(0):
        pass


def test_bench_train_reexports_torch_threads():
    from aria_tda_experiments import train

    assert train.torch_threads is torch_threads
