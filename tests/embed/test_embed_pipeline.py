"""``aria-tda embed``'s pipeline: real WAVs, a real (toy) encoder, the real extraction engine."""

from __future__ import annotations

import _toy_encoder as toy
import numpy as np
import pytest

from aria_tda.embed import embed_to_store
from aria_tda.embed.audio import load_mono, resample, segment_bounds
from aria_tda.errors import ManifestMismatchError, ParameterError
from aria_tda.features.store import FeatureStore


def _direct(path, ckpt):
    enc = toy.load_toy(ckpt)
    return enc.embed(load_mono(path, enc.sample_rate))


def test_embeds_resumes_and_records_bad_audio(tmp_path, toy_encoder, corpus):
    out = tmp_path / "emb"
    first = embed_to_store(corpus, out, encoder="toy", weights=toy_encoder)
    assert (first["n_inputs"], first["n_extracted"], first["n_errors"]) == (5, 4, 1)
    assert first["encoder"]["weights_sha256"] == toy.file_sha256(toy_encoder)
    store = FeatureStore.open(out)
    assert store.modality == "embedding" and list(store.track_ids) == ["t0", "t1", "t2", "t3"]
    x = store.vectors("embedding")
    assert x.shape == (4, 8)
    for i, tid in enumerate(store.track_ids):  # exactly the encoder's time average
        np.testing.assert_allclose(x[i], _direct(corpus / f"{tid}.wav", toy_encoder), rtol=1e-12)
    assert np.allclose(store.metadata["duration"], 1.6, atol=1e-3)
    errors = store.errors
    assert list(errors["track_id"]) == ["bad"] and errors["error"].str.len().gt(0).all()
    enc = store.params["encoder"]
    assert enc["encoder"] == "toy" and enc["sample_rate"] == 16_000 and enc["dim"] == 8
    assert enc["weights_sha256"] == first["encoder"]["weights_sha256"]
    assert "scipy" in store.versions and "resample_poly" in store.params["audio"]

    again = embed_to_store(corpus, out, encoder="toy", weights=toy_encoder)
    assert (again["n_extracted"], again["n_skipped"], again["n_errors"]) == (0, 4, 1)
    np.testing.assert_array_equal(FeatureStore.open(out).vectors("embedding"), x)


@pytest.mark.slow
def test_two_workers_write_the_same_store(tmp_path, toy_encoder, corpus):
    one = embed_to_store(corpus, tmp_path / "one", encoder="toy", weights=toy_encoder)
    two = embed_to_store(corpus, tmp_path / "two", encoder="toy", weights=toy_encoder,
                         workers=2)
    assert one["n_extracted"] == two["n_extracted"] == 4 and two["n_errors"] == 1
    a, b = FeatureStore.open(tmp_path / "one"), FeatureStore.open(tmp_path / "two")
    assert list(a.track_ids) == list(b.track_ids)
    np.testing.assert_array_equal(a.vectors("embedding"), b.vectors("embedding"))


def test_segments(tmp_path, toy_encoder, corpus):
    out = tmp_path / "seg"
    res = embed_to_store(corpus, out, encoder="toy", weights=toy_encoder, segment_seconds=0.5)
    # 1.6 s -> [0, .5), [.5, 1), [1, 1.5); the 0.1 s remainder (< half a segment) is dropped
    assert res["n_extracted"] == 12
    store = FeatureStore.open(out)
    assert list(store.track_ids[:3]) == ["t0#0000", "t0#0001", "t0#0002"]
    meta = store.metadata
    assert list(meta["source_track"][:3]) == ["t0"] * 3
    np.testing.assert_allclose(meta["start"][:3], [0.0, 0.5, 1.0])
    np.testing.assert_allclose(meta["end"][:3], [0.5, 1.0, 1.5])
    enc = toy.load_toy(toy_encoder)
    y = load_mono(corpus / "t0.wav", enc.sample_rate)
    np.testing.assert_allclose(store.vectors("embedding")[1], enc.embed(y[8000:16000]),
                               rtol=1e-12)
    assert store.params["segments"] == {"seconds": 0.5}
    again = embed_to_store(corpus, out, encoder="toy", weights=toy_encoder, segment_seconds=0.5)
    assert again["n_extracted"] == 0 and again["n_skipped"] == 4


