"""The ``clap`` encoder: LAION-CLAP's HTSAT audio tower, from a checkpoint in CLAP's own format.

Random weights are written as LAION-CLAP writes a checkpoint (``module.``-prefixed state dict
with text-tower tensors, numpy scalars in the optimizer state) and loaded through the real path
(``load_clap`` and ``load_encoder("clap", ...)``). Where ``laion-clap`` and ``torchlibrosa`` are
installed (``scripts/setup.sh --dev`` installs them with ``--no-deps``), the outputs are compared
with LAION-CLAP's own ``HTSAT_Swin_Transformer`` on the same state dict.
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import os
import pickle
import sys
import time
import types
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from aria_tda.embed.encoders import Encoder, load_encoder  # noqa: E402
from aria_tda.embed.encoders.clap import ClapEncoder, load_clap, save_random_checkpoint  # noqa: E402
from aria_tda.embed.encoders.clap.checkpoint import read_checkpoint  # noqa: E402
from aria_tda.embed.encoders.clap.config import BASE, SMALL  # noqa: E402
from aria_tda.embed.encoders.clap.encoder import clap_windows, quantize_int16  # noqa: E402
from aria_tda.embed.encoders.clap.frontend import mel_filterbank, stft_kernels  # noqa: E402
from aria_tda.errors import DataError, FileFormatError, ParameterError  # noqa: E402

SR = 48_000


@pytest.fixture(scope="module")
def small_ckpt(tmp_path_factory) -> Path:
    return save_random_checkpoint(tmp_path_factory.mktemp("clap") / "small.pt", seed=3, small=True)


@pytest.fixture(scope="module")
def small_enc(small_ckpt) -> ClapEncoder:
    return load_clap(weights=small_ckpt)


@pytest.fixture(scope="module")
def y10() -> np.ndarray:
    return _audio(10.0, seed=1)


@pytest.fixture(scope="module")
def base(small_enc, y10) -> np.ndarray:
    """The small encoder's embedding of ``y10`` (computed once: every window costs the same)."""
    return small_enc.embed_frames(y10)


def _audio(seconds: float, seed: int = 0) -> np.ndarray:
    """A chord with vibrato and a little noise: real, non-trivial audio at 48 kHz."""
    t = np.arange(int(seconds * SR)) / SR
    r = np.random.default_rng(seed)
    vibrato = 3 * np.sin(2 * np.pi * 5 * t)
    y = sum(0.2 * np.sin(2 * np.pi * f * t + vibrato) for f in (220, 277, 330))
    return (y + 0.01 * r.standard_normal(t.size)).astype(np.float32)


def _raw(path: Path) -> dict:
    # our own test file: a plain torch.load is fine here
    return torch.load(path, map_location="cpu", weights_only=False)


def test_loads_through_the_registry_with_shapes(small_ckpt, small_enc):
    enc = load_encoder("clap", weights=small_ckpt)
    assert isinstance(enc, ClapEncoder) and isinstance(enc, Encoder)
    assert enc.sample_rate == SR and enc.dim == SMALL.joint_dim
    frames = enc.embed_frames(_audio(3.0))
    assert frames.shape == (1, SMALL.joint_dim) and frames.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(frames, axis=1), 1.0, rtol=1e-5)
    info = enc.info()
    for key in ("encoder", "weights", "weights_sha256", "layer", "sample_rate", "window_seconds",
                "dim", "versions"):
        assert key in info
    assert info["encoder"] == "clap" and info["window_seconds"] == 10.0 and info["layer"] is None
    assert len(info["weights_sha256"]) == 64
    assert enc.cfg.depths == SMALL.depths and enc.cfg.num_heads == SMALL.num_heads


def test_deterministic_across_calls_and_loads(small_ckpt, small_enc, y10, base):
    np.testing.assert_array_equal(small_enc.embed_frames(y10.copy()), base)
    again = load_clap(weights=small_ckpt)
    np.testing.assert_array_equal(again.embed_frames(y10), base)
    assert not np.allclose(again.embed_frames(_audio(10.0, seed=2)), base)


