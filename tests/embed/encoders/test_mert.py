"""MERT built from a local folder in MERT's own format: loading, equality with transformers.

Every test writes a real checkpoint folder (``config.json`` with MERT's custom fields, random
weights under MERT's parameter names) with :func:`save_random_checkpoint`, loads it through
:func:`load_mert` / :func:`aria_tda.embed.encoders.load_encoder` and runs real audio (harmonic tones
synthesised with numpy) through it. The reference is ``transformers`` called directly:
``HubertModel.from_pretrained`` + ``Wav2Vec2FeatureExtractor.from_pretrained`` on the same folder.
"""

from __future__ import annotations

import json
import shutil
import warnings
from typing import Any

import numpy as np
import pytest

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from safetensors.torch import load_file, save_file  # noqa: E402

from aria_tda.embed.encoders import file_sha256, load_encoder  # noqa: E402
from aria_tda.embed.encoders.mert import (  # noqa: E402
    MertEncoder,
    load_mert,
    save_random_checkpoint,
)
from aria_tda.errors import AriaWarning, DataError, FileFormatError, ParameterError  # noqa: E402

SR = 24_000


def _music(seconds: float, seed: int = 0) -> np.ndarray:
    """A few seconds of 'music': harmonic notes with decaying envelopes, plus a little noise."""
    rng = np.random.default_rng(seed)
    n = int(seconds * SR)
    t = np.arange(n) / SR
    y = np.zeros(n)
    note = int(0.25 * SR)
    for start in range(0, n, note):
        f0 = 110.0 * 2 ** (rng.integers(0, 24) / 12)
        seg = t[: min(note, n - start)]
        env = np.exp(-4.0 * seg)
        y[start : start + seg.size] += env * sum(
            0.3 / k * np.sin(2 * np.pi * k * f0 * seg) for k in range(1, 5)
        )
    y += 0.005 * rng.standard_normal(n)
    return y.astype(np.float32)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _changed(a: np.ndarray, b: np.ndarray) -> float:
    """Relative distance ||a - b|| / ||b||."""
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def _direct(folder, y: np.ndarray, layer: int | tuple[int, ...]) -> Any:
    """Frames of hidden state(s) ``layer`` from transformers itself (no ARIA code on the path)."""
    from transformers import HubertModel, Wav2Vec2FeatureExtractor

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded: Any = HubertModel.from_pretrained(
            folder, local_files_only=True, output_loading_info=True
        )
    model, info = loaded
    assert not info["missing_keys"] and not info["mismatched_keys"]
    model.eval()
    fe = Wav2Vec2FeatureExtractor.from_pretrained(folder, local_files_only=True)
    inputs = fe(y, sampling_rate=SR, return_tensors="pt")
    with torch.no_grad():
        out = model(**inputs, output_hidden_states=True)
    if isinstance(layer, tuple):
        return [out.hidden_states[k][0].numpy() for k in layer]
    return out.hidden_states[layer][0].numpy()


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return save_random_checkpoint(tmp_path_factory.mktemp("mert") / "small", small=True)


@pytest.fixture(scope="module")
def audio() -> np.ndarray:
    return _music(3.2)


def test_loads_from_mert_format_with_shapes_and_frame_rate(small, audio):
    config = json.loads((small / "config.json").read_text())
    assert config["architectures"] == ["MERTModel"] and config["model_type"] == "mert_model"
    assert "encoder.pos_conv_embed.conv.weight_g" in load_file(str(small / "model.safetensors"))
    enc = load_encoder("mert", weights=small)
    assert isinstance(enc, MertEncoder)
    assert (enc.sample_rate, enc.dim, enc.layer) == (SR, 32, 2)
    frames = enc.embed_frames(audio)
    assert frames.dtype == np.float32 and frames.shape == (239, 32)  # 75 Hz, minus the edge
    e = enc.embed(audio)
    assert e.dtype == np.float64 and e.shape == (32,)
    np.testing.assert_allclose(e, frames.astype(np.float64).mean(axis=0), rtol=1e-6, atol=1e-7)
    assert frames.std(axis=0).mean() > 1e-3  # frames differ over time


@pytest.mark.parametrize("layer", [0, 1, 2])
def test_equals_transformers_called_directly(small, audio, layer):
    enc = load_mert(weights=small, layer=layer)
    ref = _direct(small, audio, layer)
    frames = enc.embed_frames(audio)
    assert frames.shape == ref.shape
    np.testing.assert_allclose(frames, ref, rtol=1e-4, atol=1e-5)
    assert _cos(enc.embed(audio), ref.astype(np.float64).mean(axis=0)) >= 0.9999


def test_deterministic_and_seeded(small, audio, tmp_path):
    a = load_mert(weights=small).embed(audio)
    b = load_mert(weights=small).embed(audio)
    np.testing.assert_array_equal(a, b)
    again = save_random_checkpoint(tmp_path / "again", small=True)
    assert file_sha256(again / "model.safetensors") == file_sha256(small / "model.safetensors")
    other = save_random_checkpoint(tmp_path / "other", small=True, seed=1)
    assert _changed(load_mert(weights=other).embed(audio), a) > 5e-2


