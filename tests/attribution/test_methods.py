"""Each attributor against a hand computation and against plain dattri on a tiny model."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from aria.attribution import METHODS, factgrass, gradcos, graddot, logra, run_method, tracin, trak  # noqa: E402
from aria.errors import DataError, ParameterError  # noqa: E402
from conftest import per_sample_grads, project  # noqa: E402


def _n_params(model):
    return sum(p.numel() for p in model.parameters())


# ---------------------------------------------------------------- shapes / finiteness


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_returns_finite_train_by_test(tiny, method):
    kw = {"proj_dim": 16} if method in ("LoGra", "FactGraSS") else {"proj_dim": 32}
    res = run_method(method, tiny["model"], tiny["train"], tiny["queries"], ensemble=tiny["ensemble"],
                     trajectory=tiny["trajectory"], learning_rates=tiny["lrs"], final=tiny["final"],
                     batch_size=5, **kw)
    assert res.scores.shape == (12, 5)
    assert res.scores.dtype == np.float32
    assert np.isfinite(res.scores).all()
    assert res.method == method
    assert np.abs(res.scores).max() > 0


# ---------------------------------------------------------------- GradDot / GradCos / TracIn


@pytest.mark.parametrize("engine", ["aria", "dattri"])
def test_graddot_equals_hand_computed_gradient_dot_products(tiny, engine):
    g_train = per_sample_grads(tiny["model"], tiny["final"], tiny["train"], "sequence")
    g_query = per_sample_grads(tiny["model"], tiny["final"], tiny["queries"], "last_token")
    res = graddot(tiny["model"], tiny["final"], tiny["train"], tiny["queries"], proj_dim=None,
                  batch_size=5, engine=engine)
    np.testing.assert_allclose(res.scores, (g_train @ g_query.T).numpy(), rtol=2e-4, atol=1e-6)


def test_graddot_with_projection_equals_hand_projection(tiny):
    g_train = per_sample_grads(tiny["model"], tiny["final"], tiny["train"], "sequence")
    g_query = per_sample_grads(tiny["model"], tiny["final"], tiny["queries"], "last_token")
    k = 150  # two of dattri's 100-column blocks
    want = project(g_train, k, 3, 0) @ project(g_query, k, 3, 0).T
    res = graddot(tiny["model"], tiny["final"], tiny["train"], tiny["queries"], proj_dim=k, seed=3, batch_size=5)
    np.testing.assert_allclose(res.scores, want.numpy(), rtol=2e-4, atol=1e-5)


def test_gradcos_is_bounded_cosine(tiny):
    res = gradcos(tiny["model"], tiny["final"], tiny["train"], tiny["queries"], proj_dim=64, batch_size=5)
    assert np.abs(res.scores).max() <= 1.0 + 1e-6
    g_train = per_sample_grads(tiny["model"], tiny["final"], tiny["train"], "sequence")
    g_query = per_sample_grads(tiny["model"], tiny["final"], tiny["queries"], "last_token")
    exact = gradcos(tiny["model"], tiny["final"], tiny["train"], tiny["queries"], proj_dim=None, batch_size=5)
    cos = torch.nn.functional.normalize(g_train) @ torch.nn.functional.normalize(g_query).T
    np.testing.assert_allclose(exact.scores, cos.numpy(), atol=1e-5)


def test_tracin_is_learning_rate_weighted_sum_of_graddots(tiny):
    lrs = [0.5, 0.2, 0.05]
    res = tracin(tiny["model"], tiny["trajectory"], tiny["train"], tiny["queries"], learning_rates=lrs,
                 proj_dim=None, batch_size=5)
    want = sum(lr * graddot(tiny["model"], c, tiny["train"], tiny["queries"], proj_dim=None, batch_size=5).scores
               for lr, c in zip(lrs, tiny["trajectory"], strict=True))
    np.testing.assert_allclose(res.scores, want, rtol=1e-4, atol=1e-6)


def test_tracin_projects_each_checkpoint_with_its_own_matrix(tiny):
    lrs = [0.5, 0.2, 0.05]
    k = 40
    want = 0
    for c, (lr, ck) in enumerate(zip(lrs, tiny["trajectory"], strict=True)):
        gs = per_sample_grads(tiny["model"], ck, tiny["train"], "sequence")
        gq = per_sample_grads(tiny["model"], ck, tiny["queries"], "last_token")
        want = want + lr * project(gs, k, 0, c) @ project(gq, k, 0, c).T
    res = tracin(tiny["model"], tiny["trajectory"], tiny["train"], tiny["queries"], learning_rates=lrs,
                 proj_dim=k, batch_size=5)
    np.testing.assert_allclose(res.scores, want.numpy(), rtol=2e-4, atol=1e-6)


def test_graddot_sign_matches_one_sgd_step(tiny):
    """Higher score = training on s lowers the query's loss: Δlog p(q) ≈ η g(s)·g(q)."""
    from aria.bench.model import last_token_loss, sequence_loss

    res = graddot(tiny["model"], tiny["final"], tiny["train"], tiny["queries"], proj_dim=None, batch_size=5)
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
    np.testing.assert_allclose(delta / eta, res.scores, rtol=0.05, atol=0.05 * np.abs(res.scores).max())
    assert np.corrcoef(delta.ravel(), res.scores.ravel())[0, 1] > 0.999