def test_windows_are_embedded_separately_and_averaged(small_enc):
    y = _audio(14.0, seed=4)
    frames = small_enc.embed_frames(y)
    assert frames.shape[0] == 2  # 10 s + a repeat-padded 4 s tail
    for i, piece in enumerate((y[:480_000], y[480_000:])):
        np.testing.assert_allclose(small_enc.embed_frames(piece)[0], frames[i], atol=1e-6)
    np.testing.assert_allclose(small_enc.embed(y), frames.astype(np.float64).mean(0), atol=1e-12)
    assert not np.allclose(frames[0], frames[1])
    drop = load_clap(weights=small_enc.weights, tail="drop")
    np.testing.assert_allclose(drop.embed_frames(y), frames[:1], atol=1e-6)
    # a track shorter than one window is repeat-padded whatever the tail option
    np.testing.assert_allclose(drop.embed_frames(y[480_000:]), frames[1:], atol=1e-6)


def test_repeatpad_is_clap_s_rule():
    y = np.arange(1, 8, dtype=np.float32)  # 7 samples into windows of 20
    w = clap_windows(y, clip_samples=20)
    # floor(20 / 7) = 2 whole copies, then zeros (training/data.py, data_filling="repeatpad")
    np.testing.assert_array_equal(w[0], np.r_[y, y, np.zeros(6, np.float32)])
    w = clap_windows(np.arange(45, dtype=np.float32), clip_samples=20)
    assert w.shape == (3, 20)
    np.testing.assert_array_equal(w[2], np.r_[np.tile(np.arange(40, 45), 4)].astype(np.float32))
    dropped = clap_windows(np.arange(45, dtype=np.float32), clip_samples=20, tail="drop")
    assert dropped.shape == (2, 20)
    q = quantize_int16(np.array([2.0, -2.0, 0.5, -0.00001], dtype=np.float32))
    np.testing.assert_allclose(q, [1.0, -1.0, 16383 / 32767, 0.0])


def test_perturbed_audio_weight_changes_output_text_weights_do_not(small_ckpt, y10, base, tmp_path):
    y = y10
    ck = _raw(small_ckpt)
    ck["state_dict"]["module.audio_branch.layers.2.blocks.1.mlp.fc2.weight"] += 0.05
    torch.save(ck, tmp_path / "audio.pt")
    assert np.abs(load_clap(weights=tmp_path / "audio.pt").embed_frames(y) - base).max() > 1e-4
    ck = _raw(small_ckpt)
    ck["state_dict"]["module.audio_projection.2.bias"] += 0.05
    torch.save(ck, tmp_path / "proj.pt")
    assert np.abs(load_clap(weights=tmp_path / "proj.pt").embed_frames(y) - base).max() > 1e-4
    ck = _raw(small_ckpt)
    for key in list(ck["state_dict"]):
        if key.startswith(("module.text_", "module.audio_transform", "module.logit_scale",
                           "module.audio_branch.tscam_conv", "module.audio_branch.head")):
            ck["state_dict"][key] = ck["state_dict"][key] + 1.0
    torch.save(ck, tmp_path / "text.pt")
    np.testing.assert_array_equal(load_clap(weights=tmp_path / "text.pt").embed_frames(y), base)


