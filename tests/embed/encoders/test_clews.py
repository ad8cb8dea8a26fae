"""CLEWS: ARIA's implementation loading checkpoints in the authors' Fabric format.

Random weights are written in the authors' format (``save_random_checkpoint``), loaded back
through :func:`load_clews` and the registry, and checked for shapes, determinism, segmenting and
averaging, sensitivity to the weights and refusal of checkpoints that do not fit. The CQT front
end is checked against the direct sum and, when nnAudio is installed, against nnAudio itself.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from aria_tda.embed.encoders import load_encoder
from aria_tda.embed.encoders.clews import ClewsEncoder, load_clews, save_random_checkpoint
from aria_tda.embed.encoders.clews.checkpoint import read_checkpoint
from aria_tda.embed.encoders.clews.cqt import (
    ConstantQ,
    cqt_kernels,
    cqt_magnitude,
    cqt_magnitude_reference,
)
from aria_tda.embed.encoders.clews.model import ClewsConfig, ClewsNet, shingle
from aria_tda.errors import DataError, FileFormatError, ParameterError

SR = 16_000

# config/shs-clews.yaml of github.com/sony/clews (the parts the model reads), as published
SHS_CLEWS_YAML = {
    "data": {"samplerate": 16000},
    "model": {
        "name": "clews",
        "shingling": {"len": 20, "hop": 20},
        "cqt": {"hoplen": 0.02, "noctaves": 7, "nbinsoct": 12, "fscale": 1, "pool": 5},
        "frontend": {"cqtpow": 0.5, "channels": [128, 256]},
        "backbone": {
            "blocks": [3, 4, 6, 3],
            "channels": [256, 512, 1024, 2048],
            "down": [1, 2, 2, 1],
        },
        "zdim": 2048,
    },
}


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    # torch's thread pool spins badly on a shared, oversubscribed machine; one thread is
    # 10-100x faster there and these models are small
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory) -> Path:
    return save_random_checkpoint(
        tmp_path_factory.mktemp("clews") / "checkpoint_best.ckpt", seed=1, small=True
    )


@pytest.fixture(scope="module")
def enc(ckpt) -> ClewsEncoder:
    return load_clews(weights=ckpt)


def _audio(seconds: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SR)) / SR
    tone = sum(np.sin(2 * np.pi * f * t) for f in rng.uniform(80, 2000, 5))
    return (0.1 * tone + 0.02 * rng.standard_normal(t.size)).astype(np.float32)


def _rewrite(src: Path, dst: Path, edit) -> Path:
    state = torch.load(src, weights_only=False)
    edit(state["model"])
    dst.parent.mkdir(parents=True, exist_ok=True)
    torch.save(state, dst)
    return dst


# --------------------------------------------------------------------------- architecture


def test_default_config_is_the_authors_shs_clews():
    assert ClewsConfig.from_conf(SHS_CLEWS_YAML) == ClewsConfig()
    assert ClewsConfig().to_conf()["model"]["backbone"] == SHS_CLEWS_YAML["model"]["backbone"]


def test_full_architecture_has_the_authors_keys_and_size():
    with torch.device("meta"):
        net = ClewsNet(ClewsConfig())
    sd = net.state_dict()
    for key in (
        "cqt.0.lenghts",
        "cqt.0.cqt_kernels_real",
        "cqt.0.cqt_kernels_imag",
        "frontend.0.gain",
        "frontend.0.bias",
        "frontend.1.weight",
        "frontend.2.running_var",
        "frontend.4.weight",
        "backbone.0.gain",
        "backbone.0.convs.0.bn.weight",
        "backbone.0.convs.0.inst.weight",
        "backbone.0.convs.2.conv.weight",
        "backbone.0.convs.5.conv.weight",
        "backbone.3.skip.0.weight",
        "backbone.3.skip.2.conv.weight",
        "pool.p",
        "proj.0.running_mean",
        "proj.1.weight",
    ):
        assert key in sd, key
    assert "backbone.0.skip.0.weight" not in sd  # identity skip: 256 -> 256, stride 1
    assert len([k for k in sd if k.endswith(".gain") and k.startswith("backbone.")]) == 16
    assert tuple(sd["cqt.0.cqt_kernels_real"].shape) == (84, 1, 16384)
    assert tuple(sd["frontend.1.weight"].shape) == (128, 1, 12, 3)
    assert tuple(sd["backbone.13.convs.2.conv.weight"].shape) == (1024, 1024, 3, 3)
    assert tuple(sd["proj.1.weight"].shape) == (2048, 2048)
    n_params = sum(p.numel() for p in net.parameters())
    assert 198_800_000 < n_params < 199_000_000  # 198.89M


# --------------------------------------------------------------------------- loading


def test_checkpoint_is_the_authors_fabric_dict(ckpt):
    obj = torch.load(ckpt, weights_only=False)
    assert set(obj) == {"model", "optim", "sched", "conf", "epoch", "lr", "cost_best"}
    assert not any(k.startswith("module.") for k in obj["model"])
    assert obj["conf"]["model"]["name"] == "clews"
    assert (ckpt.parent / "configuration.yaml").is_file()


def test_load_direct_and_through_the_registry(ckpt, enc):
    reg = load_encoder("clews", weights=ckpt)
    assert isinstance(reg, ClewsEncoder) and isinstance(enc, ClewsEncoder)
    assert (enc.sample_rate, enc.dim) == (SR, 32)
    info = enc.info()
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
    assert info["encoder"] == "clews" and info["layer"] is None
    assert info["window_seconds"] == 4.0 and info["hop_seconds"] == 1.0  # small: 4 s windows
    assert len(info["weights_sha256"]) == 64
    assert info["config_source"].endswith("configuration.yaml")
    y = _audio(5.5)
    np.testing.assert_array_equal(reg.embed_frames(y), enc.embed_frames(y))


# The authors' own model (sony/clews models/clews.py @517de18 with nnAudio 0.3.3), built from the
# configuration.yaml that save_random_checkpoint(seed=1, small=True) writes and loaded strictly
# from that checkpoint, embeds _audio(5.5) with shingle_hop=1.0 as follows (first 6 dimensions
# of each 4 s segment, and the norms). The weights come from torch's seeded CPU generator: a
# torch release that changed its initialisers would move these and need them regenerated.
AUTHORS_FIRST_DIMS = np.array(
    [
        [0.152097, 0.040293, 0.024664, -0.029686, 0.046385, 0.028376],
        [0.149679, 0.038042, 0.026710, -0.029483, 0.047694, 0.027254],
        [0.155211, 0.036205, 0.024879, -0.028444, 0.045791, 0.029851],
    ]
)
AUTHORS_NORMS = np.array([0.454904, 0.453201, 0.453297])


def test_matches_the_authors_model_on_their_checkpoint_format(enc):
    z = enc.embed_frames(_audio(5.5))
    assert z.shape == (3, 32)
    np.testing.assert_allclose(z[:, :6], AUTHORS_FIRST_DIMS, atol=2e-5)
    np.testing.assert_allclose(np.linalg.norm(z, axis=1), AUTHORS_NORMS, rtol=1e-4)


def test_shapes_and_segment_count(enc):
    for seconds, n in ((1.5, 1), (4.0, 1), (5.2, 3), (9.0, 6)):
        f = enc.embed_frames(_audio(seconds))
        assert f.shape == (n, 32) and f.dtype == np.float32 and np.isfinite(f).all()
    e = enc.embed(_audio(9.0))
    assert e.shape == (32,) and e.dtype == np.float64


def test_deterministic_across_calls_loads_and_batches(ckpt, enc):
    y = _audio(6.5, seed=3)
    a = enc.embed_frames(y)
    np.testing.assert_array_equal(a, enc.embed_frames(y))
    np.testing.assert_array_equal(a, load_clews(weights=ckpt).embed_frames(y))
    np.testing.assert_allclose(
        load_clews(weights=ckpt, batch_size=1).embed_frames(y), a, rtol=1e-5, atol=1e-6
    )
    assert not np.allclose(enc.embed_frames(_audio(6.5, seed=4)), a, atol=1e-4)


def test_segments_embedded_independently_and_averaged(enc):
    y = _audio(6.2, seed=5)
    frames = enc.embed_frames(y)
    segs = enc.segments(y)
    assert segs.shape == (4, 4 * SR)  # starts 0, 1, 2, 3 s; the last completed by looping
    for i, seg in enumerate(segs):
        np.testing.assert_allclose(enc.embed_frames(seg)[0], frames[i], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(enc.embed(y), frames.astype(np.float64).mean(0), rtol=1e-12)
    wide = load_clews(weights=enc.weights, hop_seconds=4.0).embed_frames(y)
    assert wide.shape == (2, 32)  # 0-4 s and 4-6.2 s completed with 0-1.8 s
    np.testing.assert_allclose(wide[0], frames[0], rtol=1e-5, atol=1e-6)


def test_shingle_loops_short_tracks_and_completes_the_last_segment():
    y = np.arange(7, dtype=np.float32)
    np.testing.assert_array_equal(shingle(y, 10, 5), [[0, 1, 2, 3, 4, 5, 6, 0, 1, 2]])
    y = np.arange(23, dtype=np.float32)
    s = shingle(y, 10, 5)  # 23 -> ceil(13/5)*5 + 10 = 25 samples: 0..22, 0, 1
    assert s.shape == (4, 10)
    np.testing.assert_array_equal(s[-1], [15, 16, 17, 18, 19, 20, 21, 22, 0, 1])
    np.testing.assert_array_equal(shingle(np.arange(20.0), 10, 5)[-1], np.arange(10, 20))


def test_perturbed_checkpoint_changes_the_output(ckpt, enc, tmp_path):
    y = _audio(4.5, seed=6)
    base = enc.embed_frames(y)
    for key in ("proj.1.weight", "backbone.3.convs.5.conv.weight", "frontend.1.weight"):

        def bump(sd, key=key):
            sd[key] = sd[key] + 0.05 * torch.randn_like(sd[key])

        other = _rewrite(ckpt, tmp_path / key / "checkpoint_best.ckpt", bump)
        got = load_clews(weights=other, config=str(ckpt.parent / "configuration.yaml"))
        assert got.weights_sha256 != enc.weights_sha256
        assert np.abs(got.embed_frames(y) - base).max() > 1e-4, key


def test_missing_unexpected_and_misshapen_keys_are_refused(ckpt, tmp_path):
    cfg = str(ckpt.parent / "configuration.yaml")
    gone = _rewrite(ckpt, tmp_path / "a.ckpt", lambda sd: sd.pop("pool.p"))
    with pytest.raises(FileFormatError, match=r"missing keys: pool\.p"):
        load_clews(weights=gone, config=cfg)
    extra = _rewrite(ckpt, tmp_path / "b.ckpt", lambda sd: sd.update(extra=torch.zeros(1)))
    with pytest.raises(FileFormatError, match="unexpected keys: extra"):
        load_clews(weights=extra, config=cfg)
    # the full architecture's configuration against the small weights: shapes differ
    full = _write_yaml(tmp_path / "full.yaml", ClewsConfig().to_conf())
    with pytest.raises(
        FileFormatError,
        match=r"shape mismatches: backbone\.0\.convs\.0\.bn\.bias \(8,\) vs \(128,\)",
    ):
        load_clews(weights=ckpt, config=full)


def _write_yaml(path: Path, conf: dict) -> str:
    import yaml

    path.write_text(yaml.safe_dump(conf))
    return str(path)


def test_config_from_the_checkpoint_when_no_yaml_beside(tmp_path):
    p = save_random_checkpoint(tmp_path / "x.ckpt", seed=2, small=True, write_config=False)
    e = load_clews(weights=p)
    assert e.config_source == "checkpoint" and e.dim == 32
    bare = tmp_path / "bare" / "bare.ckpt"
    bare.parent.mkdir()
    torch.save(torch.load(p, weights_only=False)["model"], bare)  # a bare state dict
    with pytest.raises(FileFormatError, match="shape mismatches"):
        load_clews(weights=bare)  # no configuration anywhere: shs-clews's, which does not fit
    small = Path(_write_yaml(tmp_path / "small.yaml", e.config.to_conf()))
    y = _audio(4.5, seed=11)
    want = e.embed_frames(y)
    np.testing.assert_array_equal(load_clews(weights=bare, config=small).embed_frames(y), want)
    legacy = tmp_path / "legacy.ckpt"  # pre-zip torch.save format: read without memory-mapping
    torch.save(torch.load(p, weights_only=False), legacy, _use_new_zipfile_serialization=False)
    np.testing.assert_array_equal(load_clews(weights=legacy).embed_frames(y), want)
    with pytest.raises(ParameterError, match="config"):
        load_clews(weights=p, config=3)


class DictConfig:  # pickled under this module's name: a stand-in for OmegaConf's class path
    def __init__(self, content):
        self._content = content
        self._metadata = None


class AnyNode:
    def __init__(self, val):
        self._val = val


class _Boom:
    def __reduce__(self):
        return (os.system, (f"touch {self.target}",))


def test_stored_omegaconf_style_conf_is_read_without_running_code(tmp_path):
    p = save_random_checkpoint(tmp_path / "o.ckpt", seed=2, small=True, write_config=False)
    obj = torch.load(p, weights_only=False)
    model = obj["conf"]["model"]

    def node(v):
        if isinstance(v, dict):
            return DictConfig({k: node(x) for k, x in v.items()})
        return AnyNode(v)

    boom = _Boom()
    boom.target = str(tmp_path / "pwned")
    obj["conf"] = DictConfig({"model": node(model), "data": node({"samplerate": 16000})})
    obj["extra"] = boom
    torch.save(obj, tmp_path / "authors.ckpt", pickle_protocol=pickle.DEFAULT_PROTOCOL)
    state, conf = read_checkpoint(tmp_path / "authors.ckpt")
    assert not (tmp_path / "pwned").exists()
    assert conf["model"]["backbone"]["channels"] == [16, 16, 32, 32]
    assert ClewsConfig.from_conf(conf).zdim == 32
    assert "pool.p" in state


def test_user_mistakes(ckpt, tmp_path):
    with pytest.raises(ParameterError, match="shs-clews checkpoint"):
        load_encoder("clews")
    with pytest.raises(ParameterError, match="shs-clews"):
        load_clews(weights=None)
    with pytest.raises(ParameterError, match="layer"):
        load_clews(weights=ckpt, layer=3)
    with pytest.raises(ParameterError, match="unknown option"):
        load_clews(weights=ckpt, window=3)
    with pytest.raises(ParameterError, match="hop_seconds"):
        load_clews(weights=ckpt, hop_seconds=0)
    with pytest.raises(ParameterError, match="weights"):
        load_clews(weights=tmp_path / "nope.ckpt")
    junk = tmp_path / "junk.ckpt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(FileFormatError, match="torch checkpoint"):
        load_clews(weights=junk)


def test_bad_audio_is_refused(enc):
    with pytest.raises(DataError, match="mono"):
        enc.embed_frames(np.zeros((2, SR), dtype=np.float32))
    with pytest.raises(DataError, match="mono"):
        enc.embed_frames(np.zeros(0, dtype=np.float32))
    with pytest.raises(DataError, match="finite"):
        enc.embed_frames(np.full(SR, np.nan, dtype=np.float32))


def test_silence_is_deterministic_and_seeded(ckpt, enc):
    z = np.zeros(2 * SR, dtype=np.float32)
    a = enc.embed_frames(z)
    assert np.isfinite(a).all()
    np.testing.assert_array_equal(a, enc.embed_frames(z))
    b = load_clews(weights=ckpt, noise_seed=1).embed_frames(z)
    assert not np.allclose(a, b)  # on silence the 1e-6 noise is all the model sees


# --------------------------------------------------------------------------- CQT front end


def test_cqt_matches_the_direct_sum_with_clews_kernels():
    kernels, lengths, freqs = cqt_kernels(SR)
    assert kernels.shape == (84, 16384) and kernels.dtype == np.complex64
    assert freqs[0] == pytest.approx(32.70) and freqs[-1] == pytest.approx(32.70 * 2 ** (83 / 12))
    assert lengths[0] == np.ceil(SR / (2 ** (1 / 12) - 1) / 32.70)
    y = _audio(0.7, seed=8)
    fast = cqt_magnitude(y, kernels.real, kernels.imag, lengths, hop_length=320)
    ref = cqt_magnitude_reference(y, kernels.real, kernels.imag, lengths, hop_length=320)
    assert fast.shape == ref.shape == (84, len(y) // 320 + 1)
    np.testing.assert_allclose(fast, ref, rtol=1e-4, atol=1e-5 * ref.max())


@pytest.mark.parametrize(("freq", "bin_"), [(440.0, 45), (110.0, 21), (1000.0, 59), (3000, 78)])
def test_pure_tone_lands_in_its_bin(freq, bin_):
    t = np.arange(SR) / SR
    y = np.sin(2 * np.pi * freq * t).astype(np.float32)
    cqt = ConstantQ(SR, 320)
    with torch.inference_mode():
        c = cqt(torch.from_numpy(y)[None])[0].numpy()
    mid = c[:, 15:-15]  # away from the reflect-padded edges
    assert (mid.argmax(axis=0) == bin_).all()
    # L1-normalised kernels times sqrt(N_k): a unit sinusoid at a bin's centre reads
    # sqrt(N_k) / 2 there
    k = int(np.argmin(np.abs(cqt.frequencies - freq)))
    centred = np.sin(2 * np.pi * cqt.frequencies[k] * t).astype(np.float32)
    with torch.inference_mode():
        level = cqt(torch.from_numpy(centred)[None])[0, k, 15:-15].numpy()
    assert level.mean() == pytest.approx(np.sqrt(float(cqt.lenghts[k])) / 2, rel=0.01)


def test_cqt_equals_nnaudio():
    features = pytest.importorskip("nnAudio.features")
    ref = features.CQT1992v2(
        sr=SR,
        hop_length=320,
        n_bins=84,
        bins_per_octave=12,
        filter_scale=1,
        trainable=False,
        verbose=False,
    )
    ours = ConstantQ(SR, 320)
    for key, value in ref.state_dict().items():
        torch.testing.assert_close(ours.state_dict()[key], value, rtol=0, atol=0)
    x = torch.from_numpy(np.stack([_audio(1.5, seed=9), _audio(1.5, seed=10)]))
    with torch.inference_mode():
        torch.testing.assert_close(ours(x), ref(x), rtol=1e-5, atol=1e-5 * float(ref(x).max()))