# ---------------------------------------------------------------- TRAK


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
        from aria.bench.model import sequence_loss

        with torch.no_grad():
            p = torch.exp(-sequence_loss(net, torch.as_tensor(tiny["train"]))).double()
        q_avg = q_avg + (1 - p)
    e = len(tiny["ensemble"])
    want = ((kernel_avg / e) * (q_avg / e)[None, :]).T
    res = trak(model, tiny["ensemble"], tiny["train"], tiny["queries"], proj_dim=None, lam=lam, batch_size=5)
    np.testing.assert_allclose(res.scores, want.numpy(), rtol=2e-3, atol=1e-4 * np.abs(want.numpy()).max())


@pytest.mark.parametrize("kw", [{"proj_dim": 8, "lam": 0.0}, {"proj_dim": 150, "lam": 0.01},
                                {"proj_dim": 150, "lam": 0.01, "max_projection_bytes": 0},
                                {"proj_dim": 16, "lam": 0.1, "proj_type": "rademacher"}])
def test_trak_aria_engine_equals_plain_dattri(tiny, kw):
    args = (tiny["model"], tiny["ensemble"], tiny["train"], tiny["queries"])
    fast = trak(*args, batch_size=5, engine="aria", **kw)
    ref = trak(*args, batch_size=5, engine="dattri", **{k: v for k, v in kw.items() if k != "max_projection_bytes"})
    np.testing.assert_allclose(fast.scores, ref.scores, rtol=1e-4, atol=1e-5 * np.abs(ref.scores).max())


@pytest.mark.parametrize("method", ["TracIn", "GradDot", "GradCos"])
@pytest.mark.parametrize("proj_dim", [None, 150])
def test_tracin_family_aria_engine_equals_plain_dattri(tiny, method, proj_dim):
    def run(engine):
        return run_method(method, tiny["model"], tiny["train"], tiny["queries"], trajectory=tiny["trajectory"],
                          learning_rates=[0.3, 0.2, 0.1], final=tiny["final"], proj_dim=proj_dim,
                          batch_size=5, engine=engine)

    fast, ref = run("aria"), run("dattri")
    np.testing.assert_allclose(fast.scores, ref.scores, rtol=1e-4, atol=1e-5 * np.abs(ref.scores).max())


def test_trak_rejects_singular_kernel(tiny):
    with pytest.raises(ParameterError, match="lam"):
        trak(tiny["model"], tiny["ensemble"], tiny["train"], tiny["queries"], proj_dim=64, lam=0.0)


