"""Audio tokenizers: frame grid, k-means, RVQ, conditioning, storage, input checks."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.errors import DataError, FileFormatError, ParameterError
from aria_tda_experiments.audio.tokenizers import (
    SR,
    TokenizerConfig,
    TrackTokens,
    assign,
    fit_tokenizers,
    frame_features,
    kmeans,
    load_tokenizers,
    load_track_tokens,
    rvq_decode,
    rvq_encode,
    rvq_fit,
    save_track_tokens,
)

CFG = TokenizerConfig(semantic_k=12, rvq_levels=6, rvq_codebook=12, cond_codebooks=2,
                      cond_codebook=3, kmeans_iters=15, fit_frames=2000, seed=3)
HOP = CFG.hop


def _t(seconds: float) -> np.ndarray:
    return np.arange(int(seconds * SR)) / SR


def chord(freqs: tuple[float, ...], seconds: float = 4.0, seed: int = 0) -> np.ndarray:
    """Sum of sines with a slow tremolo and a little noise."""
    t = _t(seconds)
    rng = np.random.default_rng(seed)
    y = sum(np.sin(2 * np.pi * f * t + rng.uniform(0, 6)) for f in freqs) / (2 * len(freqs))
    y = y * (0.8 + 0.2 * np.sin(2 * np.pi * 0.7 * t)) + 0.003 * rng.standard_normal(t.size)
    return y.astype(np.float32)


def bursts(seconds: float = 4.0, seed: int = 0) -> np.ndarray:
    """Noise bursts, 4 per second, 60 ms each."""
    rng = np.random.default_rng(seed)
    t = _t(seconds)
    gate = ((t * 4.0) % 1.0) < 0.24
    return (0.3 * rng.standard_normal(t.size) * gate).astype(np.float32)


def clicks(positions: list[int], seconds: float = 4.0) -> np.ndarray:
    y = np.zeros(int(seconds * SR), dtype=np.float32)
    for p in positions:
        y[p : p + 24] = np.hanning(24) * 0.9
    return y


TRAIN = [chord((220.0, 277.2, 329.6)), chord((196.0, 246.9, 293.7), seed=1), bursts(),
         bursts(seed=1) + chord((440.0,), seed=2), clicks(list(range(0, 4 * SR, SR // 3))),
         chord((110.0, 164.8), seed=3)]


@pytest.fixture(scope="module")
def tok():
    return fit_tokenizers(TRAIN, config=CFG, progress_bar=False)


# ------------------------------------------------------------------------------------------
# Config
# ------------------------------------------------------------------------------------------


def test_config_hop_follows_the_frame_rate():
    assert TokenizerConfig().hop == 960
    assert TokenizerConfig(frame_hz=12.5).hop == 1920
    assert TokenizerConfig().to_dict()["semantic_k"] == 128


@pytest.mark.parametrize(
    ("field", "value"),
    [("semantic_k", 1), ("rvq_levels", 0), ("frame_hz", 7.0), ("frame_hz", -1.0),
     ("frame_hz", 3000.0), ("n_mfcc", 64), ("kmeans_iters", 0), ("seed", -1), ("n_mels", 2.5),
     ("cond_codebook", "4"), ("fit_frames", 3)],
)
def test_bad_config_names_the_field(field, value):
    with pytest.raises(ParameterError, match=rf"^{field}: expected"):
        TokenizerConfig(**{field: value})


def test_config_from_mapping_rejects_unknown_keys():
    with pytest.raises(ParameterError, match="codebook_size"):
        TokenizerConfig.from_mapping({"codebook_size": 4})


# ------------------------------------------------------------------------------------------
# Kernels
# ------------------------------------------------------------------------------------------


def test_kmeans_recovers_planted_clusters():
    rng = np.random.default_rng(0)
    means = rng.uniform(-20, 20, size=(5, 3))
    truth = np.repeat(np.arange(5), 200)
    x = means[truth] + rng.standard_normal((1000, 3))
    cent = kmeans(x, 5, n_iter=20, seed=1)
    labels, _ = assign(x, cent)
    # one-to-one: every planted cluster maps to exactly one found cluster
    pairs = {(int(a), int(b)) for a, b in zip(truth, labels, strict=True)}
    assert len(pairs) == 5 and len({b for _, b in pairs}) == 5
    order = [b for _, b in sorted(pairs)]
    assert np.abs(cent[order] - means).max() < 0.3


def test_kmeans_with_fewer_points_than_codewords():
    x = np.array([[0.0, 1.0], [2.0, 3.0], [0.0, 1.0], [5.0, 5.0]])
    cent = kmeans(x, 8, n_iter=5, seed=0)
    labels, d2 = assign(x, cent)
    assert cent.shape == (8, 2) and labels.max() < 8
    np.testing.assert_allclose(d2, 0.0, atol=1e-12)


def test_kmeans_is_seeded():
    x = np.random.default_rng(0).standard_normal((300, 4))
    np.testing.assert_array_equal(kmeans(x, 6, seed=2), kmeans(x, 6, seed=2))
    assert not np.array_equal(kmeans(x, 6, seed=2), kmeans(x, 6, seed=3))


def test_rvq_kernel_error_falls_with_each_level():
    x = np.random.default_rng(1).standard_normal((800, 8))
    books = rvq_fit(x, 5, 8, n_iter=10, seed=0)
    codes = rvq_encode(x, books)
    errs = [np.mean((x - rvq_decode(codes[:, : lv + 1], books)) ** 2) for lv in range(5)]
    assert np.all(np.diff([np.mean(x**2), *errs]) < 0)
    with pytest.raises(DataError, match="codes"):
        rvq_decode(codes + 8, books)


# ------------------------------------------------------------------------------------------
# Frame grid and features
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [HOP, 3 * HOP - 1, 3 * HOP, 50 * HOP + 17])
def test_frame_count_is_floor_of_length_over_hop(tok, n):
    y = bursts(seconds=n / SR + 0.1)[:n]
    tt = tok.tokenize(y)
    assert tt.n_frames == n // HOP
    assert tt.semantic.shape == (n // HOP,) and tt.acoustic.shape == (n // HOP, CFG.rvq_levels)


def test_shapes_dtypes_and_ranges(tok):
    tt = tok.tokenize(chord((261.6, 329.6, 392.0), seconds=3.3, seed=5))
    assert isinstance(tt, TrackTokens)
    for a in (tt.semantic, tt.acoustic, tt.cond):
        assert a.dtype == np.int64
    assert 0 <= tt.semantic.min() and tt.semantic.max() < CFG.semantic_k
    assert 0 <= tt.acoustic.min() and tt.acoustic.max() < CFG.rvq_codebook
    assert tt.cond.shape == (CFG.cond_codebooks,)
    assert 0 <= tt.cond.min() and tt.cond.max() < CFG.cond_codebook
    f = tok.features(chord((261.6,), seconds=1.0))
    assert f.semantic.shape == (25, CFG.n_mfcc + 13) and f.log_mel.shape == (25, CFG.n_mels)


def test_frame_i_covers_samples_i_hop_to_next(tok):
    frames = [7, 31, 62]
    y = clicks([i * HOP + HOP // 2 for i in frames], seconds=3.0)
    onset = tok.features(y).semantic[:, -1]
    top = np.sort(np.argsort(onset)[-3:])
    np.testing.assert_array_equal(top, frames)


def test_frame_features_function_matches_the_tokenizer(tok):
    y = bursts(seconds=2.0, seed=4)
    a, b = frame_features(y, config=CFG), tok.features(y)
    np.testing.assert_array_equal(a.semantic, b.semantic)
    np.testing.assert_array_equal(a.log_mel, b.log_mel)


def test_different_audio_gives_different_semantic_tokens(tok):
    a = tok.tokenize(chord((220.0, 277.2, 329.6))).semantic
    b = tok.tokenize(bursts()).semantic
    c = tok.tokenize(clicks(list(range(0, 4 * SR, SR // 3)))).semantic
    common = [np.bincount(v, minlength=CFG.semantic_k).argmax() for v in (a, b, c)]
    assert len(set(common)) == 3
    assert len(set(a.tolist()) & set(b.tolist())) < len(set(a.tolist()))


# ------------------------------------------------------------------------------------------
# Acoustic RVQ
# ------------------------------------------------------------------------------------------


def test_rvq_error_falls_strictly_with_each_level(tok):
    frames = np.concatenate([tok.features(y).log_mel for y in TRAIN])
    errs = tok.rvq_errors(frames)
    assert errs.shape == (CFG.rvq_levels,)
    assert errs[0] < 1.0 and np.all(np.diff(errs) < 0), errs
    assert np.all(np.diff(tok.info["rvq_train_errors"]) < 0)


def test_decode_acoustic_reconstructs_log_mel(tok):
    y = TRAIN[0]
    f, tt = tok.features(y), tok.tokenize(y)
    full = tok.decode_acoustic(tt.acoustic)
    coarse = tok.decode_acoustic(tt.acoustic[:, :1])
    assert full.shape == f.log_mel.shape
    assert np.mean((full - f.log_mel) ** 2) < np.mean((coarse - f.log_mel) ** 2)


# ------------------------------------------------------------------------------------------
# Fit, determinism, storage
# ------------------------------------------------------------------------------------------


def test_fit_is_deterministic_for_a_seed(tok):
    again = fit_tokenizers(TRAIN, config=CFG, progress_bar=False)
    for k, a in tok.arrays.items():
        np.testing.assert_array_equal(a, again.arrays[k], err_msg=k)
    other = fit_tokenizers(TRAIN, config=CFG.replace(seed=4), progress_bar=False)
    assert not np.array_equal(tok.arrays["sem_centroids"], other.arrays["sem_centroids"])


def test_fit_uses_only_the_tracks_it_is_given(tok):
    n_frames = sum(len(y) // HOP for y in TRAIN)
    assert tok.info["training"]["n_tracks"] == len(TRAIN)
    assert tok.info["training"]["n_frames"] == n_frames
    fewer = fit_tokenizers(TRAIN[:4], config=CFG, progress_bar=False)
    assert fewer.info["training"]["n_frames"] == sum(len(y) // HOP for y in TRAIN[:4])
    assert not np.array_equal(fewer.arrays["mel_mean"], tok.arrays["mel_mean"])


def test_save_load_round_trip_gives_identical_tokens(tok, tmp_path):
    tok.save(tmp_path / "tk")
    back = load_tokenizers(tmp_path / "tk")
    assert back.config == tok.config
    y = chord((300.0, 450.0), seconds=2.5, seed=9) + bursts(2.5, seed=9)
    a, b = tok.tokenize(y), back.tokenize(y)
    for name in ("semantic", "acoustic", "cond"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert back.info["rvq_train_errors"] == tok.info["rvq_train_errors"]


def test_fit_reuses_a_matching_saved_fit(tmp_path):
    first = fit_tokenizers(TRAIN[:3], config=CFG, out_dir=tmp_path, progress_bar=False)
    manifest = (tmp_path / "tokenizers.npz.manifest.json").read_text()
    again = fit_tokenizers(TRAIN[:3], config=CFG, out_dir=tmp_path, progress_bar=False)
    assert (tmp_path / "tokenizers.npz.manifest.json").read_text() == manifest  # not rewritten
    np.testing.assert_array_equal(first.arrays["rvq_codebooks"], again.arrays["rvq_codebooks"])
    fit_tokenizers(TRAIN[:3], config=CFG.replace(seed=5), out_dir=tmp_path, progress_bar=False)
    assert (tmp_path / "tokenizers.npz.manifest.json").read_text() != manifest


def test_load_refuses_a_missing_or_partial_store(tok, tmp_path):
    with pytest.raises(FileFormatError):
        load_tokenizers(tmp_path)
    tok.save(tmp_path)
    (tmp_path / "tokenizers.npz.manifest.json").unlink()
    with pytest.raises(FileFormatError):
        load_tokenizers(tmp_path)


def test_track_tokens_round_trip(tok, tmp_path):
    tokens = {"a~v0": tok.tokenize(TRAIN[0]), "b~v1": tok.tokenize(TRAIN[2][: 2 * SR])}
    save_track_tokens(tmp_path / "tokens.npz", tokens, config=CFG)
    back = load_track_tokens(tmp_path / "tokens.npz")
    assert list(back) == list(tokens)
    for k, tt in tokens.items():
        for name in ("semantic", "acoustic", "cond"):
            np.testing.assert_array_equal(getattr(back[k], name), getattr(tt, name))


# ------------------------------------------------------------------------------------------
# Files and input checks
# ------------------------------------------------------------------------------------------


def test_tokenize_file_matches_the_array(tok, tmp_path):
    sf = pytest.importorskip("soundfile")
    y = TRAIN[3]
    sf.write(tmp_path / "x.wav", y, SR, subtype="FLOAT")
    a, b = tok.tokenize_file(tmp_path / "x.wav"), tok.tokenize(y)
    np.testing.assert_array_equal(a.acoustic, b.acoustic)
    np.testing.assert_array_equal(a.cond, b.cond)
    [c] = tok.tokenize_files([tmp_path / "x.wav"], progress_bar=False)
    np.testing.assert_array_equal(c.semantic, b.semantic)


def test_wrong_rate_or_shape_is_a_clear_error(tok, tmp_path):
    y = TRAIN[0]
    with pytest.raises(ParameterError, match=r"^sr: expected 24000 Hz"):
        tok.tokenize(y, sr=44_100)
    with pytest.raises(DataError, match="mono"):
        tok.tokenize(np.stack([y, y]))
    with pytest.raises(DataError, match="floating-point"):
        tok.tokenize((y * 32767).astype(np.int16))
    with pytest.raises(DataError, match="at least one frame"):
        tok.tokenize(y[: HOP - 1])
    bad = y.copy()
    bad[5] = np.nan
    with pytest.raises(DataError, match="finite"):
        tok.tokenize(bad)
    sf = pytest.importorskip("soundfile")
    sf.write(tmp_path / "hi.wav", y[:SR], 44_100)
    with pytest.raises(DataError, match="24000 Hz"):
        tok.tokenize_file(tmp_path / "hi.wav")
    (tmp_path / "junk.wav").write_bytes(b"not audio")
    with pytest.raises(FileFormatError, match="unreadable"):
        tok.tokenize_file(tmp_path / "junk.wav")
    with pytest.raises(DataError, match="at least one training track"):
        fit_tokenizers([], config=CFG)


def test_rendered_instruments_get_different_acoustic_tokens(tok):
    render = pytest.importorskip("aria_tda.features.audio.render")
    from aria_tda.errors import MissingDependencyError

    notes = [render.Note(i * 0.5, 0.5, 60 + (i * 5) % 12) for i in range(6)]
    try:
        piano = render.render_midi(render.midi_from_notes(notes, programs={0: 0}), sr=SR,
                                   duration=3.0)
        organ = render.render_midi(render.midi_from_notes(notes, programs={0: 19}), sr=SR,
                                   duration=3.0)
    except (MissingDependencyError, FileNotFoundError) as exc:
        pytest.skip(f"FluidSynth or a soundfont is missing: {exc}")
    a, b = tok.tokenize(piano), tok.tokenize(organ)
    assert a.n_frames == b.n_frames == 3 * SR // HOP
    assert not np.array_equal(a.acoustic, b.acoustic)
    np.testing.assert_array_equal(tok.tokenize(piano).acoustic, a.acoustic)


@pytest.mark.slow
def test_worker_pool_gives_the_same_tokens(tok, tmp_path):
    sf = pytest.importorskip("soundfile")
    paths = []
    for i, y in enumerate(TRAIN[:3]):
        sf.write(tmp_path / f"t{i}.wav", y, SR, subtype="FLOAT")
        paths.append(tmp_path / f"t{i}.wav")
    one = tok.tokenize_files(paths, progress_bar=False)
    two = tok.tokenize_files(paths, n_jobs=2, progress_bar=False)
    for a, b in zip(one, two, strict=True):
        np.testing.assert_array_equal(a.acoustic, b.acoustic)
        np.testing.assert_array_equal(a.semantic, b.semantic)
    fitted = fit_tokenizers([*paths, TRAIN[4]], config=CFG, n_jobs=2, progress_bar=False)
    serial = fit_tokenizers([*paths, TRAIN[4]], config=CFG, progress_bar=False)
    # the tokens above are equal bit for bit; the fitted centroids are float64 means whose BLAS
    # reductions may be ordered differently in a worker process (seen on a loaded 2-core CI
    # machine: 1.7e-16 apart), so they are compared to rounding
    np.testing.assert_allclose(fitted.arrays["sem_centroids"], serial.arrays["sem_centroids"],
                               rtol=1e-12, atol=1e-14)


@pytest.mark.slow
def test_chroma_filterbank_is_librosas():
    librosa = pytest.importorskip("librosa")
    from aria_tda_experiments.audio.tokenizers import _chroma_fb

    for sr, n_fft in ((24_000, 2048), (24_000, 512), (22_050, 1024)):
        want = librosa.filters.chroma(sr=sr, n_fft=n_fft, tuning=0.0)
        np.testing.assert_allclose(_chroma_fb(sr, n_fft), want, atol=1e-6)


def test_tokenizing_compiles_no_numba_kernels(tmp_path):
    import os
    import subprocess
    import sys

    code = ("import numpy as np\n"
            "from aria_tda_experiments.audio.tokenizers import TokenizerConfig, fit_tokenizers\n"
            "y = (0.1 * np.random.default_rng(0).standard_normal(48000)).astype(np.float32)\n"
            "cfg = TokenizerConfig(semantic_k=4, rvq_levels=2, rvq_codebook=4, cond_codebook=2)\n"
            "fit_tokenizers([y, y[::-1].copy()], config=cfg).tokenize(y)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR",
                                                            "_ARIA_NUMBA_CACHE_DIR")}
    env["ARIA_CACHE_DIR"] = str(tmp_path)
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    assert not [p for p in tmp_path.rglob("*") if p.suffix in (".nbi", ".nbc")]
