"""Study settings that name embedding stores directly (train_embeddings / query_embeddings)."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.errors import DataError, ParameterError
from aria_tda.features.store import StoreWriter
from aria_tda.results import read_results_meta, read_table
from aria_tda.study import run_study
from aria_tda.study.cache import slot_name
from aria_tda.study.config import SettingSpec
from aria_tda.study.studyfile import parse_study

ENCODER = {"encoder": "toy-enc", "weights_sha256": "ab" * 32, "layer": None,
           "sample_rate": 16000, "window_seconds": 1.0, "dim": 16}


def _embedding_store(path, ids, x, encoder=ENCODER):
    w = StoreWriter(path, modality="embedding", params={"encoder": dict(encoder)})
    w.append(ids, {"embedding": np.asarray(x, dtype=np.float64)})
    return path


def _study(tmp_path, rng, planted_study, *, encoder_q=ENCODER):
    """The planted study's symbolic store + embedding stores that retrieve by harmony cluster."""
    planted_study(tmp_path, rng)  # the store: 120 tracks t000.., harmony clusters i % 4
    n, t = 120, 24
    centers = rng.normal(size=(4, 16)) * 3
    train = centers[np.arange(n) % 4] + rng.normal(size=(n, 16))
    queries = centers[np.arange(t) % 4] + rng.normal(size=(t, 16))
    _embedding_store(tmp_path / "emb_train", [f"t{i:03d}" for i in range(n)], train)
    _embedding_store(tmp_path / "emb_q", [f"q{j}" for j in range(t)], queries, encoder_q)
    study = tmp_path / "emb.toml"
    study.write_text(
        """
modality = "symbolic"
feature_store = "store"
output = "results"
K = [5, 10, 20]
K_report = 10
B = 30
n_bootstrap = 50
report = false

[[setting]]
train_embeddings = "emb_train"
query_embeddings = "emb_q"
"""
    )
    return study


def test_embedding_setting_runs_cached_and_track_level(tmp_path, rng, planted_study, capsys):
    study = _study(tmp_path, rng, planted_study)
    out = run_study(study)
    log = capsys.readouterr().out
    assert "toy-enc: cosine scores of 120 training tracks x 24 queries" in log
    meta = read_results_meta(out)
    s = meta["settings"][0]
    assert s["name"] == "toy-enc" and s["method"] == "toy-enc"  # the encoder's name
    assert s["normalize"] == "none" and s["train_embeddings"].endswith("emb_train")
    assert s["kind"] == "embedding"  # the report's Table 3 picks these settings
    cached = out / ".cache" / "_embedding_scores" / f"{slot_name('toy-enc')}.npy"
    # recorded relative to the results folder
    assert (out / s["scores"]).resolve() == cached.resolve() and cached.is_file()
    hom = read_table(out, "homogeneity")
    orig = hom[(hom.variant == "original") & (hom.K == 10)].set_index("channel")
    assert orig.loc["harmony", "zbar"] > 5  # the encoder retrieves the harmony clusters
    topk = read_table(out, "topk")
    assert topk["track_id"].str.match(r"^t\d{3}$").all()

    mtime = cached.stat().st_mtime_ns
    run_study(study)
    log = capsys.readouterr().out
    assert "reusing the cosine scores" in log and "reusing cached results" in log
    assert cached.stat().st_mtime_ns == mtime

    w = StoreWriter(tmp_path / "emb_q", modality="embedding", params={"encoder": ENCODER})
    w.append(["q_new"], {"embedding": rng.normal(size=(1, 16))})
    run_study(study)
    log = capsys.readouterr().out
    assert "x 25 queries" in log and "recomputing" in log


def test_mismatched_encoders_refused_before_any_output(tmp_path, rng, planted_study):
    other = dict(ENCODER, weights_sha256="cd" * 32)
    study = _study(tmp_path, rng, planted_study, encoder_q=other)
    with pytest.raises(DataError, match=r"setting 'toy-enc'.*different encoders.*weights_sha"):
        run_study(study, quiet=True)
    assert not (tmp_path / "results").exists()


def test_setting_keys_are_checked():
    base = 'modality = "audio"\nfeature_store = "f"\n\n[[setting]]\n'
    with pytest.raises(ParameterError, match=r"setting\[0\]\.query_embeddings: expected an "):
        parse_study(base + 'train_embeddings = "a"\n')
    with pytest.raises(ParameterError, match=r"setting\[0\]\.scores: expected a score matrix"):
        parse_study(base + 'method = "x"\n')
    with pytest.raises(ParameterError, match=r"segments: expected nothing with embedding"):
        parse_study(base + 'train_embeddings = "a"\nquery_embeddings = "b"\nsegments = "s"\n')
    spec = parse_study(base + 'train_embeddings = "a"\nquery_embeddings = "b"\n')
    setting = spec.settings[0]
    assert setting.is_embedding and setting.normalize == "none" and setting.method == "a"
    assert SettingSpec(scores="s.npy").normalize == "zscore"
    assert SettingSpec(train_embeddings="a", query_embeddings="b",
                       normalize="zscore").normalize == "zscore"


def test_a_damaged_cached_cosine_matrix_is_made_again_with_one_warning(tmp_path, rng,
                                                                       planted_study, capsys):
    import warnings

    from aria_tda.errors import AriaWarning

    study = _study(tmp_path, rng, planted_study)
    out = run_study(study)
    cached = out / ".cache" / "_embedding_scores" / f"{slot_name('toy-enc')}.npy"
    want = read_table(out, "homogeneity")
    data = bytearray(cached.read_bytes())
    data[-64:] = bytes(64)  # the same size, other values
    cached.write_bytes(bytes(data))
    capsys.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_study(study)
    damaged = [w for w in caught if "damaged cache entry" in str(w.message)]
    assert len(damaged) == 1 and issubclass(damaged[0].category, AriaWarning)
    assert cached.name in str(damaged[0].message)
    assert "cosine scores of 120 training tracks" in capsys.readouterr().out
    assert read_table(out, "homogeneity").equals(want)