def test_projection_defaults_of_dattri_are_not_mutated(tiny):
    from aria.attribution.task import import_dattri

    dt_tracin = import_dattri("dattri.algorithm.tracin")
    dt_trak = import_dattri("dattri.algorithm.trak")

    before = (dict(dt_trak.DEFAULT_PROJECTOR_KWARGS), dict(dt_tracin.DEFAULT_PROJECTOR_KWARGS))
    trak(tiny["model"], tiny["ensemble"], tiny["train"], tiny["queries"], proj_dim=8, engine="dattri", batch_size=6)
    gradcos(tiny["model"], tiny["final"], tiny["train"], tiny["queries"], proj_dim=8, engine="dattri", batch_size=6)
    assert (dt_trak.DEFAULT_PROJECTOR_KWARGS, dt_tracin.DEFAULT_PROJECTOR_KWARGS) == before


def test_caller_model_is_not_modified(tiny):
    model = tiny["model"]
    before = {k: v.clone() for k, v in model.state_dict().items()}
    forward_before = {n: m.forward for n, m in model.named_modules()}
    trak(model, tiny["ensemble"], tiny["train"], tiny["queries"], proj_dim=8, batch_size=6)
    logra(model, tiny["ensemble"][1], tiny["train"], tiny["queries"], proj_dim=16, batch_size=6)
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k])
    assert {n: m.forward for n, m in model.named_modules()} == forward_before


# ---------------------------------------------------------------- LoGra / FactGraSS


def _linear_grads(model, state, windows, kind):
    """Per-sample gradients restricted to the nn.Linear weights and biases (what dattri hooks)."""
    full = per_sample_grads(model, state, windows, kind)
    keep, start = [], 0
    linear = {f"{n}.{p}" for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) for p in ("weight", "bias")}
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
    from aria.attribution.methods import _block_projected

    ident = {"device": "cpu", "proj_dim": -1, "proj_max_batch_size": 64, "proj_type": "identity"}
    scores, _ = _block_projected(
        "test", tiny["model"], tiny["final"], torch.as_tensor(tiny["train"]), torch.as_tensor(tiny["queries"]),
        sparsifier_kwargs=ident, projector_kwargs=ident, hessian="Identity", damping=None,
        loss="sequence", target="last_token", batch_size=batch_size, layer_names=None, num_threads=1,
        progress_bar=False,
    )
    gs = _linear_grads(tiny["model"], tiny["final"], tiny["train"], "sequence")
    gq = _linear_grads(tiny["model"], tiny["final"], tiny["queries"], "last_token")
    np.testing.assert_allclose(scores.numpy(), (gs @ gq.T).numpy(), rtol=1e-3, atol=1e-5)


def test_logra_and_factgrass_validate_square_dims(tiny):
    args = (tiny["model"], tiny["final"], tiny["train"], tiny["queries"])
    with pytest.raises(ParameterError, match="perfect square"):
        logra(*args, proj_dim=15)
    with pytest.raises(ParameterError, match="perfect square"):
        factgrass(*args, proj_dim=16, blowup=2)


def test_logra_is_deterministic_and_seeded(tiny):
    args = (tiny["model"], tiny["final"], tiny["train"], tiny["queries"])
    a = logra(*args, proj_dim=16, seed=1, batch_size=6).scores
    b = logra(*args, proj_dim=16, seed=1, batch_size=6).scores
    c = logra(*args, proj_dim=16, seed=2, batch_size=6).scores
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


# ---------------------------------------------------------------- validation


