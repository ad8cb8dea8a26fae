"""TRAK against its closed form and against plain dattri on a tiny model."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _lm import per_sample_grads  # noqa: E402

from aria_tda.attribution import (  # noqa: E402
    GradientArgs,
    TrakArgs,
    gradcos,
    trak,
)
from aria_tda.errors import ParameterError  # noqa: E402


def _n_params(model):
    return sum(p.numel() for p in model.parameters())


def test_trak_without_projection_matches_closed_form(tiny):
    lam = 0.05
    model = tiny["model"]
    scale = math.sqrt(_n_params(model))
    kernel_avg, q_avg = 0, 0
    for state in tiny["ensemble"]:
        phi = per_sample_grads(model, state, tiny["train"], "sequence", margin=True) / scale
        psi = per_sample_grads(model, state, tiny["queries"], "last_token", margin=True) / scale
        a = phi.T @ phi + lam * torch.eye(phi.shape[1], dtype=phi.dtype)
        kernel_avg = kernel_avg + psi @ torch.linalg.solve(a, phi.T)
        net = copy.deepcopy(model)
        net.load_state_dict(state)
        from aria_tda_experiments.model import sequence_loss

        with torch.no_grad():
            p = torch.exp(-sequence_loss(net, torch.as_tensor(tiny["train"]))).double()
        q_avg = q_avg + (1 - p)
    e = len(tiny["ensemble"])
    want = ((kernel_avg / e) * (q_avg / e)[None, :]).T
    res = trak(
        model,
        tiny["ensemble"],
        tiny["train"],
        tiny["queries"],
        args=TrakArgs(proj_dim=None, lam=lam, batch_size=5),
    )
    np.testing.assert_allclose(
        res.scores, want.numpy(), rtol=2e-3, atol=1e-4 * np.abs(want.numpy()).max()
    )


@pytest.mark.parametrize(
    "kw",
    [
        {"proj_dim": 8, "lam": 0.0},
        {"proj_dim": 150, "lam": 0.01},
        {"proj_dim": 150, "lam": 0.01, "max_projection_bytes": 0},
        {"proj_dim": 16, "lam": 0.1, "proj_type": "rademacher"},
    ],
)
def test_trak_aria_engine_equals_plain_dattri(tiny, kw):
    args = (tiny["model"], tiny["ensemble"], tiny["train"], tiny["queries"])
    fast = trak(*args, args=TrakArgs(batch_size=5, engine="aria", **kw))
    ref = trak(
        *args,
        args=TrakArgs(
            batch_size=5,
            engine="dattri",
            **{k: v for k, v in kw.items() if k != "max_projection_bytes"},
        ),
    )
    np.testing.assert_allclose(
        fast.scores, ref.scores, rtol=1e-4, atol=1e-5 * np.abs(ref.scores).max()
    )


def test_trak_rejects_singular_kernel(tiny):
    with pytest.raises(ParameterError, match="lam"):
        trak(
            tiny["model"],
            tiny["ensemble"],
            tiny["train"],
            tiny["queries"],
            args=TrakArgs(proj_dim=64, lam=0.0),
        )


def test_projection_defaults_of_dattri_are_not_mutated(tiny):
    from aria_tda.attribution.task import import_dattri

    dt_tracin = import_dattri("dattri.algorithm.tracin")
    dt_trak = import_dattri("dattri.algorithm.trak")

    before = (dict(dt_trak.DEFAULT_PROJECTOR_KWARGS), dict(dt_tracin.DEFAULT_PROJECTOR_KWARGS))
    trak(
        tiny["model"],
        tiny["ensemble"],
        tiny["train"],
        tiny["queries"],
        args=TrakArgs(proj_dim=8, engine="dattri", batch_size=6),
    )
    gradcos(
        tiny["model"],
        tiny["final"],
        tiny["train"],
        tiny["queries"],
        args=GradientArgs(proj_dim=8, engine="dattri", batch_size=6),
    )
    assert (dt_trak.DEFAULT_PROJECTOR_KWARGS, dt_tracin.DEFAULT_PROJECTOR_KWARGS) == before
