"""The demo's offline encoders on a tiny real corpus: split, captions, training, resume, check.

A real corpus (music21 works rendered with FluidSynth, 4 s tracks, three versions per work),
the three encoders trained for a few steps at toy sizes, loaded back through the registry.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pytest

from aria_tda.embed.encoders import load_encoder
from aria_tda.errors import ParameterError
from aria_tda_experiments.audio.corpus import build_audio_corpus
from aria_tda_experiments.audio.encoders import (
    DEMO_ENCODERS,
    caption,
    clews_training_tracks,
    encoder_split,
    train_demo_encoders,
    version_retrieval,
    versions_corpus,
)
from aria_tda_experiments.encoders import ClapStyleConfig, ClewsStyleConfig, MertStyleConfig
from aria_tda_experiments.encoders.checkpoint import read_checkpoint

CORPUS = {"collections": ("ryansMammoth", "bach"), "works_per_collection": 2,
          "versions_per_work": 3, "planted_works": 1, "test_fraction": 0.5,
          "track_seconds": 4.0}
SMALL: dict[str, Any] = {"window_seconds": 1.5, "window_hop_seconds": 1.0, "batch_size": 4,
                         "steps": 6}
CONFIGS = {
    "clews-style": ClewsStyleConfig(**SMALL, channels=(4, 8), dim=8),
    "mert-style": MertStyleConfig(**SMALL, d_model=16, n_layers=1, n_heads=2, d_ff=16,
                                  vocab=8),
    "clap-style": ClapStyleConfig(**SMALL, channels=(4, 8), dim=8, text_width=8),
}
VERSIONS = 5  # clews-style's versions per work (4 works: 7 more 4 s renderings)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    pytest.importorskip("music21")
    pytest.importorskip("soundfile")
    from aria_tda.errors import MissingDependencyError
    from aria_tda.features.audio.render import find_soundfont, import_fluidsynth

    try:
        import_fluidsynth()
        find_soundfont()
    except MissingDependencyError as exc:
        pytest.skip(str(exc))
    root = tmp_path_factory.mktemp("enc-corpus")
    return build_audio_corpus(root / "corpus", work_cache=root / "works", progress_bar=False,
                              **CORPUS)


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("encoders")
    return out, train_demo_encoders(corpus, out, seed=3, configs=CONFIGS, quiet=True,
                                    clews_versions=VERSIONS)


def test_split_holds_out_the_last_version_and_never_a_test_work(corpus):
    fit, queries = encoder_split(corpus)
    assert set(fit["split"]) == {"train"} and fit["version"].max() == 1
    assert set(queries["split"]) <= {"train", "planted"}
    assert set(queries.loc[queries["split"] == "train", "version"]) == {2}
    assert not set(fit["track_id"]) & set(queries["track_id"])
    assert set(queries["work_id"]) <= set(fit["work_id"])
    assert not set(corpus.test["work_id"]) & (set(fit["work_id"]) | set(queries["work_id"]))
    assert len(queries) == fit["work_id"].nunique() + len(corpus.planted)
    fit0, q0 = encoder_split(corpus, holdout_versions=0)
    assert len(fit0) == len(corpus.train) and set(q0["split"]) == {"planted"}
    with pytest.raises(ParameterError, match="holdout_versions"):
        encoder_split(corpus, holdout_versions=3)


def test_caption_from_metadata():
    row = {"genre": "chorale", "instrument_family": "synth_lead", "tempo_scale": 1.15}
    assert caption(row) == "a chorale played by synth lead, fast"
    assert caption({**row, "tempo_scale": 0.9}).endswith("slow")
    assert caption({**row, "tempo_scale": 1.0}).endswith("moderate")


@pytest.mark.slow
def test_train_load_and_embed_each_encoder(trained, corpus):
    out, paths = trained
    assert set(paths) == set(DEMO_ENCODERS)
    fit, _ = encoder_split(corpus)
    for name, path in paths.items():
        assert path == out / f"{name}.pt"
        header = read_checkpoint(path)["header"]
        assert header["name"] == name and header["seed"] == 3
        n = 3 * fit["work_id"].nunique() if name == "clews-style" else len(fit)
        assert header["training"]["n_tracks"] == n
        assert len(header["training"]["losses"]) == SMALL["steps"]
        enc = load_encoder(name, weights=path)
        y = np.random.default_rng(0).standard_normal(enc.sample_rate * 2).astype(np.float32)
        frames = enc.embed_frames(y)
        assert frames.ndim == 2 and frames.shape[1] == enc.dim and np.all(np.isfinite(frames))
    mert = read_checkpoint(paths["mert-style"])["header"]
    assert (out / "tokenizers" / "tokenizers.npz").is_file()  # fitted on the encoder tracks
    assert mert["config"]["vocab"] == 8 and mert["config"]["hop"] == 480
    assert read_checkpoint(paths["clap-style"])["header"]["extra"]["vocab"][0] == "<unk>"


@pytest.mark.slow
def test_resume_trains_nothing_and_seed_is_deterministic(trained, corpus, tmp_path, capsys):
    out, paths = trained
    stamps = {n: p.stat().st_mtime_ns for n, p in paths.items()}
    again = train_demo_encoders(corpus, out, seed=3, configs=CONFIGS, clews_versions=VERSIONS)
    assert again == paths and {n: p.stat().st_mtime_ns for n, p in again.items()} == stamps
    assert capsys.readouterr().out.count("reusing") == 3
    # same seed elsewhere: byte-identical checkpoint; another seed: another one
    other = train_demo_encoders(corpus, tmp_path / "a", seed=3, names=["clews-style"],
                                configs=CONFIGS, quiet=True, clews_versions=VERSIONS)
    digest = hashlib.sha256(paths["clews-style"].read_bytes()).hexdigest()
    assert hashlib.sha256(other["clews-style"].read_bytes()).hexdigest() == digest
    changed = train_demo_encoders(corpus, tmp_path / "a", seed=4, names=["clews-style"],
                                  configs=CONFIGS, quiet=True, clews_versions=VERSIONS)
    only_demo = train_demo_encoders(corpus, tmp_path / "b", seed=3, names=["clews-style"],
                                    configs=CONFIGS, quiet=True, clews_versions=None)
    assert read_checkpoint(only_demo["clews-style"])["header"]["training"]["versions"] == [0, 1]
    assert hashlib.sha256(changed["clews-style"].read_bytes()).hexdigest() != digest


@pytest.mark.slow
def test_demo_tokenizers_are_the_mert_targets(corpus, tmp_path):
    from aria_tda_experiments.audio.tokenizers import TokenizerConfig, fit_tokenizers

    tok = fit_tokenizers(corpus.paths("train"), config=TokenizerConfig(
        frame_hz=12.5, semantic_k=5, rvq_levels=1, rvq_codebook=2, cond_codebooks=1,
        cond_codebook=2, kmeans_iters=3, fit_frames=500))
    paths = train_demo_encoders(corpus, tmp_path, tokenizers=tok, names=["mert-style"],
                                configs=CONFIGS, quiet=True)
    assert read_checkpoint(paths["mert-style"])["header"]["config"]["vocab"] == 5
    noise = [np.random.default_rng(i).standard_normal(16_000).astype(np.float32)
             for i in range(2)]
    bad = fit_tokenizers(noise, config=TokenizerConfig(
        sr=16_000, frame_hz=12.5, semantic_k=2, rvq_levels=1, rvq_codebook=2,
        cond_codebooks=1, cond_codebook=2, kmeans_iters=1, fit_frames=20))
    with pytest.raises(ParameterError, match="tokenizers at 24000 Hz"):
        train_demo_encoders(corpus, tmp_path / "b", tokenizers=bad, names=["mert-style"],
                            configs=CONFIGS, quiet=True)


@pytest.mark.slow
def test_version_retrieval_figure(trained, corpus):
    _, paths = trained
    enc = load_encoder("clews-style", weights=paths["clews-style"])
    r = version_retrieval(enc, corpus)
    fit, queries = encoder_split(corpus)
    assert r["n_queries"] == len(queries) and r["n_gallery"] == len(fit)
    assert 0.0 <= r["rank1"] <= 1.0 and r["rank1"] == pytest.approx(np.mean(list(
        r["hits"].values())), abs=1e-4)
    # each query's work has two gallery versions (three for a planted one)
    expected = np.mean([(fit["work_id"] == w).sum() / len(fit) for w in queries["work_id"]])
    assert r["chance"] == pytest.approx(expected, abs=1e-4)
    assert r["test_works"]["n_queries"] == len(corpus.test)
    assert r["query_versions"] == [2, 3] and r["gallery_versions"] == [0, 1]
    assert r["n_works"] == fit["work_id"].nunique()
    n_miss = sum(not h for h in r["hits"].values())
    assert sum(r["misses_by_family"].values()) == n_miss


@pytest.mark.slow
def test_clews_trains_on_more_versions_but_never_a_query_version(trained, corpus):
    out, paths = trained
    ext = versions_corpus(corpus, out / "clews-corpus", VERSIONS)  # reused as it is
    assert len(ext.tracks) == 4 * VERSIONS and ext.stats["n_reused"] == len(corpus.tracks)
    rows = clews_training_tracks(corpus, ext)
    fit, queries = encoder_split(corpus)
    assert set(rows["version"]) == {0, 1, 4} and set(rows["work_id"]) == set(fit["work_id"])
    assert set(fit["track_id"]) < set(rows["track_id"])
    assert not set(rows["track_id"]) & set(queries["track_id"])
    # the shared versions are the demo's renderings, byte for byte
    for tid in fit["track_id"]:
        a = (corpus.root / corpus.tracks.set_index("track_id").loc[tid, "path"]).read_bytes()
        b = (ext.root / ext.tracks.set_index("track_id").loc[tid, "path"]).read_bytes()
        assert a == b
    header = read_checkpoint(paths["clews-style"])["header"]
    assert header["training"]["versions"] == [0, 1, 4]
    assert header["training"]["n_tracks"] == len(rows)
    with pytest.raises(ParameterError, match="clews_versions"):
        versions_corpus(corpus, out / "x", 12)  # 11 instrument families


@pytest.mark.slow
def test_extra_works_train_every_version_and_keep_the_demo_split(corpus, tmp_path):
    # one more work per collection re-splits the extended corpus' collections: the demo's
    # split must still decide (its training works in, its test works out, no query version)
    ext = versions_corpus(corpus, tmp_path / "x1", 4, extra_works=1)
    demo_works = set(corpus.tracks["work_id"])
    extra = set(ext.tracks["work_id"]) - demo_works
    assert len(extra) == 2
    rows = clews_training_tracks(corpus, ext)
    fit, queries = encoder_split(corpus)
    assert set(rows["work_id"]) == set(fit["work_id"]) | extra
    assert not set(rows["work_id"]) & set(corpus.test["work_id"])
    assert not set(rows["track_id"]) & set(queries["track_id"])
    assert set(rows.loc[rows["work_id"].isin(extra), "version"]) == {0, 1, 2, 3}
    assert set(rows.loc[~rows["work_id"].isin(extra), "version"]) == {0, 1}


def test_bad_arguments(corpus, tmp_path):
    with pytest.raises(ParameterError, match="names"):
        train_demo_encoders(corpus, tmp_path, names=["clews"])
    with pytest.raises(ParameterError, match="ClewsStyleConfig"):
        train_demo_encoders(corpus, tmp_path, names=["clews-style"],
                            configs={"clews-style": CONFIGS["mert-style"]})
