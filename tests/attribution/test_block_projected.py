"""LoGra / FactGraSS: dattri's hook machinery against exact Linear-layer gradients."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _lm import per_sample_grads  # noqa: E402

from aria_tda.attribution import (  # noqa: E402
    FactGraSSArgs,
    LoGraArgs,
    factgrass,
    logra,
)
from aria_tda.errors import ParameterError  # noqa: E402


def _linear_grads(model, state, windows, kind):
    """Per-sample gradients restricted to the nn.Linear weights and biases (what dattri hooks)."""
    full = per_sample_grads(model, state, windows, kind)
    keep, start = [], 0
    linear = {
        f"{n}.{p}"
        for n, m in model.named_modules()
        if isinstance(m, torch.nn.Linear)
        for p in ("weight", "bias")
    }
    for name, p in model.named_parameters():
        if name in linear:
            keep.append(full[:, start : start + p.numel()])
        start += p.numel()
    return torch.cat(keep, dim=1)


@pytest.mark.parametrize("batch_size", [5, 12])
def test_block_projected_identity_equals_linear_layer_gradient_dot(tiny, batch_size):
    """With identity compressors and no Hessian, dattri's hook machinery must give exact
    per-sample Linear-layer gradient dot products: checks the wrapper, the batch-mean loss
    (dattri rescales by the batch size) and the query target."""
    from aria_tda.attribution.block_projected import _block_projected

    ident = {"device": "cpu", "proj_dim": -1, "proj_max_batch_size": 64, "proj_type": "identity"}
    scores, _ = _block_projected(
        "test",
        tiny["model"],
        tiny["final"],
        torch.as_tensor(tiny["train"]),
        torch.as_tensor(tiny["queries"]),
        sparsifier_kwargs=ident,
        projector_kwargs=ident,
        hessian="Identity",
        damping=None,
        loss="sequence",
        target="last_token",
        batch_size=batch_size,
        layer_names=None,
        num_threads=1,
        progress_bar=False,
    )
    gs = _linear_grads(tiny["model"], tiny["final"], tiny["train"], "sequence")
    gq = _linear_grads(tiny["model"], tiny["final"], tiny["queries"], "last_token")
    np.testing.assert_allclose(scores.numpy(), (gs @ gq.T).numpy(), rtol=1e-3, atol=1e-5)


def test_logra_and_factgrass_validate_square_dims(tiny):
    args = (tiny["model"], tiny["final"], tiny["train"], tiny["queries"])
    with pytest.raises(ParameterError, match="perfect square"):
        logra(*args, args=LoGraArgs(proj_dim=15))
    with pytest.raises(ParameterError, match="perfect square"):
        factgrass(*args, args=FactGraSSArgs(proj_dim=16, blowup=2))


def test_logra_is_deterministic_and_seeded(tiny):
    args = (tiny["model"], tiny["final"], tiny["train"], tiny["queries"])
    a = logra(*args, args=LoGraArgs(proj_dim=16, seed=1, batch_size=6)).scores
    b = logra(*args, args=LoGraArgs(proj_dim=16, seed=1, batch_size=6)).scores
    c = logra(*args, args=LoGraArgs(proj_dim=16, seed=2, batch_size=6)).scores
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