def test_missing_or_unexpected_audio_keys_are_refused(small_ckpt, tmp_path):
    ck = _raw(small_ckpt)
    del ck["state_dict"]["module.audio_branch.layers.0.blocks.1.attn.qkv.weight"]
    torch.save(ck, tmp_path / "missing.pt")
    with pytest.raises(FileFormatError, match=r"lacks 1 audio tensor.*layers\.0\.blocks\.1\.attn"):
        load_clap(weights=tmp_path / "missing.pt")
    ck = _raw(small_ckpt)
    ck["state_dict"]["module.audio_branch.fusion_model.local_att.0.weight"] = torch.zeros(2)
    torch.save(ck, tmp_path / "fusion.pt")
    with pytest.raises(FileFormatError, match="feature-fusion"):
        load_clap(weights=tmp_path / "fusion.pt")
    ck = _raw(small_ckpt)
    ck["state_dict"]["module.something_else.weight"] = torch.zeros(2)
    torch.save(ck, tmp_path / "unknown.pt")
    with pytest.raises(FileFormatError, match="unexpected top-level"):
        load_clap(weights=tmp_path / "unknown.pt")
    ck = _raw(small_ckpt)
    key = "module.audio_projection.0.weight"
    ck["state_dict"][key] = ck["state_dict"][key][:, :-1]
    torch.save(ck, tmp_path / "shape.pt")
    with pytest.raises(FileFormatError, match="shape"):
        load_clap(weights=tmp_path / "shape.pt")
    ck = _raw(small_ckpt)
    ck["state_dict"] = {k: v for k, v in ck["state_dict"].items() if "audio_branch" not in k}
    torch.save(ck, tmp_path / "noaudio.pt")
    with pytest.raises(FileFormatError, match="no audio_branch"):
        load_clap(weights=tmp_path / "noaudio.pt")


def test_bare_state_dict_without_module_prefix_loads(small_ckpt, y10, base, tmp_path):
    sd = {k.removeprefix("module."): v for k, v in _raw(small_ckpt)["state_dict"].items()}
    torch.save(sd, tmp_path / "bare.pt")
    np.testing.assert_array_equal(load_clap(weights=tmp_path / "bare.pt").embed_frames(y10), base)