def test_bad_inputs_raise_typed_errors(tiny):
    m, f, tr, q = tiny["model"], tiny["final"], tiny["train"], tiny["queries"]
    with pytest.raises(ParameterError, match="model"):
        graddot("not a model", f, tr, q)
    with pytest.raises(DataError, match="train"):
        graddot(m, f, tr[:, :1], q)
    with pytest.raises(ParameterError, match="queries"):
        graddot(m, f, tr, q.astype(float))
    with pytest.raises(ParameterError, match="learning_rates"):
        tracin(m, tiny["trajectory"], tr, q, learning_rates=[0.1])
    with pytest.raises(ParameterError, match="loss"):
        graddot(m, f, tr, q, loss="bogus")
    with pytest.raises(ParameterError, match="method"):
        run_method("Bogus", m, tr, q)
    with pytest.raises(ParameterError, match="ensemble"):
        run_method("TRAK", m, tr, q)


def test_grad_similarities_share_gradients_exactly(tiny):
    from aria.attribution import grad_similarities

    args = (tiny["model"], tiny["final"], tiny["train"], tiny["queries"])
    both = grad_similarities(*args, proj_dim=32, batch_size=5)
    np.testing.assert_array_equal(both["GradDot"].scores, graddot(*args, proj_dim=32, batch_size=5).scores)
    np.testing.assert_array_equal(both["GradCos"].scores, gradcos(*args, proj_dim=32, batch_size=5).scores)
    assert both["GradCos"].parameters["normalized_grad"] and not both["GradDot"].parameters["normalized_grad"]


def test_run_methods_saves_every_matrix(tiny, tmp_path):
    from aria.attribution import load_attribution, run_methods

    res = run_methods(["GradCos", "TRAK", "GradDot"], tiny["model"], tiny["train"], tiny["queries"],
                      ensemble=tiny["ensemble"], final=tiny["final"], options={"TRAK": {"proj_dim": 8}},
                      common={"proj_dim": 16, "batch_size": 6}, out_dir=tmp_path,
                      row_ids=[f"seg{i}" for i in range(12)])
    assert list(res) == ["GradCos", "TRAK", "GradDot"]
    assert res["TRAK"].parameters["proj_dim"] == 8 and res["GradDot"].parameters["proj_dim"] == 16
    for name, r in res.items():
        back, manifest = load_attribution(tmp_path / f"{name}.npy", method=name)
        np.testing.assert_array_equal(back, r.scores)
        assert manifest["parameters"]["proj_dim"] == r.parameters["proj_dim"]
    with pytest.raises(ParameterError, match="options"):
        run_methods(["TRAK"], tiny["model"], tiny["train"], tiny["queries"], options={"Trak": {}})


class _BufferedLM(torch.nn.Module):
    """TinyLM with a buffer and dropout: attribution must take both from the checkpoint / eval mode."""

    def __init__(self):
        super().__init__()
        from conftest import make_model

        self.body = make_model(0)
        self.drop = torch.nn.Dropout(0.5)
        self.register_buffer("temperature", torch.tensor(1.0))

    def forward(self, tokens):
        return self.drop(self.body(tokens)) / self.temperature


def test_checkpoint_buffers_and_eval_mode_are_used(tiny):
    caller = _BufferedLM().train()  # dropout active, temperature 1 in the caller's module
    state = {k: v.clone() for k, v in caller.state_dict().items()}
    state["temperature"] = torch.tensor(2.5)
    a = graddot(caller, state, tiny["train"], tiny["queries"], proj_dim=None, batch_size=6).scores
    b = graddot(caller, state, tiny["train"], tiny["queries"], proj_dim=None, batch_size=6).scores
    np.testing.assert_array_equal(a, b)  # no dropout noise
    want = per_sample_grads(caller, state, tiny["train"], "sequence") @ \
        per_sample_grads(caller, state, tiny["queries"], "last_token").T
    np.testing.assert_allclose(a, want.numpy(), rtol=2e-4, atol=1e-6)
    assert caller.training and float(caller.temperature) == 1.0
    t = trak(caller, [state], tiny["train"], tiny["queries"], proj_dim=8, batch_size=6).scores
    assert np.isfinite(t).all()
