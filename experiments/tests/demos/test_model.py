"""MusicTransformer: shapes, causality, relative-attention skewing, torch.func per-sample grads."""

from __future__ import annotations

import pytest
import torch

from aria_tda.errors import ParameterError
from aria_tda_experiments.model import (
    ModelConfig,
    build_model,
    functional_loss,
    last_token_loss,
    relative_logits_reference,
    sequence_loss,
    skew,
    token_nll,
)

TINY = ModelConfig(vocab_size=50, d_model=16, n_layers=2, n_heads=2, d_ff=32, max_len=12)


def _tokens(rng, b=3, length=12, vocab=50):
    return torch.from_numpy(rng.integers(0, vocab, (b, length))).long()


def test_forward_shapes_and_dtype(rng):
    model = build_model(TINY, seed=0)
    for length in (2, 7, 12):
        out = model(_tokens(rng, b=4, length=length))
        assert out.shape == (4, length, TINY.vocab_size)
        assert out.dtype == torch.float32
        assert torch.isfinite(out).all()


def test_only_linear_projections_besides_embeddings_and_norms():
    model = build_model(TINY, seed=0)
    linear = {n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    assert {"head", "blocks.0.attn.q", "blocks.1.ff2"} <= linear
    for name, _ in model.named_parameters():
        owner = name.rsplit(".", 1)[0]
        assert owner in linear or owner == "embed" or "ln" in owner or name.endswith("rel_emb")


def test_causal_masking(rng):
    model = build_model(TINY, seed=1)
    x = _tokens(rng, b=2)
    base = model(x)
    for t in (3, 8, 11):
        y = x.clone()
        y[:, t] = (y[:, t] + 1) % TINY.vocab_size
        out = model(y)
        torch.testing.assert_close(out[:, :t], base[:, :t], rtol=0, atol=0)
        assert not torch.allclose(out[:, t:], base[:, t:])


@pytest.mark.parametrize("length", [1, 2, 5, 9])
def test_skew_equals_naive_relative_logits(length):
    gen = torch.Generator().manual_seed(length)
    q = torch.randn(2, 3, length, 4, generator=gen, dtype=torch.float64)
    e_r = torch.randn(length, 4, generator=gen, dtype=torch.float64)
    fast = skew(q @ e_r.T)
    ref = relative_logits_reference(q, e_r)
    lower = torch.ones(length, length, dtype=torch.bool).tril()
    torch.testing.assert_close(fast[..., lower], ref[..., lower], rtol=1e-12, atol=1e-12)


def test_attention_layer_equals_naive_formula(rng):
    """The attention module equals softmax((QK^T + S_rel)/sqrt(d_h) + M) V, entry by entry."""
    model = build_model(TINY, seed=2).double()
    attn = model.blocks[0].attn
    length = 9
    x = torch.from_numpy(rng.normal(size=(2, length, TINY.d_model)))
    out = attn(x)
    h, dh = TINY.n_heads, TINY.d_model // TINY.n_heads
    q = attn.q(x).reshape(2, length, h, dh).transpose(1, 2)
    k = attn.k(x).reshape(2, length, h, dh).transpose(1, 2)
    v = attn.v(x).reshape(2, length, h, dh).transpose(1, 2)
    ctx = torch.zeros(2, h, length, dh, dtype=torch.float64)
    for head in range(h):
        e_r = attn.rel_emb[head, TINY.max_len - length :]
        s_rel = relative_logits_reference(q[:, head], e_r)
        for i in range(length):
            scores = (
                torch.stack(
                    [
                        (q[:, head, i] * k[:, head, j]).sum(-1) + s_rel[:, i, j]
                        for j in range(i + 1)
                    ],
                    -1,
                )
                / dh**0.5
            )
            ctx[:, head, i] = (torch.softmax(scores, -1).unsqueeze(-1) * v[:, head, : i + 1]).sum(1)
    ref = attn.out(ctx.transpose(1, 2).reshape(2, length, TINY.d_model))
    torch.testing.assert_close(out, ref, rtol=1e-10, atol=1e-12)


def test_losses_match_definitions(rng):
    model = build_model(TINY, seed=3)
    x = _tokens(rng, b=4)
    logits = model(x)
    ref_seq = torch.stack(
        [torch.nn.functional.cross_entropy(logits[b, :-1], x[b, 1:]) for b in range(4)]
    )
    torch.testing.assert_close(sequence_loss(model, x), ref_seq)
    torch.testing.assert_close(token_nll(logits, x).mean(-1), ref_seq)
    ref_last = torch.nn.functional.cross_entropy(logits[:, -2], x[:, -1], reduction="none")
    torch.testing.assert_close(last_token_loss(model, x), ref_last, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(sequence_loss(model, x, reduction="mean"), ref_seq.mean())
    with pytest.raises(ParameterError, match="reduction"):
        sequence_loss(model, x, reduction="avg")


@pytest.mark.parametrize("kind", ["sequence", "last_token"])
def test_vmap_per_sample_grads_equal_looped_autograd(rng, kind):
    model = build_model(TINY, seed=4)
    x = _tokens(rng, b=5)
    params = {k: v.detach() for k, v in model.named_parameters()}
    f = functional_loss(model, kind)
    grads = torch.func.vmap(torch.func.grad(f), in_dims=(None, 0))(params, x)
    loss = sequence_loss if kind == "sequence" else last_token_loss
    for b in range(x.shape[0]):
        model.zero_grad(set_to_none=True)
        loss(model, x[b : b + 1], reduction="sum").backward()
        for name, p in model.named_parameters():
            ref = p.grad if p.grad is not None else torch.zeros_like(p)
            torch.testing.assert_close(grads[name][b], ref, rtol=1e-4, atol=1e-6)


def test_build_model_seeded_and_global_rng_untouched():
    state = torch.random.get_rng_state()
    a, b, c = build_model(TINY, seed=5), build_model(TINY, seed=5), build_model(TINY, seed=6)
    assert torch.equal(state, torch.random.get_rng_state())
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not torch.equal(sa["blocks.0.attn.q.weight"], sc["blocks.0.attn.q.weight"])


def test_config_validation():
    with pytest.raises(ParameterError, match="d_model"):
        ModelConfig(d_model=10, n_heads=4)
    with pytest.raises(ParameterError, match="max_len"):
        ModelConfig(max_len=1)
    model = build_model(TINY, seed=0)
    with pytest.raises(ParameterError, match="tokens"):
        model.check_tokens(torch.zeros(2, 13, dtype=torch.long))
    with pytest.raises(ParameterError, match="ids in"):
        model.check_tokens(torch.full((1, 3), 50, dtype=torch.long))
