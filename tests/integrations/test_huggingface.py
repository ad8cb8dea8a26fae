"""Attribution of a Hugging Face causal LM (tiny random configs, never a download)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("dattri")

from torch.func import functional_call, grad  # noqa: E402

from aria_tda.attribution import run_methods  # noqa: E402
from aria_tda.errors import ParameterError  # noqa: E402
from aria_tda.integrations.huggingface import (  # noqa: E402
    HFTokenModel,
    as_token_model,
    hf_state_dict,
)

V, L = 40, 16


def gpt2(seed: int = 0):
    torch.manual_seed(seed)
    cfg = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=V, n_positions=64,
                                  bos_token_id=0, eos_token_id=0)
    return transformers.GPT2LMHeadModel(cfg)


def llama(seed: int = 0):
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(num_hidden_layers=1, num_attention_heads=2,
                                   num_key_value_heads=1, hidden_size=32, intermediate_size=64,
                                   vocab_size=V, max_position_embeddings=64,
                                   bos_token_id=0, eos_token_id=0)
    return transformers.LlamaForCausalLM(cfg)


BUILDERS = {"gpt2": gpt2, "llama": llama}


@pytest.fixture
def windows(rng):
    train = rng.integers(0, V, size=(24, L)).astype(np.int64)
    queries = rng.integers(0, V, size=(6, L)).astype(np.int64)
    return train, queries


def per_sample_grads(hf, tokens, which):
    """Exact per-window gradients on the raw Hugging Face model, one window at a time."""
    params = {k: v.detach() for k, v in hf.named_parameters()}

    def loss(p, t):
        logits = functional_call(hf, p, (), {"input_ids": t[None], "use_cache": False}).logits[0]
        if which == "sequence":
            return torch.nn.functional.cross_entropy(logits[:-1], t[1:])
        return torch.nn.functional.cross_entropy(logits[-2], t[-1])

    out = []
    for t in torch.as_tensor(tokens):
        g = grad(loss)(params, t)
        out.append(torch.cat([g[k].reshape(-1) for k in params]))
    return torch.stack(out).double().numpy()


def test_forward_is_the_models_logits(windows):
    hf = gpt2()
    model = as_token_model(hf)
    x = torch.as_tensor(windows[0][:3])
    with torch.no_grad():
        out = model(x)
        ref = hf(input_ids=x, use_cache=False).logits
    assert isinstance(model, HFTokenModel) and not model.training
    assert out.shape == (3, L, V)
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    assert hf.config._attn_implementation == "eager"


def test_state_dicts_of_the_hf_model_load(tmp_path, windows):
    src, dst = gpt2(seed=1).eval(), as_token_model(gpt2(seed=2))
    x = torch.as_tensor(windows[1])
    with torch.no_grad():
        want = as_token_model(src)(x).numpy()  # the same (eager) attention as the adapters
    # the model's own keys, the adapter's keys, and save_pretrained's (tied weights once)
    src.save_pretrained(tmp_path / "ckpt")
    from_disk = hf_state_dict(tmp_path / "ckpt")
    assert "lm_head.weight" not in from_disk and "transformer.wte.weight" in from_disk
    for state in (src.state_dict(), from_disk, as_token_model(src).state_dict()):
        fresh = as_token_model(gpt2(seed=3))
        fresh.load_state_dict(state)
        with torch.no_grad():
            np.testing.assert_array_equal(fresh(x).numpy(), want)
    assert all(k.startswith("hf.") for k in dst.state_dict())
    with pytest.raises(RuntimeError, match="Unexpected key"):
        dst.load_state_dict({**src.state_dict(), "not.a.weight": torch.zeros(1)})


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_run_methods_on_a_hf_model(tmp_path, windows, arch):
    train, queries = windows
    hf = BUILDERS[arch]()
    model = as_token_model(hf)
    final = hf.state_dict()
    res = run_methods(
        ["GradDot", "GradCos", "TracIn", "TRAK"], model, train, queries,
        final=final, trajectory=[final, final], learning_rates=[0.1, 0.3], ensemble=[final],
        options={"TRAK": {"proj_dim": 64}}, out_dir=tmp_path / "scores",
    )
    for name, r in res.items():
        assert r.scores.shape == (24, 6), name
        assert np.isfinite(r.scores).all(), name
        assert (tmp_path / "scores" / f"{name}.npy").is_file()
    # GradDot is the dot product of exact per-sample gradients of the raw HF model
    g_train = per_sample_grads(hf, train, "sequence")
    g_query = per_sample_grads(hf, queries, "last_token")
    dot = g_train @ g_query.T
    np.testing.assert_allclose(res["GradDot"].scores, dot, rtol=2e-4, atol=1e-6 * np.abs(dot).max())
    cos = dot / np.outer(np.linalg.norm(g_train, axis=1), np.linalg.norm(g_query, axis=1))
    np.testing.assert_allclose(res["GradCos"].scores, cos, rtol=2e-4, atol=1e-6)
    # TracIn over two copies of the final weights = (sum of learning rates) x GradDot
    np.testing.assert_allclose(res["TracIn"].scores, 0.4 * res["GradDot"].scores, rtol=1e-4,
                               atol=1e-6 * np.abs(dot).max())
    # provenance: the adapter, the model's parameter count (tied weights once)
    manifest = json.loads((tmp_path / "scores" / "GradDot.npy.manifest.json").read_text())
    text = json.dumps(manifest)
    assert "HFTokenModel" in text
    assert str(hf.num_parameters()) in text
    recorded = manifest["parameters"]["provenance"]["model"]["huggingface"]
    assert recorded == as_token_model(hf).aria_provenance()["huggingface"]


def test_provenance_record_names_the_hf_config():
    hf = llama()
    rec = as_token_model(hf).aria_provenance()["huggingface"]
    assert rec["model_type"] == "llama"
    assert rec["class"].endswith("LlamaForCausalLM")
    assert rec["n_parameters"] == hf.num_parameters()
    assert rec["vocab_size"] == V and rec["max_positions"] == 64
    assert rec["attn_implementation"] == "eager"
    assert rec["transformers_version"] == transformers.__version__
    json.dumps(rec)
    other = llama()
    other.config.rms_norm_eps = 1e-3
    assert as_token_model(other).aria_provenance()["huggingface"]["config_digest"] \
        != rec["config_digest"]


def test_bad_input_is_named():
    with pytest.raises(ParameterError, match=r"model: expected a transformers\.PreTrainedModel"):
        as_token_model(torch.nn.Linear(2, 2))
    with pytest.raises(ParameterError, match="attn_implementation"):
        as_token_model(gpt2(), attn_implementation="flash_attention_2")
    model = as_token_model(gpt2())
    with pytest.raises(ParameterError, match="at most 64 tokens"):
        model(torch.zeros((1, 65), dtype=torch.int64))
    with pytest.raises(ParameterError, match="source"):
        hf_state_dict(3)
