"""The per-sample losses live in aria_tda.attribution; the experiments' model re-exports them."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("torch")

from aria_tda.attribution import losses
from aria_tda.errors import ParameterError


def test_bench_model_reexports_the_same_functions():
    from aria_tda_experiments import model

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
        losses.sequence_loss(lambda t: logits, torch.zeros(2, 4, dtype=torch.long), reduction="max")


def test_attribution_does_not_import_the_benchmark():
    """Arrows point one way: aria_tda.attribution (and its method modules) never load the
    experiments package."""
    code = (
        "import sys, aria_tda.attribution, aria_tda.attribution.trak_ensemble\n"
        "import aria_tda.attribution.registry\n"
        "bad = sorted(m for m in sys.modules if m.startswith('aria_tda_experiments'))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_continuation_loss_equals_a_hand_computation():
    import math

    import torch

    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 7, 5, generator=gen, dtype=torch.float64)
    tokens = torch.randint(0, 5, (3, 7), generator=gen)
    model = lambda t: logits  # noqa: E731
    start = 4
    hand = torch.zeros(3, dtype=torch.float64)
    for b in range(3):
        terms = []
        for t in range(start, 7):  # token t is predicted by the logits at t - 1
            z = logits[b, t - 1]
            terms.append(-(z[tokens[b, t]] - math.log(float(torch.exp(z).sum()))))
        hand[b] = sum(terms) / len(terms)
    got = losses.continuation_loss(model, tokens, start=start)
    torch.testing.assert_close(got, hand)
    fn = losses.ContinuationLoss(start)
    torch.testing.assert_close(fn(model, tokens), hand)
    torch.testing.assert_close(fn(model, tokens, reduction="mean"), hand.mean())
    # start=1 is the sequence loss; the last position only is the last-token loss
    torch.testing.assert_close(
        losses.ContinuationLoss(1)(model, tokens), losses.sequence_loss(model, tokens)
    )
    causal = lambda t: logits[: t.shape[0], : t.shape[1]]  # noqa: E731
    torch.testing.assert_close(
        losses.ContinuationLoss(6)(model, tokens), losses.last_token_loss(causal, tokens)
    )


def test_continuation_loss_as_attribution_loss():
    import pickle

    from aria_tda.attribution.task import check_loss, loss_name

    fn = losses.ContinuationLoss(3)
    assert check_loss("loss", fn) is fn and loss_name(fn) == "continuation(start=3)"
    assert fn == losses.ContinuationLoss(3) and hash(fn) == hash(losses.ContinuationLoss(3))
    back = pickle.loads(pickle.dumps(fn))
    assert back == fn and loss_name(back) == "continuation(start=3)"
    import torch

    tokens = torch.zeros(2, 3, dtype=torch.long)
    with pytest.raises(ParameterError, match="start"):
        losses.continuation_loss(lambda t: torch.zeros(2, 3, 4), tokens, start=3)
    with pytest.raises(ParameterError, match="start"):
        losses.ContinuationLoss(0)
