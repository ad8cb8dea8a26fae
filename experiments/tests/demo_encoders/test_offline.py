"""Offline encoders: front ends, the three training loops, checkpoints, the Encoder contract.

Real torch models trained for a few steps on synthesised audio: four "works" (tone
sequences), each played by two "instruments" (harmonic envelopes) at two tempi and keys.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pytest
import torch

from aria_tda.embed.encoders import load_encoder
from aria_tda.errors import DataError, FileFormatError, ParameterError
from aria_tda_experiments.encoders import (
    ClapStyleConfig,
    ClewsStyleConfig,
    MertStyleConfig,
    OfflineEncoder,
    front_end,
    load_offline,
    read_checkpoint,
    save_checkpoint,
)
from aria_tda_experiments.encoders.encoder import build_model, clews_input, input_bins
from aria_tda_experiments.encoders.frontends import cqt, log_mel
from aria_tda_experiments.encoders.models import ConvEncoder
from aria_tda_experiments.encoders.train import (
    _draw_shift,
    _register,
    _same_family_firsts,
    caption_vocab,
    train_audio_text,
    train_masked_prediction,
    train_version_contrastive,
)

SMALL: dict[str, Any] = {"window_seconds": 1.0, "window_hop_seconds": 0.5, "batch_size": 8,
                         "lr": 3e-3}
CLEWS = ClewsStyleConfig(**SMALL, steps=30, channels=(4, 8), dim=16, n_bins=48, hop=320,
                         n_models=1)
MERT = MertStyleConfig(**SMALL, steps=30, d_model=16, n_layers=2, n_heads=2, d_ff=32,
                       vocab=6, n_mels=16, n_fft=512)
CLAP = ClapStyleConfig(**SMALL, steps=30, channels=(4, 8), dim=16, n_mels=16, n_fft=512,
                       text_width=8)


def _melody(work: int, instrument: int, tempo: float, shift: int, sr: int,
            seconds: float = 2.0) -> np.ndarray:
    rng = np.random.default_rng([7, work])
    notes = 57 + rng.integers(0, 12, size=16) + shift
    t = np.arange(int(seconds * sr)) / sr
    idx = np.minimum((t * 4 * tempo).astype(int) % len(notes), len(notes) - 1)
    f0 = 440.0 * 2.0 ** ((notes[idx] - 69) / 12)
    phase = 2 * np.pi * np.cumsum(f0) / sr
    amps = (1.0, 0.6, 0.3) if instrument == 0 else (0.3, 0.2, 0.9)
    y = sum(a * np.sin((h + 1) * phase) for h, a in enumerate(amps))
    return (0.1 * y / np.sqrt(np.mean(y ** 2))).astype(np.float32)


def _tracks(sr: int) -> tuple[list[np.ndarray], list[int]]:
    ys, groups = [], []
    for w in range(4):
        for v in range(2):
            ys.append(_melody(w, v, 1.0 + 0.1 * v, v, sr))
            groups.append(w)
    return ys, groups


@pytest.fixture(scope="module")
def clews_trained():
    ys, groups = _tracks(CLEWS.sample_rate)
    feats = [front_end(y, CLEWS) for y in ys]
    return train_version_contrastive(feats, groups, config=CLEWS, seed=1)


def _save(tmp_path, name, config, model, extra=None, seed=1):
    return save_checkpoint(tmp_path / f"{name}.pt", name=name, config=config, model=model,
                           corpus_digest="abc", seed=seed, training={"losses": [1.0]},
                           extra=extra)


def _falls(losses: list[float]) -> bool:
    k = max(1, len(losses) // 5)
    return float(np.mean(losses[-k:])) < float(np.mean(losses[:k]))


# front ends ---------------------------------------------------------------------------------


def test_cqt_peaks_at_the_note_and_frames_follow_the_hop():
    sr, hop = 16_000, 640
    y = np.sin(2 * np.pi * 440.0 * np.arange(sr) / sr)
    c = cqt(y, sr=sr, hop=hop)
    assert c.shape == (sr // hop, 84)
    assert np.all(c[5:-5].argmax(axis=1) == 45)  # A4 is 45 semitones above C1
    assert cqt(y[: hop * 3 + 5], sr=sr, hop=hop).shape == (3, 84)


def test_log_mel_shape_and_level():
    sr, hop = 24_000, 480
    y = np.random.default_rng(0).standard_normal(sr).astype(np.float32)
    m = log_mel(y, sr=sr, hop=hop, n_mels=32)
    assert m.shape == (sr // hop, 32)
    assert np.allclose(log_mel(2 * y, sr=sr, hop=hop, n_mels=32), m + 20 * np.log10(2), atol=1e-6)


def test_front_end_rejects_bad_signals():
    with pytest.raises(ParameterError, match="mono"):
        cqt(np.zeros((2, 100)), sr=8000, hop=10)
    with pytest.raises(DataError, match="at least one hop"):
        log_mel(np.zeros(10), sr=8000, hop=64)
    with pytest.raises(DataError, match="finite"):
        log_mel(np.full(100, np.nan), sr=8000, hop=64)
    with pytest.raises(ParameterError, match="Nyquist"):
        cqt(np.zeros(1000), sr=8000, hop=100, n_bins=200)


def test_clews_front_end_whitens_and_folds_octaves():
    y = _melody(0, 0, 1.0, 0, 16_000)
    flat = front_end(y, CLEWS.replace(whiten_bins=0))
    white = front_end(y, CLEWS)
    assert white.shape == flat.shape == (len(y) // CLEWS.hop, 48)
    assert abs(white.mean()) < abs(flat.mean())
    fold = CLEWS.replace(fold_octaves=True)
    folded = front_end(y, fold)
    assert folded.shape == (len(y) // CLEWS.hop, 24)
    np.testing.assert_allclose(folded[:, :12], white.reshape(len(white), 4, 12).mean(axis=1),
                               rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(folded[:, :12], folded[:, 12:])
    # a transposition by one semitone rolls the pitch classes by one
    up = front_end(_melody(0, 0, 1.0, 1, 16_000), fold)[:, :12]
    assert np.corrcoef(np.roll(folded[:, :12], 1, axis=1).ravel(), up.ravel())[0, 1] > 0.9


def test_clews_harmonic_summation_folds_overtones_onto_the_fundamental():
    cfg = CLEWS.replace(whiten_bins=0, harmonics=4)
    mags = np.zeros((2, 48))
    mags[:, 5] = 1.0  # a note at bin 5 ...
    mags[:, 17], mags[:, 24], mags[:, 29] = 0.5, 0.4, 0.3  # ... its harmonics 2, 3 (19 st), 4
    out = clews_input(mags, cfg)
    want = 1.0 + 0.8 * 0.5 + 0.64 * 0.4 + 0.512 * 0.3
    np.testing.assert_allclose(out[:, 5], 20 * np.log10(want), rtol=1e-6)
    assert out[0].argmax() == 5
    np.testing.assert_array_equal(clews_input(mags, cfg.replace(harmonics=1)),
                                  clews_input(mags, CLEWS.replace(whiten_bins=0)))
    # harmonics beyond the top bin add nothing: the top bin keeps its own magnitude
    np.testing.assert_allclose(clews_input(np.ones((1, 48)), cfg)[0, -1], 0.0, atol=1e-6)
    y = _melody(0, 0, 1.0, 0, 16_000)
    np.testing.assert_array_equal(front_end(y, cfg), clews_input(
        cqt(y, sr=cfg.sample_rate, hop=cfg.hop, fmin=cfg.fmin, n_bins=cfg.n_bins), cfg))


def test_bin_norm_removes_a_static_spectrum():
    torch.manual_seed(0)
    x = torch.randn(3, 48, 40)
    tilt = torch.linspace(-6, 6, 48)[None, :, None]  # a fixed equalisation over the clip
    for norm, same in (("mean", True), ("std", True), ("none", False)):
        torch.manual_seed(1)
        model = ConvEncoder(48, (4, 8), 16, bin_norm=norm).eval()
        with torch.no_grad():
            a, b = model(x), model(x + tilt)
        assert torch.allclose(a, b, atol=1e-5) == same, norm
    with pytest.raises(ParameterError, match="bin_norm"):
        ConvEncoder(48, (4, 8), 16, bin_norm="max")
    with pytest.raises(ParameterError, match="bin_norm"):
        CLEWS.replace(bin_norm="max")
    model = build_model(CLEWS.replace(bin_norm="mean", n_models=2))
    assert all(m.bin_norm == "mean" for m in model.members)


# training loops -----------------------------------------------------------------------------


def test_version_contrastive_learns(clews_trained):
    model, record = clews_trained
    assert _falls(record["losses"]) and record["n_groups"] == 4 and record["steps"] == 30
    assert not model.training


def test_masked_prediction_learns():
    ys, _ = _tracks(MERT.sample_rate)
    feats = [front_end(y, MERT) for y in ys]
    toks = [np.minimum(f[: len(f) // 4 * 4: 4].argmax(axis=1) // 3, 5) for f in feats]
    _, record = train_masked_prediction(feats, toks, config=MERT, seed=0)
    assert _falls(record["losses"]) and 0.0 <= record["masked_accuracy"] <= 1.0
    with pytest.raises(ParameterError, match=r"tokens in 0\.\.5"):
        train_masked_prediction(feats, [t + 6 for t in toks], config=MERT)


def test_audio_text_learns_and_vocab():
    ys, _ = _tracks(CLAP.sample_rate)
    feats = [front_end(y, CLAP) for y in ys]
    caps = [f"a tune played by {'flute' if i % 2 else 'organ'}" for i in range(len(ys))]
    model, record = train_audio_text(feats, caps, config=CLAP, seed=0)
    assert _falls(record["losses"]) and record["n_captions"] == 2
    assert record["vocab"] == caption_vocab(caps) and record["vocab"][0] == "<unk>"
    assert set(model.keys()) == {"audio", "text", "scale"}


def test_training_input_checks():
    f = [np.zeros((50, input_bins(CLEWS)), np.float32)] * 2
    assert input_bins(CLEWS) == 48 and input_bins(CLEWS.replace(fold_octaves=True)) == 24
    with pytest.raises(DataError, match="two groups"):
        train_version_contrastive(f, [0, 0], config=CLEWS)
    with pytest.raises(ParameterError, match="positive rates"):
        train_version_contrastive(f, [0, 1], config=CLEWS, rates=[1.0, 0.0])
    with pytest.raises(ParameterError, match="one group per track"):
        train_version_contrastive(f, [0], config=CLEWS)
    with pytest.raises(ParameterError, match="features"):
        train_version_contrastive([np.zeros((50, 3))] * 2, [0, 1], config=CLEWS)


def test_training_is_deterministic(clews_trained, tmp_path):
    ys, groups = _tracks(CLEWS.sample_rate)
    feats = [front_end(y, CLEWS) for y in ys]
    again, _ = train_version_contrastive(feats, groups, config=CLEWS, seed=1)
    a = _save(tmp_path / "a", "clews-style", CLEWS, clews_trained[0])
    b = _save(tmp_path / "b", "clews-style", CLEWS, again)
    assert hashlib.sha256(a.read_bytes()).digest() == hashlib.sha256(b.read_bytes()).digest()


# checkpoints and the Encoder contract -------------------------------------------------------


def test_checkpoint_loads_through_the_registry(clews_trained, tmp_path):
    path = _save(tmp_path, "clews-style", CLEWS, clews_trained[0])
    enc = load_encoder("clews-style", weights=path)
    assert isinstance(enc, OfflineEncoder) and enc.sample_rate == 16_000 and enc.dim == 16
    y = _melody(2, 1, 1.0, 0, 16_000, seconds=3.0)
    frames = enc.embed_frames(y)
    assert frames.shape == (5, 16) and frames.dtype == np.float32  # 1 s windows every 0.5 s
    assert np.allclose(np.linalg.norm(frames, axis=1), 1.0, atol=1e-5)
    assert np.allclose(enc.embed(y), frames.mean(axis=0), atol=1e-6)
    assert enc.embed_frames(y[:4000]).shape == (1, 16)  # shorter than a window: one window
    np.testing.assert_array_equal(enc.embed_frames(y), frames)
    info = enc.info()
    assert info["encoder"] == "clews-style" and info["weights_sha256"] == hashlib.sha256(
        path.read_bytes()).hexdigest()
    assert {"weights", "layer", "sample_rate", "window_seconds", "dim", "versions"} <= set(info)
    assert info["training"]["corpus_digest"] == "abc"
    assert read_checkpoint(path)["header"]["config"] == CLEWS.to_dict()


def test_perturbed_checkpoint_changes_the_output(clews_trained, tmp_path):
    path = _save(tmp_path, "clews-style", CLEWS, clews_trained[0])
    y = _melody(1, 0, 1.0, 0, 16_000)
    before = load_encoder("clews-style", weights=path).embed(y)
    ck = torch.load(path, weights_only=True)
    key = "proj.2.weight"
    ck["state_dict"][key] = ck["state_dict"][key] + 0.05 * torch.randn_like(
        ck["state_dict"][key], generator=torch.Generator().manual_seed(0))
    torch.save(ck, path)
    after = load_encoder("clews-style", weights=path).embed(y)
    assert not np.allclose(before, after, atol=1e-4)


def test_mert_style_layers_and_frame_rate(tmp_path):
    torch.manual_seed(0)
    from aria_tda_experiments.encoders import build_model

    path = _save(tmp_path, "mert-style", MERT, build_model(MERT))
    y = _melody(0, 0, 1.0, 0, 24_000, seconds=2.4)
    enc = load_encoder("mert-style", weights=path)
    assert enc.layer == MERT.n_layers and enc.info()["frame_rate"] == 12.5
    assert enc.embed_frames(y).shape == (30, 16)  # 2.4 s at 12.5 Hz, 1 s chunks
    first = load_encoder("mert-style", weights=path, layer=0).embed(y)
    assert not np.allclose(first, enc.embed(y))
    with pytest.raises(ParameterError, match="layer"):
        load_encoder("mert-style", weights=path, layer=3)


def test_clap_style_round_trip(tmp_path):
    from aria_tda_experiments.encoders import build_model

    vocab = ["<unk>", "a", "tune"]
    torch.manual_seed(0)
    path = _save(tmp_path, "clap-style", CLAP, build_model(CLAP, vocab_size=3),
                 extra={"vocab": vocab})
    enc = load_encoder("clap-style", weights=path)
    assert enc.embed_frames(_melody(0, 0, 1.0, 0, 24_000)).shape == (3, 16)
    with pytest.raises(ParameterError, match="layer"):
        load_encoder("clap-style", weights=path, layer=1)


def test_loader_errors(clews_trained, tmp_path):
    path = _save(tmp_path, "clews-style", CLEWS, clews_trained[0])
    with pytest.raises(ParameterError, match="a mert-style checkpoint"):
        load_encoder("mert-style", weights=path)
    with pytest.raises(ParameterError, match="needs its checkpoint"):
        load_encoder("clews-style")
    with pytest.raises(ParameterError, match="no encoder options"):
        load_offline(name="clews-style", weights=path, colour="red")
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(FileFormatError, match="not a readable"):
        load_encoder("clews-style", weights=bad)
    torch.save({"format": "other"}, bad)
    with pytest.raises(FileFormatError, match="not an offline-encoder"):
        load_encoder("clews-style", weights=bad)
    ck = torch.load(path, weights_only=True)
    ck["header"]["config"]["dim"] = 7
    torch.save(ck, bad)
    with pytest.raises(FileFormatError, match="does not fit"):
        load_encoder("clews-style", weights=bad)
    with pytest.raises(ParameterError, match="a clews-style config"):
        save_checkpoint(tmp_path / "x.pt", name="clews-style", config=MERT, model=torch.nn.Linear(
            1, 1), corpus_digest="", seed=0)


def test_folded_multi_view_training_runs():
    cfg = CLEWS.replace(fold_octaves=True, views=3, steps=3, batch_size=6, max_shift=6)
    ys, groups = _tracks(cfg.sample_rate)
    feats = [front_end(y, cfg) for y in ys]
    model, record = train_version_contrastive(feats, groups, config=cfg, seed=0,
                                              rates=[1.0, 1.1] * 4)
    assert len(record["losses"]) == 3 and np.all(np.isfinite(record["losses"]))
    enc = OfflineEncoder("clews-style", cfg, model)
    assert enc.embed_frames(ys[0]).shape == (3, 16)


def test_registration_adds_octave_and_harmonic_copies():
    # one partial at bin 30 (0 dB) over a floor of -100 dB, 12 bins per octave, no whitening:
    # gains g land at bins 18 (octave down), 42, 49, 54 (harmonics 2, 3, 4)
    x = np.full((84, 3), -100.0, dtype=np.float32)
    x[30] = 0.0
    gains = np.array([0.5, 0.25, 0.125, 1.0])
    y = _register(x, gains, 12, 0)
    want = np.zeros(84)
    for k in range(84):  # exact reference: sum of the shifted linear copies
        want[k] = 10.0 ** (x[k, 0] / 20)
        for g, off in zip(gains, (-12, 12, 19, 24), strict=True):
            if 0 <= k - off < 84:
                want[k] += g * 10.0 ** (x[k - off, 0] / 20)
    np.testing.assert_allclose(y[:, 0], 20 * np.log10(want), atol=1e-4)
    assert y[30, 0] == pytest.approx(0.0, abs=1e-3) and y[54, 0] == pytest.approx(0.0, abs=1e-3)
    np.testing.assert_allclose(_register(x, np.zeros(4), 12, 0), x, atol=1e-5)
    # whitened again: the moving average over bins is removed from every frame
    w = _register(x, gains, 12, 24)
    assert abs(float(w[:, 0].mean())) < abs(float(y[:, 0].mean()))


@pytest.mark.parametrize("option", [{"registration": 1.0}, {"octave_shift": 1.0},
                                    {"octave_shift": 0.5, "max_octaves": 2}])
def test_view_augmentations_train_and_change_the_run(option):
    cfg = CLEWS.replace(steps=3, octave_shift=0.0)
    ys, groups = _tracks(cfg.sample_rate)
    feats = [front_end(y, cfg) for y in ys]
    _, plain = train_version_contrastive(feats, groups, config=cfg, seed=0)
    _, aug = train_version_contrastive(feats, groups, config=cfg.replace(**option), seed=0)
    assert np.all(np.isfinite(aug["losses"])) and aug["losses"] != plain["losses"]


def test_octave_shift_moves_that_share_of_views_an_octave():
    # off: exactly the plain uniform draw of ±max_shift, the same random stream
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    plain = [int(b.integers(-3, 4)) for _ in range(200)]
    assert [_draw_shift(a, 3, 0.0, 12) for _ in range(200)] == plain
    # always: every shift is a small one moved exactly one octave, both ways
    rng = np.random.default_rng(0)
    always = np.array([_draw_shift(rng, 3, 1.0, 12) for _ in range(400)])
    assert np.all((np.abs(always) >= 9) & (np.abs(always) <= 15))
    assert (always > 0).sum() > 150 and (always < 0).sum() > 150
    # a half: about half the views (binomial, 400 draws: 200 ± 4 sd outside [160, 240])
    rng = np.random.default_rng(1)
    half = np.array([_draw_shift(rng, 3, 0.5, 12) for _ in range(400)])
    assert 160 <= int((np.abs(half) > 3).sum()) <= 240
    assert set(np.abs(half[np.abs(half) <= 3]).tolist()) <= {0, 1, 2, 3}
    # max_octaves=1 draws nothing more; 2: moves of one and of two octaves, both ways
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    assert ([_draw_shift(a, 3, 0.5, 12, 1) for _ in range(100)]
            == [_draw_shift(b, 3, 0.5, 12) for _ in range(100)])
    rng = np.random.default_rng(2)
    two = np.array([_draw_shift(rng, 0, 1.0, 12, 2) for _ in range(400)])
    assert set(two.tolist()) == {-24, -12, 12, 24}
    assert 150 <= int((np.abs(two) == 24).sum()) <= 250


def test_family_pairs_share_a_family_of_both_works():
    fam = np.array(["organ", "piano", "brass", "organ", "reed", "brass", "pipe", "guitar"])
    works = [np.array([0, 1, 2]), np.array([3, 4, 5]), np.array([6]), np.array([7])]
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(50):
        a, b, c, d = _same_family_firsts(works, fam, 2, rng)
        assert a in works[0] and b in works[1] and fam[a] == fam[b]
        assert (c, d) == (None, None)  # works 2 and 3 share no family
        seen.add(str(fam[a]))
    assert seen == {"organ", "brass"}  # every shared family is drawn
    assert _same_family_firsts(works, fam, 0, rng) == [None] * 4


def test_family_negatives_need_the_families():
    cfg = CLEWS.replace(steps=2, family_negatives=1.0)
    ys, groups = _tracks(cfg.sample_rate)
    feats = [front_end(y, cfg) for y in ys]
    with pytest.raises(ParameterError, match="families"):
        train_version_contrastive(feats, groups, config=cfg, seed=0)
    fams = ["a", "b"] * 4  # every work has both families: every pair shares one
    _, rec = train_version_contrastive(feats, groups, config=cfg, seed=0, families=fams)
    _, plain = train_version_contrastive(feats, groups, config=cfg.replace(
        family_negatives=0.0), seed=0, families=fams)
    assert np.all(np.isfinite(rec["losses"])) and rec["losses"] != plain["losses"]


def test_ensemble_checkpoint_concatenates_its_members(clews_trained, tmp_path):
    cfg = CLEWS.replace(n_models=2, steps=5)
    ys, groups = _tracks(cfg.sample_rate)
    feats = [front_end(y, cfg) for y in ys]
    model, record = train_version_contrastive(feats, groups, config=cfg, seed=1)
    assert record["n_models"] == 2 and len(record["losses"]) == 5
    single, _ = train_version_contrastive(feats, groups, config=cfg.replace(n_models=1), seed=2)
    path = _save(tmp_path, "clews-style", cfg, model)
    enc = load_encoder("clews-style", weights=path)
    assert enc.dim == 32 and enc.info()["n_models"] == 2 and enc.info()["dim"] == 32
    frames = enc.embed_frames(ys[0])
    assert frames.shape == (3, 32)
    assert np.allclose(np.linalg.norm(frames, axis=1), 1.0, atol=1e-5)
    # member 1 is the model of seed 2 alone; the cosine is the members' mean cosine
    second = OfflineEncoder("clews-style", cfg.replace(n_models=1), single).embed_frames(ys[0])
    np.testing.assert_allclose(frames[:, 16:] * np.sqrt(2), second, atol=1e-5)
    assert load_encoder("clews-style", weights=_save(tmp_path / "one", "clews-style", CLEWS,
                                                     clews_trained[0])).info()["n_models"] == 1
    wrong = _save(tmp_path / "wrong", "clews-style", CLEWS, model)
    with pytest.raises(FileFormatError, match="does not fit"):
        load_encoder("clews-style", weights=wrong)