def test_layer_selection_changes_output(small, audio):
    embs = [load_mert(weights=small, layer=k).embed(audio) for k in (0, 1, 2)]
    for i in range(3):
        for j in range(i + 1, 3):
            assert _changed(embs[i], embs[j]) > 5e-3


def test_long_audio_is_encoded_in_chunks(small):
    y = _music(12.0, seed=3)
    enc = load_mert(weights=small, chunk_seconds=5.0)
    assert enc.chunk_bounds(y.size) == [(0, 96_000), (96_000, 192_000), (192_000, 288_000)]
    frames = enc.embed_frames(y)
    ref = np.concatenate([_direct(small, y[a:b], 2) for a, b in enc.chunk_bounds(y.size)])
    assert frames.shape == ref.shape == (3 * 299, 32)
    np.testing.assert_allclose(frames, ref, rtol=1e-4, atol=1e-5)
    whole = load_mert(weights=small, chunk_seconds=30.0)
    assert whole.chunk_bounds(y.size) == [(0, y.size)]
    np.testing.assert_allclose(whole.embed_frames(y), _direct(small, y, 2), rtol=1e-4, atol=1e-5)


def test_perturbed_checkpoint_changes_output(small, audio, tmp_path):
    folder = tmp_path / "perturbed"
    shutil.copytree(small, folder)
    sd = load_file(str(folder / "model.safetensors"))
    key = "encoder.layers.1.feed_forward.output_dense.weight"
    sd[key] = sd[key] + 0.5 * torch.randn(sd[key].shape, generator=torch.Generator().manual_seed(0))
    save_file(sd, str(folder / "model.safetensors"))
    base, changed = load_mert(weights=small), load_mert(weights=folder)
    assert _changed(changed.embed(audio), base.embed(audio)) > 5e-3
    assert base.info()["weights_sha256"] != changed.info()["weights_sha256"]
    # the layer before the perturbed one is unchanged
    np.testing.assert_array_equal(
        load_mert(weights=small, layer=1).embed(audio),
        load_mert(weights=folder, layer=1).embed(audio),
    )


def _rewrite(src, dst, edit):
    shutil.copytree(src, dst)
    sd = load_file(str(dst / "model.safetensors"))
    edit(sd)
    save_file(sd, str(dst / "model.safetensors"))
    return dst


def test_missing_key_is_refused(small, tmp_path):
    folder = _rewrite(
        small, tmp_path / "m", lambda sd: sd.pop("encoder.layers.0.attention.k_proj.bias")
    )
    with pytest.raises(
        FileFormatError, match=r"missing.*encoder\.layers\.0\.attention\.k_proj\.bias"
    ):
        load_mert(weights=folder)


def test_unknown_key_is_refused_and_extra_heads_are_ignored(small, audio, tmp_path):
    def add_layer(sd):
        sd["encoder.layers.7.final_layer_norm.weight"] = torch.ones(32)

    with pytest.raises(FileFormatError, match=r"encoder\.layers\.7"):
        load_mert(weights=_rewrite(small, tmp_path / "u", add_layer))

    def add_head(sd):
        sd["final_proj.weight"] = torch.zeros(8, 32)

    folder = _rewrite(small, tmp_path / "h", add_head)
    with pytest.warns(AriaWarning, match="final_proj.weight"):
        enc = load_mert(weights=folder)
    assert enc.info()["ignored_keys"] == ["final_proj.weight", "masked_spec_embed"]
    np.testing.assert_array_equal(enc.embed(audio), load_mert(weights=small).embed(audio))


def test_shape_mismatch_is_refused(small, tmp_path):
    def shrink(sd):
        sd["feature_projection.projection.bias"] = torch.zeros(16)

    with pytest.raises(FileFormatError, match="shapes differ"):
        load_mert(weights=_rewrite(small, tmp_path / "s", shrink))


def test_parametrized_weight_norm_and_bin_format_load(small, audio, tmp_path):
    def new_style(sd):
        base = "encoder.pos_conv_embed.conv."
        sd[base + "parametrizations.weight.original0"] = sd.pop(base + "weight_g")
        sd[base + "parametrizations.weight.original1"] = sd.pop(base + "weight_v")

    expected_emb = load_mert(weights=small).embed(audio)
    folder = _rewrite(small, tmp_path / "p", new_style)
    np.testing.assert_array_equal(load_mert(weights=folder).embed(audio), expected_emb)
    binary = save_random_checkpoint(tmp_path / "bin", small=True, weights_format="bin")
    assert not (binary / "model.safetensors").exists()
    enc = load_mert(weights=binary / "pytorch_model.bin")  # a file in the folder works too
    assert enc.info()["weights_file"] == "pytorch_model.bin"
    np.testing.assert_array_equal(enc.embed(audio), expected_emb)


