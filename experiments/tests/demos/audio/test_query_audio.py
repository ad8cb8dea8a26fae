"""Query audio: generated acoustic tokens -> log-mel -> waveform (mel inversion, Griffin-Lim)."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from aria_tda.errors import DataError, ParameterError
from aria_tda_experiments.audio.generate import StageQueries
from aria_tda_experiments.audio.query_audio import (
    griffin_lim,
    invert_log_mel,
    query_log_mel,
    write_query_audio,
)
from aria_tda_experiments.audio.stages import BOS, StageSpec, stage_layout
from aria_tda_experiments.audio.tokenizers import SR, TokenizerConfig, fit_tokenizers

FRAME_HZ = 12.5
CFG = TokenizerConfig(frame_hz=FRAME_HZ, semantic_k=8, rvq_codebook=16, cond_codebooks=2,
                      cond_codebook=3, kmeans_iters=10, fit_frames=2000, seed=1)
#: Stage windows of 4 s (coarse) and 2 s (fine) at 12.5 Hz, as in the demo.
SPEC = StageSpec(semantic_k=8, rvq_codebook=16, rvq_levels=8, coarse_levels=3,
                 cond_codebooks=2, cond_codebook=3, frame_hz=FRAME_HZ)


@pytest.fixture(scope="module")
def rendered():
    """Two real FluidSynth renderings (piano melody with chords; strings), 4.8 s at 24 kHz."""
    pytest.importorskip("mido")
    from aria_tda.errors import MissingDependencyError
    from aria_tda.features.audio.render import midi_from_notes, render_midi

    try:
        piano = render_midi(midi_from_notes(
            [(i * 0.5, 0.5, p) for i, p in enumerate([60, 64, 67, 72, 71, 67, 64, 62, 60])]
            + [(0, 2, 48), (2, 2, 43)], bpm=120), sr=SR, duration=4.8)
        strings = render_midi(midi_from_notes([(0, 4, 55), (0, 4, 59), (4, 4, 57)],
                                              bpm=100, programs={0: 48}), sr=SR, duration=4.8)
    except MissingDependencyError as exc:
        pytest.skip(str(exc))
    return piano.astype(np.float32), strings.astype(np.float32)


@pytest.fixture(scope="module")
def tok(rendered):
    return fit_tokenizers(list(rendered), config=CFG, progress_bar=False)


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(a.ravel(), b.ravel())[0, 1])


def test_inverted_decoded_tokens_follow_the_rendered_track(rendered, tok):
    y = rendered[0]
    mel = tok.features(y).log_mel
    decoded = tok.decode_acoustic(tok.tokenize(y).acoustic)
    wav = invert_log_mel(decoded, tok, seed=0)
    assert wav.shape == (len(decoded) * tok.hop,) and wav.dtype == np.float64
    again = tok.features(wav.astype(np.float32)).log_mel
    assert again.shape == mel.shape
    # the waveform's log-mel follows the decoded frames, and so the original track
    assert _corr(again, decoded) > 0.95
    assert _corr(again, mel) > 0.9
    # ... and not another track
    other = tok.features(rendered[1]).log_mel
    assert _corr(again, mel) > _corr(again, other) + 0.1
    # the level is kept (no arbitrary normalisation): within a few dB on average
    assert abs(float(np.mean(again - mel))) < 6.0


def test_inversion_is_deterministic_per_seed(rendered, tok):
    decoded = tok.decode_acoustic(tok.tokenize(rendered[1]).acoustic)
    a = invert_log_mel(decoded, tok, n_iter=8, seed=3)
    np.testing.assert_array_equal(a, invert_log_mel(decoded, tok, n_iter=8, seed=3))
    b = invert_log_mel(decoded, tok, n_iter=8, seed=4)
    assert not np.allclose(a, b)  # another initial phase, another waveform ...
    fa, fb = (tok.features(x.astype(np.float32)).log_mel for x in (a, b))
    assert _corr(fa, fb) > 0.95  # ... with the same spectrogram


def test_griffin_lim_iterations_reduce_the_spectral_error():
    rng = np.random.default_rng(0)
    n_fft, step = 256, 64
    t = np.arange(4096) / 8000
    y = np.sin(2 * np.pi * 440 * t) * (1 + np.sin(2 * np.pi * 3 * t)) + 0.1 * rng.standard_normal(
        t.size)
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft)
    centres = np.arange(step // 2, len(y), step)
    from aria_tda_experiments.audio.query_audio import _stft

    mag = np.abs(_stft(y, window, centres))

    def err(n_iter: int) -> float:
        z = griffin_lim(mag, window=window, centres=centres, length=len(y), n_iter=n_iter)
        return float(np.linalg.norm(np.abs(_stft(z, window, centres)) - mag)
                     / np.linalg.norm(mag))

    e0, e8, e32 = err(0), err(8), err(32)
    assert e32 < e8 < e0 and e32 < 0.25, (e0, e8, e32)


def _queries(tok, tracks: list[np.ndarray]) -> tuple[StageQueries, list[np.ndarray]]:
    """StageQueries whose generated acoustic codes are those of real tracks."""
    lay = stage_layout("coarse", SPEC)
    n_crs, n_fin, lc = SPEC.frames("coarse"), SPEC.frames("fine"), SPEC.coarse_levels
    codes = [tok.tokenize(y).acoustic[:n_crs] for y in tracks]
    crs = np.stack([c[:, :lc] for c in codes])
    ids = (crs + lay.offset("acoustic1") + SPEC.rvq_codebook * np.arange(lc)).reshape(
        len(tracks), -1)
    head = np.full((len(tracks), lay.target_start), BOS)
    q = StageQueries(
        query_ids=np.array(["w0~v1", "genre/w1.mxl~v2"]),
        tokens={"coarse": np.concatenate([head, ids], axis=1)},
        semantic=np.zeros((len(tracks), 1), dtype=np.int64),
        acoustic=np.stack([c[:n_fin] for c in codes]), spec=SPEC, params={},
    )
    return q, codes


def test_query_log_mel_decodes_fine_then_coarse_levels(rendered, tok):
    q, codes = _queries(tok, list(rendered))
    mel = query_log_mel(tok, q)
    n_crs, n_fin, lc = SPEC.frames("coarse"), SPEC.frames("fine"), SPEC.coarse_levels
    assert mel.shape == (2, n_crs, CFG.n_mels)
    for j in range(2):
        np.testing.assert_allclose(mel[j, :n_fin], tok.decode_acoustic(codes[j][:n_fin]))
        np.testing.assert_allclose(mel[j, n_fin:], tok.decode_acoustic(codes[j][n_fin:, :lc]))
        assert _corr(mel[j], tok.features(rendered[j]).log_mel[:n_crs]) > 0.9
    bad = StageQueries(query_ids=q.query_ids, tokens=q.tokens, semantic=q.semantic,
                       acoustic=(q.acoustic + 1) % SPEC.rvq_codebook, spec=SPEC, params={})
    with pytest.raises(DataError, match="coarse levels"):
        query_log_mel(tok, bad)


def test_write_query_audio_files_and_listing(rendered, tok, tmp_path):
    import pandas as pd

    q, _ = _queries(tok, list(rendered))
    listing = write_query_audio(tok, q, tmp_path / "wav", n_iter=4, seed=0, progress_bar=False)
    df = pd.read_csv(listing)
    assert df["track_id"].tolist() == ["w0~v1", "genre/w1.mxl~v2"]
    for path in df["path"]:
        y, sr = sf.read(path, dtype="float32")
        assert sr == SR and len(y) == SPEC.frames("coarse") * CFG.hop
        assert 0 < np.abs(y).max() <= 0.99 + 1e-6
    assert all(p.parent == tmp_path / "wav" for p in map(__import__("pathlib").Path, df["path"]))
    first = sf.read(df["path"][0], dtype="float32")[0]
    write_query_audio(tok, q, tmp_path / "wav", n_iter=4, seed=0, progress_bar=False)
    np.testing.assert_array_equal(first, sf.read(df["path"][0], dtype="float32")[0])


def test_bad_input_names_the_parameter(tok):
    with pytest.raises(ParameterError, match="log_mel"):
        invert_log_mel(np.zeros((5, CFG.n_mels + 1)), tok)
    with pytest.raises(ParameterError, match="oversample"):
        invert_log_mel(np.zeros((5, CFG.n_mels)), tok, oversample=7)
    with pytest.raises(DataError, match="log_mel"):
        invert_log_mel(np.full((5, CFG.n_mels), np.nan), tok)
    with pytest.raises(ParameterError, match="centres"):
        griffin_lim(np.ones((3, 9)), window=np.hanning(16), centres=np.arange(2), length=40)