def _resave(src: Path, dst: Path, *, old_numpy: bool) -> None:
    """Copy a torch zip checkpoint, renaming numpy._core to numpy.core in its pickle (as a
    checkpoint written with numpy 1.x names it)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if old_numpy and info.filename.endswith("data.pkl"):
                assert b"numpy._core.multiarray\n" in data
                data = data.replace(b"numpy._core.multiarray\n", b"numpy.core.multiarray\n")
            zout.writestr(info, data)


def test_checkpoint_with_numpy_scalars_needs_aria_s_loader(small_ckpt, y10, base, tmp_path):
    old = tmp_path / "old_numpy.pt"
    _resave(small_ckpt, old, old_numpy=True)
    # torch's default safe loader refuses the numpy scalar in the optimizer state …
    with pytest.raises(pickle.UnpicklingError, match="numpy"):
        torch.load(old, map_location="cpu", weights_only=True)
    # … ARIA's restricted unpickler reads it (and a protocol-4 pickle) without running code
    np.testing.assert_array_equal(load_clap(weights=old).embed_frames(y10), base)
    p4 = tmp_path / "p4.pt"
    torch.save(_raw(small_ckpt), p4, pickle_protocol=4)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(p4, map_location="cpu", weights_only=True)
    np.testing.assert_array_equal(load_clap(weights=p4).embed_frames(y10), base)
    legacy = tmp_path / "legacy.pt"  # torch's pre-1.6 (non-zip) format
    torch.save(_raw(small_ckpt), legacy, _use_new_zipfile_serialization=False)
    np.testing.assert_array_equal(load_clap(weights=legacy).embed_frames(y10), base)


class _Payload:
    def __init__(self, target: str) -> None:
        self.target = target

    def __reduce__(self):
        return (os.makedirs, (self.target,))


def test_code_in_the_checkpoint_never_runs(small_ckpt, tmp_path):
    marker = tmp_path / "pwned"
    ck = _raw(small_ckpt)
    ck["name"] = _Payload(str(marker))
    torch.save(ck, tmp_path / "evil.pt")
    enc = load_clap(weights=tmp_path / "evil.pt")  # loads: the payload became an inert object
    assert enc.embed_frames(_audio(1.0)).shape == (1, SMALL.joint_dim)
    assert not marker.exists()
    ck["state_dict"]["module.audio_projection.0.bias"] = _Payload(str(marker))
    torch.save(ck, tmp_path / "evil2.pt")
    with pytest.raises(FileFormatError, match="not a tensor"):
        read_checkpoint(tmp_path / "evil2.pt")
    assert not marker.exists()


def test_bad_arguments_are_refused(small_ckpt, small_enc, tmp_path):
    with pytest.raises(ParameterError, match=r"music_speech_audioset_epoch_15_esc_89\.98\.pt"):
        load_encoder("clap", weights=None)
    with pytest.raises(ParameterError, match="layer"):
        load_clap(weights=small_ckpt, layer=3)
    with pytest.raises(ParameterError, match="unknown option"):
        load_clap(weights=small_ckpt, crop="random")
    with pytest.raises(ParameterError, match="tail"):
        load_clap(weights=small_ckpt, tail="wrap")
    with pytest.raises(FileFormatError, match="weights"):
        load_clap(weights=tmp_path / "absent.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(FileFormatError, match="not a readable torch checkpoint"):
        load_clap(weights=tmp_path / "junk.pt")
    with pytest.raises(DataError, match="mono"):
        small_enc.embed_frames(np.zeros((2, 100), np.float32))
    with pytest.raises(DataError, match="mono"):
        small_enc.embed_frames(np.zeros(0, np.float32))
    with pytest.raises(DataError, match="finite"):
        small_enc.embed_frames(np.full(100, np.nan, np.float32))


def test_front_end_matches_librosa_mel():
    librosa = pytest.importorskip("librosa")
    want = librosa.filters.mel(sr=SR, n_fft=1024, n_mels=64, fmin=50, fmax=14000).T
    np.testing.assert_allclose(mel_filterbank(SR, 1024, 64, 50.0, 14000.0), want, atol=1e-7)
    real, imag = stft_kernels(1024)
    y = _audio(0.5)
    frame = y[1000:2024]
    spec = np.fft.rfft(frame * librosa.filters.get_window("hann", 1024, fftbins=True))
    np.testing.assert_allclose(real[:, 0] @ frame, spec.real, atol=2e-4)
    np.testing.assert_allclose(imag[:, 0] @ frame, spec.imag, atol=2e-4)


# --- equivalence with LAION-CLAP's own module ------------------------------------------------


def _laion_htsat_module():
    """LAION-CLAP's ``clap_module/htsat.py`` imported on its own (its package ``__init__``
    pulls the text tower, torchvision and downloads; ``utils.py`` imports torchvision and h5py
    for functions HTSAT never calls — stubbed only while importing)."""
    pytest.importorskip("torchlibrosa", reason="torchlibrosa not installed (setup.sh --dev)")
    spec = importlib.util.find_spec("laion_clap")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("laion-clap not installed (scripts/setup.sh --dev installs it with --no-deps)")
    where = Path(next(iter(spec.submodule_search_locations))) / "clap_module"
    pkg = types.ModuleType("_laion_clap_ref")
    pkg.__path__ = [str(where)]
    stubs = {"torchvision": types.ModuleType("torchvision"),
             "torchvision.ops": types.ModuleType("torchvision.ops"),
             "torchvision.ops.misc": types.ModuleType("torchvision.ops.misc"),
             "h5py": types.ModuleType("h5py")}
    stubs["torchvision.ops.misc"].FrozenBatchNorm2d = type("FrozenBatchNorm2d", (), {})
    with pytest.MonkeyPatch.context() as mp:
        for name, mod in stubs.items():
            if name not in sys.modules:
                mp.setitem(sys.modules, name, mod)
        mp.setitem(sys.modules, "_laion_clap_ref", pkg)
        for sub in ("utils", "feature_fusion", "htsat"):
            mp.delitem(sys.modules, f"_laion_clap_ref.{sub}", raising=False)
        return importlib.import_module("_laion_clap_ref.htsat")


def _laion_embeddings(ckpt: Path, cfg, windows: np.ndarray) -> np.ndarray:
    htsat = _laion_htsat_module()
    audio_cfg = SimpleNamespace(sample_rate=48000, window_size=1024, hop_size=480, mel_bins=64,
                                fmin=50, fmax=14000, class_num=527)
    ref = htsat.HTSAT_Swin_Transformer(
        spec_size=256, patch_size=4, patch_stride=(4, 4), num_classes=527,
        embed_dim=cfg.embed_dim, depths=list(cfg.depths), num_heads=list(cfg.num_heads),
        window_size=8, config=audio_cfg,
    )
    sd = _raw(ckpt)["state_dict"]
    tower = {k[len("module.audio_branch."):]: v for k, v in sd.items()
             if k.startswith("module.audio_branch.")}
    ref.load_state_dict(tower, strict=True)  # CLAP's own tower takes exactly our audio keys
    proj = torch.nn.Sequential(torch.nn.Linear(cfg.num_features, cfg.joint_dim), torch.nn.ReLU(),
                               torch.nn.Linear(cfg.joint_dim, cfg.joint_dim))
    proj.load_state_dict({k[len("module.audio_projection."):]: v for k, v in sd.items()
                          if k.startswith("module.audio_projection.")})
    ref.eval()
    with torch.no_grad():
        out = ref({"waveform": torch.from_numpy(windows)}, device="cpu")["embedding"]
        return torch.nn.functional.normalize(proj(out), dim=-1).numpy()


def test_equals_laion_clap_htsat_small(small_ckpt, small_enc):
    y = _audio(13.0, seed=7)  # a full window and a repeat-padded tail
    wins = clap_windows(quantize_int16(y), clip_samples=480_000)
    want = _laion_embeddings(small_ckpt, SMALL, wins)
    got = small_enc.embed_frames(y)
    assert got.shape == want.shape == (2, SMALL.joint_dim)
    np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.slow
def test_full_size_htsat_base(tmp_path):
    path = save_random_checkpoint(tmp_path / "base.pt", seed=1)
    enc = load_clap(weights=path)
    assert enc.cfg == BASE and enc.dim == 512 and enc.cfg.num_features == 1024
    weights = enc.model.audio_projection[0].weight
    assert tuple(weights.shape) == (512, 1024)
    n_params = sum(p.numel() for p in enc.model.parameters())
    assert 65e6 < n_params < 72e6, n_params  # 68.6 M: stages of 128, 256, 512, 1024 wide
    y = _audio(30.0, seed=8)
    t0 = time.perf_counter()
    frames = enc.embed_frames(y)
    seconds = time.perf_counter() - t0
    assert frames.shape == (3, 512)
    np.testing.assert_allclose(np.linalg.norm(frames, axis=1), 1.0, rtol=1e-5)
    print(f"\nHTSAT-base, random weights: {seconds:.2f} s per 30 s track "
          f"({torch.get_num_threads()} threads), {n_params / 1e6:.1f} M audio parameters")
    if importlib.util.find_spec("laion_clap") is not None:
        want = _laion_embeddings(path, BASE, clap_windows(quantize_int16(y[:480_000])))
        np.testing.assert_allclose(frames[:1], want, atol=1e-5)


def test_restricted_pickle_reads_plain_objects():
    # the restricted module is a working pickle "module" for simple data
    from aria_tda.embed.encoders.clap.checkpoint import _restricted_pickle

    data = pickle.dumps({"a": [1, 2.5, "x"], "b": (np.float64(0.25),)}, protocol=2)
    back = _restricted_pickle.load(io.BytesIO(data))
    assert back["a"] == [1, 2.5, "x"] and float(back["b"][0]) == 0.25
