"""The per-sample losses live in aria.attribution; aria.bench.model re-exports them."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("torch")

from aria.attribution import losses
from aria.errors import ParameterError


def test_bench_model_reexports_the_same_functions():
    from aria.bench import model

    for name in losses.__all__:
        assert getattr(model, name) is getattr(losses, name), name


def test_loss_fn_names_and_errors():
    assert losses.loss_fn("sequence") is losses.sequence_loss
    assert losses.loss_fn("last_token") is losses.last_token_loss
    with pytest.raises(ParameterError, match="loss"):
        losses.loss_fn("bogus")
    import torch

    logits = torch.zeros(2, 4, 5)
    with pytest.raises(ParameterError, match="reduction"):
        losses.sequence_loss(lambda t: logits, torch.zeros(2, 4, dtype=torch.long),
                             reduction="max")


def test_attribution_does_not_import_the_benchmark():
    """Arrows point one way: aria.attribution (and its method modules) never load aria.bench."""
    code = (
        "import sys, aria.attribution, aria.attribution.methods, aria.attribution.registry\n"
        "bad = sorted(m for m in sys.modules if m.startswith('aria.bench'))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