def test_normalisation_follows_preprocessor_config(small, audio, tmp_path):
    assert load_mert(weights=small).normalize is False  # MERT's published do_normalize
    folder = tmp_path / "norm"
    shutil.copytree(small, folder)
    pre = json.loads((folder / "preprocessor_config.json").read_text())
    (folder / "preprocessor_config.json").write_text(json.dumps({**pre, "do_normalize": True}))
    on = load_mert(weights=folder)
    assert on.normalize is True and on.info()["normalize"] is True
    assert load_mert(weights=folder, normalize=False).normalize is False
    ref = _direct(folder, audio + 0.2, 2)  # transformers normalises the same way
    np.testing.assert_allclose(on.embed_frames(audio + 0.2), ref, rtol=1e-4, atol=1e-5)
    (folder / "preprocessor_config.json").unlink()
    assert load_mert(weights=folder).normalize is False  # MERT's default without the file
    # the group-norm front end makes MERT nearly blind to gain and offset anyway
    assert _cos(on.embed(audio + 0.2), load_mert(weights=small).embed(audio + 0.2)) > 0.999


def test_info_records_what_a_manifest_needs(small):
    info = load_mert(weights=small, layer=1).info()
    for key in (
        "encoder",
        "weights",
        "weights_sha256",
        "layer",
        "sample_rate",
        "window_seconds",
        "dim",
        "versions",
    ):
        assert key in info
    assert info["encoder"] == "mert" and info["layer"] == 1 and info["dim"] == 32
    assert info["weights_sha256"] == file_sha256(small / "model.safetensors")
    assert info["frame_rate_hz"] == 75.0 and info["window_seconds"] == 5.0
    assert set(info["versions"]) >= {"torch", "transformers"}
    json.dumps(info)


def test_missing_or_invalid_folder_names_the_files(small, tmp_path):
    with pytest.raises(ParameterError, match="huggingface-cli download m-a-p/MERT-v1-95M"):
        load_encoder("mert")
    with pytest.raises(ParameterError, match="MERT-v1-95M"):
        load_mert(weights=None)
    with pytest.raises(
        ParameterError, match=r"config\.json and model\.safetensors or pytorch_model\.bin"
    ):
        load_mert(weights=tmp_path / "nowhere")
    only_config = tmp_path / "only_config"
    only_config.mkdir()
    shutil.copy(small / "config.json", only_config)
    with pytest.raises(ParameterError, match=r"model\.safetensors or pytorch_model\.bin"):
        load_mert(weights=only_config)
    broken = tmp_path / "broken"
    shutil.copytree(small, broken)
    (broken / "model.safetensors").write_bytes(b"not a checkpoint")
    with pytest.raises(FileFormatError, match="not a readable checkpoint"):
        load_mert(weights=broken)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"feature_extractor_cqt": True}, "feature_extractor_cqt"),
        ({"deepnorm": True}, "deepnorm"),
        ({"model_type": "clap_model"}, "model_type"),
    ],
)
def test_configs_hubert_cannot_express_are_refused(small, tmp_path, change, message):
    folder = tmp_path / "cfg"
    shutil.copytree(small, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(FileFormatError, match=message):
        load_mert(weights=folder)


def test_bad_arguments_and_bad_audio(small):
    with pytest.raises(ParameterError, match="layer"):
        load_mert(weights=small, layer=3)
    with pytest.raises(ParameterError, match="chunk_seconds"):
        load_mert(weights=small, chunk_seconds=0.1)
    with pytest.raises(ParameterError, match="unknown option"):
        load_mert(weights=small, hop=3)
    enc = load_mert(weights=small)
    with pytest.raises(DataError, match="at least 400 samples"):
        enc.embed_frames(np.zeros(399, dtype=np.float32))
    assert enc.embed_frames(np.zeros(400, dtype=np.float32)).shape == (1, 32)
    with pytest.raises(DataError, match="finite"):
        enc.embed_frames(np.full(1000, np.nan, dtype=np.float32))
    with pytest.raises(DataError, match="mono"):
        enc.embed_frames(np.zeros((2, 1000), dtype=np.float32))


@pytest.mark.slow
def test_full_mert_v1_95m_config_is_768_d_and_equals_transformers(tmp_path):
    folder = save_random_checkpoint(tmp_path / "full")
    y = _music(4.0, seed=7)
    enc = load_mert(weights=folder)
    n_params = sum(p.numel() for p in enc.model.parameters())
    assert 94.0e6 < n_params < 94.7e6  # MERT-v1-95M: 94.4M (masked_spec_embed not counted)
    assert (enc.dim, enc.layer, enc.sample_rate) == (768, 12, SR)
    e = enc.embed(y)
    assert e.shape == (768,)
    ref, ref6 = _direct(folder, y, (12, 6))
    assert ref.shape == (299, 768)
    assert _cos(e, ref.astype(np.float64).mean(axis=0)) >= 0.9999
    mid = load_mert(weights=folder, layer=6)
    assert _cos(mid.embed(y), ref6.astype(np.float64).mean(axis=0)) >= 0.9999
    assert _changed(mid.embed(y), e) > 5e-3
