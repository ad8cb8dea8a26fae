"""Sanity checks of the attribution methods: model randomisation, gradient-norm bias, storage."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _lm import LENGTH, VOCAB, make_model, per_sample_grads  # noqa: E402
from torch import nn  # noqa: E402

from aria_tda.attribution import (  # noqa: E402
    GradientArgs,
    SanityArgs,
    gradient_norm_bias,
    load_attribution,
    model_randomization,
    read_sanity,
    run_methods,
    sanity_checks,
    save_attribution,
)
from aria_tda.attribution.losses import sequence_loss  # noqa: E402
from aria_tda.attribution.sanity import (  # noqa: E402
    reinitialized_state,
    training_gradient_norms,
)
from aria_tda.attribution.sanity_stats import (  # noqa: E402
    summarize_norm_bias,
    summarize_randomization,
)
from aria_tda.errors import DataError, FileFormatError, ParameterError  # noqa: E402
from aria_tda.manifest import read_manifest, write_manifest  # noqa: E402

SIX = ["TRAK", "TracIn", "GradDot", "GradCos", "LoGra", "FactGraSS"]
SMALL = {"TRAK": {"proj_dim": 32}, "LoGra": {"proj_dim": 16}, "FactGraSS": {"proj_dim": 16}}


def _checkpoints(tiny):
    return {"ensemble": tiny["ensemble"], "trajectory": tiny["trajectory"],
            "learning_rates": tiny["lrs"], "final": tiny["final"]}


# ---- a method that ignores the model ---------------------------------------------------------


class BigramLM(nn.Module):
    """Logits = a (V, V) table looked up by the current token: linear in its weights."""

    def __init__(self) -> None:
        super().__init__()
        self.table = nn.Embedding(VOCAB, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.table(tokens)


def logit_loss(model, tokens):
    """Minus the mean next-token logit: linear in the weights, so its gradient ignores them."""
    logits = model(tokens)
    return -torch.gather(logits[:, :-1], -1, tokens[:, 1:, None]).squeeze(-1).mean(-1)


def test_randomization_flags_a_method_that_ignores_the_model(tiny):
    torch.manual_seed(0)
    model = BigramLM().eval()
    final = {k: v.clone() for k, v in model.state_dict().items()}
    res = model_randomization("GradDot", model, tiny["train"], tiny["queries"], final=final,
                              loss=logit_loss, target=logit_loss)
    defined = np.isfinite(res.per_query)  # a query sharing no bigram with any window: constant
    assert defined.sum() >= 4 and res.n_undefined == (~defined).sum()
    np.testing.assert_allclose(res.per_query[defined], 1.0)
    assert res.mean == pytest.approx(1.0) and res.lo == pytest.approx(1.0)
    assert res.flagged and res.method == "GradDot"


def test_randomization_of_gradcos_on_the_trained_tiny_model_is_low(tiny):
    kw = {"final": tiny["final"], "batch_size": 6}
    res = model_randomization("GradCos", tiny["model"], tiny["train"], tiny["queries"], **kw)
    assert res.mean < 0.5 and res.lo < 0.5 and not res.flagged
    assert res.lo <= res.mean <= res.hi
    # the trained scores given instead of recomputed: the same test
    scores = run_methods(["GradCos"], tiny["model"], tiny["train"], tiny["queries"],
                         final=tiny["final"])["GradCos"].scores
    again = model_randomization("GradCos", tiny["model"], tiny["train"], tiny["queries"],
                                scores=scores, **kw)
    np.testing.assert_allclose(again.per_query, res.per_query, rtol=1e-6)


def test_summarize_randomization_separates_same_from_independent(rng):
    s = rng.normal(size=(60, 40))
    same = summarize_randomization(s, s * 3.0 + 1.0, n_boot=200)
    assert same.mean == pytest.approx(1.0) and same.lo == pytest.approx(1.0) and same.flagged
    other = summarize_randomization(s, rng.normal(size=s.shape), n_boot=200)
    assert abs(other.mean) < 0.1 and other.lo < 0 < other.hi and not other.flagged
    assert other.to_dict()["flagged"] is False and other.to_dict()["threshold"] == 0.5


# ---- gradient-norm bias ----------------------------------------------------------------------

MARKER, PLAIN = 10, 9


def upweighted_loss(model, tokens):
    """Sequence loss, x10 for windows starting with MARKER: their gradients are 10x longer."""
    w = 1.0 + 9.0 * (tokens[:, 0] == MARKER).to(torch.float32)
    return sequence_loss(model, tokens) * w


def _planted(seed: int):
    """Windows of mostly token 1 (gradients share a direction), half of them upweighted."""
    rng = np.random.default_rng(seed)

    def windows(n: int, marker: int) -> np.ndarray:
        x = np.where(rng.random((n, LENGTH)) < 0.7, 1, rng.integers(0, 9, size=(n, LENGTH)))
        x[:, 0] = marker
        return x.astype(np.int64)

    train = np.concatenate([windows(8, MARKER), windows(8, PLAIN)])
    return make_model(seed), train, windows(8, PLAIN)


def test_norm_bias_is_high_for_graddot_and_low_for_gradcos_with_planted_norms():
    model, train, queries = _planted(0)
    final = {k: v.clone() for k, v in model.state_dict().items()}
    kw = {"final": final, "loss": upweighted_loss, "target": "sequence"}
    dot = gradient_norm_bias("GradDot", model, train, queries, **kw)
    cos = gradient_norm_bias("GradCos", model, train, queries, **kw)
    assert dot.flagged and dot.median >= 0.5 and dot.share_above >= 0.5
    assert not cos.flagged and cos.median < 0.5
    assert dot.checkpoint == "final" and dot.loss == "upweighted_loss"
    # GradCos divides the planted weights out exactly: the same scores without them
    plain = run_methods(["GradCos"], model, train, queries, final=final,
                        common={"target": "sequence"})["GradCos"].scores
    scores = run_methods(["GradCos"], model, train, queries, final=final,
                         common={"target": "sequence", "loss": upweighted_loss})
    np.testing.assert_allclose(scores["GradCos"].scores, plain, rtol=1e-4, atol=1e-6)


def test_summarize_norm_bias_on_planted_scores(rng):
    norms = rng.uniform(0.5, 5.0, size=50)
    follows = norms[:, None] * rng.uniform(0.5, 1.0, size=(50, 30))
    high = summarize_norm_bias(follows, norms)
    assert high.median > 0.8 and high.share_above == 1.0 and high.flagged
    ignores = summarize_norm_bias(rng.normal(size=(50, 30)), norms)
    assert abs(ignores.median) < 0.2 and not ignores.flagged
    # high-norm windows at either end: not flagged (signed), seen by the magnitude
    sign = np.where(rng.random((50, 30)) < 0.5, -1.0, 1.0)
    both_ends = summarize_norm_bias(follows * sign, norms)
    assert not both_ends.flagged and both_ends.median_magnitude > 0.8


def test_training_gradient_norms_equal_autograd(tiny):
    got = training_gradient_norms(tiny["model"], tiny["final"], tiny["train"],
                                  args=GradientArgs(batch_size=5))
    want = per_sample_grads(tiny["model"], tiny["final"], tiny["train"], "sequence")
    np.testing.assert_allclose(got, want.norm(dim=1).numpy(), rtol=1e-4)


# ---- re-initialised weights ------------------------------------------------------------------


def test_reinitialized_state_is_seeded_and_replaces_every_parameter(tiny):
    model, final = tiny["model"], tiny["final"]
    before_model = copy.deepcopy(model.state_dict())
    rng_state = torch.get_rng_state()
    a = reinitialized_state(model, final, seed=3)
    b = reinitialized_state(model, final, seed=3)
    c = reinitialized_state(model, final, seed=4)
    assert torch.equal(torch.get_rng_state(), rng_state)  # the caller's RNG is untouched
    assert set(a) == set(final)
    for name in final:
        assert torch.equal(a[name], b[name])
        assert not torch.equal(a[name], final[name]) and not torch.equal(a[name], c[name])
        assert torch.equal(model.state_dict()[name], before_model[name])
    # the free positional table (no reset_parameters): the trained scale, not its values
    assert float(a["pos"].std()) == pytest.approx(float(final["pos"].std()), rel=0.5)


# ---- several methods, stored with the scores -------------------------------------------------


def test_sanity_checks_of_all_six_methods_round_trip(tiny, tmp_path):
    out = sanity_checks(SIX, tiny["model"], tiny["train"], tiny["queries"], **_checkpoints(tiny),
                        options=SMALL, common={"batch_size": 6},
                        args=SanityArgs(seed=1, n_boot=200), out_dir=tmp_path,
                        row_ids=[f"seg{i}" for i in range(12)])
    assert list(out) == SIX
    for m, r in out.items():
        path = tmp_path / f"{m}.npy"
        stored = read_sanity(path)
        assert stored == json.loads(json.dumps(r.sanity))
        assert stored["randomization"]["seed"] == 1 and stored["randomization"]["n_boot"] == 200
        assert stored["bias"]["checkpoint"] == "final" and stored["bias"]["n_queries"] == 5
        assert isinstance(stored["randomization"]["flagged"], bool)
        scores, manifest = load_attribution(path, method=m)
        np.testing.assert_array_equal(scores, r.scores)
        assert manifest["parameters"]["batch_size"] == 6


def test_read_sanity_is_none_without_checks(tiny, tmp_path):
    res = run_methods(["GradDot"], tiny["model"], tiny["train"], tiny["queries"],
                      final=tiny["final"], out_dir=tmp_path)
    assert res["GradDot"].sanity is None
    assert read_sanity(tmp_path / "GradDot.npy") is None
    np.save(tmp_path / "foreign.npy", np.zeros((3, 2)))  # not written by ARIA: no manifest
    assert read_sanity(tmp_path / "foreign.npy") is None


def test_sanity_checks_reuse_given_results(tiny):
    kw = {"final": tiny["final"], "common": {"batch_size": 6}, "args": SanityArgs(n_boot=100)}
    given = run_methods(["GradDot", "GradCos"], tiny["model"], tiny["train"], tiny["queries"],
                        final=tiny["final"], common={"batch_size": 6})
    a = sanity_checks(["GradDot", "GradCos"], tiny["model"], tiny["train"], tiny["queries"],
                      results=given, **kw)
    b = sanity_checks(["GradDot", "GradCos"], tiny["model"], tiny["train"], tiny["queries"], **kw)
    for m in a:
        assert a[m].scores is given[m].scores
        assert a[m].sanity["bias"] == b[m].sanity["bias"]
        assert a[m].sanity["randomization"]["mean"] == pytest.approx(
            b[m].sanity["randomization"]["mean"], abs=1e-6)
    other = run_methods(["GradDot"], tiny["model"], tiny["train"], tiny["queries"],
                        final=tiny["final"], common={"proj_dim": 8})
    with pytest.raises(ParameterError, match=r"results\['GradDot'\].*proj_dim"):
        sanity_checks(["GradDot"], tiny["model"], tiny["train"], tiny["queries"],
                      results=other, **kw)
    with pytest.raises(ParameterError, match=r"results\['GradCos'\]"):
        sanity_checks(["GradDot", "GradCos"], tiny["model"], tiny["train"], tiny["queries"],
                      results={"GradDot": given["GradDot"]}, **kw)


def test_read_sanity_rejects_a_malformed_entry(tmp_path, rng):
    path = save_attribution(rng.normal(size=(4, 2)), tmp_path / "s.npy", method="GradDot",
                            sanity={"version": 1, "randomization": {"mean": "high"}, "bias": {}})
    with pytest.raises(FileFormatError, match=r"sanity\.randomization\.mean"):
        read_sanity(path)
    manifest = read_manifest(path)
    manifest["sanity"] = {"version": 99}
    write_manifest(path, manifest)
    with pytest.raises(FileFormatError, match=r"sanity\.version"):
        read_sanity(path)
    with pytest.raises(FileFormatError, match="path"):
        read_sanity(tmp_path / "missing.npy")


def test_bad_inputs_raise_typed_errors(tiny, rng, tmp_path):
    m, tr, q, f = tiny["model"], tiny["train"], tiny["queries"], tiny["final"]
    with pytest.raises(ParameterError, match=r"^method: expected one of 'TRAK'.*got 'Bogus'"):
        model_randomization("Bogus", m, tr, q, final=f)
    with pytest.raises(ParameterError, match="args"):
        model_randomization("GradDot", m, tr, q, final=f, args={"seed": 1})
    with pytest.raises(ParameterError, match=r"options for GradDot.*bogus"):
        gradient_norm_bias("GradDot", m, tr, q, final=f, bogus=1)
    with pytest.raises(ParameterError, match="n_boot"):
        SanityArgs(n_boot=0)
    with pytest.raises(ParameterError, match="level"):
        SanityArgs(level=1.0)
    with pytest.raises(ParameterError, match="seed"):
        SanityArgs(seed=-1)
    with pytest.raises(ParameterError, match="seed"):
        reinitialized_state(m, f, seed=-1)
    with pytest.raises(ParameterError, match="final"):
        gradient_norm_bias("GradDot", m, tr, q, scores=rng.normal(size=(12, 5)))
    with pytest.raises(DataError, match="scores"):
        model_randomization("GradDot", m, tr, q, final=f, scores=np.zeros((12, 4)))
    with pytest.raises(DataError, match="norms"):
        gradient_norm_bias("GradDot", m, tr, q, final=f, scores=rng.normal(size=(12, 5)),
                           norms=np.ones(11))
    with pytest.raises(DataError, match="randomized"):
        summarize_randomization(np.ones((5, 2)), np.ones((5, 3)))
    with pytest.raises(ParameterError, match="results"):
        sanity_checks(["GradDot"], m, tr, q, final=f, results="scores/")
    with pytest.raises(ParameterError, match="sanity"):
        save_attribution(np.zeros((3, 2)), tmp_path / "s.npy", method="GradDot", sanity="yes")
    assert not list(tmp_path.iterdir())