def test_resume_with_another_checkpoint_or_segmenting_is_refused(tmp_path, toy_encoder, corpus):
    out = tmp_path / "emb"
    embed_to_store(corpus, out, encoder="toy", weights=toy_encoder)
    other = toy.save_checkpoint(tmp_path / "other.npy", seed=1)
    with pytest.raises(ManifestMismatchError, match="weights_sha256"):
        embed_to_store(corpus, out, encoder="toy", weights=other)
    with pytest.raises(ManifestMismatchError, match="segments"):
        embed_to_store(corpus, out, encoder="toy", weights=toy_encoder, segment_seconds=1.0)
    res = embed_to_store(corpus, out, encoder="toy", weights=other, overwrite=True)
    assert res["n_extracted"] == 4
    x = FeatureStore.open(out).vectors("embedding")
    assert not np.allclose(x[0], _direct(corpus / "t0.wav", toy_encoder))  # the checkpoint counts


def test_moving_the_checkpoint_still_resumes(tmp_path, toy_encoder, corpus):
    out = tmp_path / "emb"
    embed_to_store(corpus, out, encoder="toy", weights=toy_encoder)
    moved = tmp_path / "moved" / "toy.npy"
    moved.parent.mkdir()
    moved.write_bytes(toy_encoder.read_bytes())
    res = embed_to_store(corpus, out, encoder="toy", weights=moved)
    assert res["n_extracted"] == 0 and res["n_skipped"] == 4


def test_bad_parameters(tmp_path, toy_encoder, corpus):
    with pytest.raises(ParameterError, match=r"encoder: expected one of .*toy"):
        embed_to_store(corpus, tmp_path / "x", encoder="nope", weights=toy_encoder)
    with pytest.raises(ParameterError, match="never downloads one; obtain a toy projection"):
        embed_to_store(corpus, tmp_path / "x", encoder="toy")
    with pytest.raises(ParameterError, match="segment_seconds"):
        embed_to_store(corpus, tmp_path / "x", encoder="toy", weights=toy_encoder,
                       segment_seconds=0)
    with pytest.raises(ParameterError, match="workers"):
        embed_to_store(corpus, tmp_path / "x", encoder="toy", weights=toy_encoder, workers=0)
    assert not (tmp_path / "x").exists()


# --------------------------------------------------------------------------- audio


def test_resample_keeps_pitch_and_duration():
    sr, rate = 44_100, 16_000
    t = np.arange(sr) / sr
    y = np.sin(2 * np.pi * 1000.0 * t).astype(np.float32)
    z = resample(y, sr, rate)
    assert z.dtype == np.float32 and z.shape == (rate,)
    spec = np.abs(np.fft.rfft(z))
    assert abs(np.argmax(spec) * rate / z.size - 1000.0) <= 1.0
    np.testing.assert_array_equal(resample(y, sr, sr), y)


def test_load_mono_mixes_channels_by_mean(tmp_path):
    import soundfile as sf

    left = np.linspace(-0.5, 0.5, 1600, dtype=np.float32)
    sf.write(tmp_path / "s.wav", np.stack([left, -left * 0.5], axis=1), 16_000,
             subtype="FLOAT")
    np.testing.assert_allclose(load_mono(tmp_path / "s.wav", 16_000), left * 0.25, atol=1e-7)


def test_segment_bounds():
    assert segment_bounds(34, 10, 1.0) == [(0, 10), (10, 20), (20, 30)]  # 4 < 10/2 dropped
    assert segment_bounds(35, 10, 1.0)[-1] == (30, 35)
    assert segment_bounds(4, 10, 1.0) == [(0, 4)]  # shorter than a segment: one segment


def test_the_engine_needs_an_extractor_for_embeddings(tmp_path, corpus):
    from aria_tda.features.extract import extract_to_store

    with pytest.raises(ParameterError, match="extractor: expected a module name for modality"):
        extract_to_store(corpus, tmp_path / "x", modality="embedding")
    with pytest.raises(ParameterError, match="segments: expected an extractor with"):
        extract_to_store(corpus, tmp_path / "x", modality="audio", segments={"seconds": 1.0})
