"""The dattri task: a private eval-mode copy of the caller's model, its buffers and mode."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _lm import per_sample_grads  # noqa: E402

from aria_tda.attribution import (  # noqa: E402
    GradientArgs,
    LoGraArgs,
    TrakArgs,
    graddot,
    logra,
    trak,
)


def test_caller_model_is_not_modified(tiny):
    model = tiny["model"]
    before = {k: v.clone() for k, v in model.state_dict().items()}
    forward_before = {n: m.forward for n, m in model.named_modules()}
    trak(model, tiny["ensemble"], tiny["train"], tiny["queries"],
         args=TrakArgs(proj_dim=8, batch_size=6))
    logra(model, tiny["ensemble"][1], tiny["train"], tiny["queries"],
          args=LoGraArgs(proj_dim=16, batch_size=6))
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k])
    assert {n: m.forward for n, m in model.named_modules()} == forward_before


class _BufferedLM(torch.nn.Module):
    """TinyLM with a buffer and dropout: attribution takes both from the checkpoint / eval mode."""

    def __init__(self):
        super().__init__()
        from _lm import make_model

        self.body = make_model(0)
        self.drop = torch.nn.Dropout(0.5)
        self.register_buffer("temperature", torch.tensor(1.0))

    def forward(self, tokens):
        return self.drop(self.body(tokens)) / self.temperature


def test_checkpoint_buffers_and_eval_mode_are_used(tiny):
    caller = _BufferedLM().train()  # dropout active, temperature 1 in the caller's module
    state = {k: v.clone() for k, v in caller.state_dict().items()}
    state["temperature"] = torch.tensor(2.5)
    exact = GradientArgs(proj_dim=None, batch_size=6)
    a = graddot(caller, state, tiny["train"], tiny["queries"], args=exact).scores
    b = graddot(caller, state, tiny["train"], tiny["queries"], args=exact).scores
    np.testing.assert_array_equal(a, b)  # no dropout noise
    want = (
        per_sample_grads(caller, state, tiny["train"], "sequence")
        @ per_sample_grads(caller, state, tiny["queries"], "last_token").T
    )
    np.testing.assert_allclose(a, want.numpy(), rtol=2e-4, atol=1e-6)
    assert caller.training and float(caller.temperature) == 1.0
    t = trak(caller, [state], tiny["train"], tiny["queries"],
             args=TrakArgs(proj_dim=8, batch_size=6)).scores
    assert np.isfinite(t).all()
