"""TracIn, GradDot, GradCos against hand computations and against plain dattri."""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _lm import per_sample_grads, project  # noqa: E402

from aria_tda.attribution import (  # noqa: E402
    GradientArgs,
    grad_similarities,
    gradcos,
    graddot,
    run_method,
    tracin,
)


@pytest.mark.parametrize("engine", ["aria", "dattri"])
def test_graddot_equals_hand_computed_gradient_dot_products(tiny, engine):
    g_train = per_sample_grads(tiny["model"], tiny["final"], tiny["train"], "sequence")
    g_query = per_sample_grads(tiny["model"], tiny["final"], tiny["queries"], "last_token")
    res = graddot(
        tiny["model"],
        tiny["final"],
        tiny["train"],
        tiny["queries"],
        args=GradientArgs(proj_dim=None, batch_size=5, engine=engine),
    )
    np.testing.assert_allclose(res.scores, (g_train @ g_query.T).numpy(), rtol=2e-4, atol=1e-6)


def test_graddot_with_projection_equals_hand_projection(tiny):
    g_train = per_sample_grads(tiny["model"], tiny["final"], tiny["train"], "sequence")
    g_query = per_sample_grads(tiny["model"], tiny["final"], tiny["queries"], "last_token")
    k = 150  # two of dattri's 100-column blocks
    want = project(g_train, k, 3, 0) @ project(g_query, k, 3, 0).T
    res = graddot(
        tiny["model"],
        tiny["final"],
        tiny["train"],
        tiny["queries"],
        args=GradientArgs(proj_dim=k, seed=3, batch_size=5),
    )
    np.testing.assert_allclose(res.scores, want.numpy(), rtol=2e-4, atol=1e-5)


def test_gradcos_is_bounded_cosine(tiny):
    res = gradcos(
        tiny["model"],
        tiny["final"],
        tiny["train"],
        tiny["queries"],
        args=GradientArgs(proj_dim=64, batch_size=5),
    )
    assert np.abs(res.scores).max() <= 1.0 + 1e-6
    g_train = per_sample_grads(tiny["model"], tiny["final"], tiny["train"], "sequence")
    g_query = per_sample_grads(tiny["model"], tiny["final"], tiny["queries"], "last_token")
    exact = gradcos(
        tiny["model"],
        tiny["final"],
        tiny["train"],
        tiny["queries"],
        args=GradientArgs(proj_dim=None, batch_size=5),
    )
    cos = torch.nn.functional.normalize(g_train) @ torch.nn.functional.normalize(g_query).T
    np.testing.assert_allclose(exact.scores, cos.numpy(), atol=1e-5)


def test_tracin_is_learning_rate_weighted_sum_of_graddots(tiny):
    lrs = [0.5, 0.2, 0.05]
    res = tracin(
        tiny["model"],
        tiny["trajectory"],
        tiny["train"],
        tiny["queries"],
        learning_rates=lrs,
        args=GradientArgs(proj_dim=None, batch_size=5),
    )
    want = sum(
        lr
        * graddot(
            tiny["model"],
            c,
            tiny["train"],
            tiny["queries"],
            args=GradientArgs(proj_dim=None, batch_size=5),
        ).scores
        for lr, c in zip(lrs, tiny["trajectory"], strict=True)
    )
    np.testing.assert_allclose(res.scores, want, rtol=1e-4, atol=1e-6)


def test_tracin_projects_each_checkpoint_with_its_own_matrix(tiny):
    lrs = [0.5, 0.2, 0.05]
    k = 40
    want = 0
    for c, (lr, ck) in enumerate(zip(lrs, tiny["trajectory"], strict=True)):
        gs = per_sample_grads(tiny["model"], ck, tiny["train"], "sequence")
        gq = per_sample_grads(tiny["model"], ck, tiny["queries"], "last_token")
        want = want + lr * project(gs, k, 0, c) @ project(gq, k, 0, c).T
    res = tracin(
        tiny["model"],
        tiny["trajectory"],
        tiny["train"],
        tiny["queries"],
        learning_rates=lrs,
        args=GradientArgs(proj_dim=k, batch_size=5),
    )
    np.testing.assert_allclose(res.scores, want.numpy(), rtol=2e-4, atol=1e-6)


def test_graddot_sign_matches_one_sgd_step(tiny):
    """Higher score = training on s lowers the query's loss: Δlog p(q) ≈ η g(s)·g(q)."""
    from aria_tda_experiments.model import last_token_loss, sequence_loss

    res = graddot(
        tiny["model"],
        tiny["final"],
        tiny["train"],
        tiny["queries"],
        args=GradientArgs(proj_dim=None, batch_size=5),
    )
    eta = 1e-4
    base = copy.deepcopy(tiny["model"]).double()
    base.load_state_dict({k: v.double() for k, v in tiny["final"].items()})
    q = torch.as_tensor(tiny["queries"])
    before = -last_token_loss(base, q).detach()
    delta = np.empty((12, 5))
    for s in range(12):
        net = copy.deepcopy(base)
        net.zero_grad()
        sequence_loss(net, torch.as_tensor(tiny["train"][s : s + 1]), reduction="sum").backward()
        with torch.no_grad():
            for p in net.parameters():
                p -= eta * p.grad
        delta[s] = (-last_token_loss(net, q).detach() - before).numpy()
    np.testing.assert_allclose(
        delta / eta, res.scores, rtol=0.05, atol=0.05 * np.abs(res.scores).max()
    )
    assert np.corrcoef(delta.ravel(), res.scores.ravel())[0, 1] > 0.999


@pytest.mark.parametrize("method", ["TracIn", "GradDot", "GradCos"])
@pytest.mark.parametrize("proj_dim", [None, 150])
def test_tracin_family_aria_engine_equals_plain_dattri(tiny, method, proj_dim):
    def run(engine):
        return run_method(
            method,
            tiny["model"],
            tiny["train"],
            tiny["queries"],
            trajectory=tiny["trajectory"],
            learning_rates=[0.3, 0.2, 0.1],
            final=tiny["final"],
            proj_dim=proj_dim,
            batch_size=5,
            engine=engine,
        )

    fast, ref = run("aria"), run("dattri")
    np.testing.assert_allclose(
        fast.scores, ref.scores, rtol=1e-4, atol=1e-5 * np.abs(ref.scores).max()
    )


def test_grad_similarities_share_gradients_exactly(tiny):

    args = (tiny["model"], tiny["final"], tiny["train"], tiny["queries"])
    opts = GradientArgs(proj_dim=32, batch_size=5)
    both = grad_similarities(*args, args=opts)
    np.testing.assert_array_equal(both["GradDot"].scores, graddot(*args, args=opts).scores)
    np.testing.assert_array_equal(both["GradCos"].scores, gradcos(*args, args=opts).scores)
    assert (
        both["GradCos"].parameters["normalized_grad"]
        and not both["GradDot"].parameters["normalized_grad"]
    )
