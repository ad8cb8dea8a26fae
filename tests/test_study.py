"""The study runner end to end on a small planted study (real store, real score files)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aria.errors import DataError, ParameterError
from aria.features.registry import features as registry_features
from aria.features.store import write_store
from aria.results import read_results_meta, read_table
from aria.scores import save_scores
from aria.study import run_study
from aria.study_config import load_study

N_TRACKS, N_QUERIES, SEG_PER_TRACK = 120, 24, 2


def _make_study(tmp_path, rng, *, collapsed=False):
    """Tracks in 4 clusters on the harmony features only; query q retrieves cluster q % 4."""
    cluster = np.arange(N_TRACKS) % 4
    feats = {}
    for spec in registry_features("symbolic"):
        x = rng.normal(size=(N_TRACKS, spec.dim))
        if spec.channel == "harmony":
            centers = rng.normal(scale=4.0, size=(4, spec.dim))
            x = centers[cluster] + 0.3 * x
        feats[spec.name] = x
    ids = [f"t{i:03d}" for i in range(N_TRACKS)]
    genre = np.array(["a", "b"])[np.arange(N_QUERIES) % 2]
    write_store(tmp_path / "store", modality="symbolic", track_ids=ids, features=feats,
                metadata=pd.DataFrame({"track_id": ids, "title": [f"piece {i}" for i in range(N_TRACKS)]}))
    # segment-level scores: two segments per track
    seg_track = np.repeat(np.arange(N_TRACKS), SEG_PER_TRACK)
    if collapsed:
        u = rng.normal(size=N_TRACKS * SEG_PER_TRACK)
        s = np.outer(u, 1.0 + 0.01 * rng.normal(size=N_QUERIES))
    else:
        target = np.arange(N_QUERIES) % 4
        s = (cluster[seg_track][:, None] == target[None, :]).astype(float) * 3.0
        s += rng.normal(size=s.shape)
    save_scores(s.astype(np.float32), tmp_path / "scores.npy", method="planted")
    pd.DataFrame({"segment": np.arange(seg_track.size), "track_id": np.array(ids)[seg_track]}).to_csv(
        tmp_path / "segments.csv", index=False)
    pd.DataFrame({"query": np.arange(N_QUERIES), "genre": genre}).to_csv(tmp_path / "queries.csv", index=False)
    (tmp_path / "study.toml").write_text(
        """
name = "planted"
modality = "symbolic"
feature_store = "store"
output = "results"
K = [5, 10, 20]
K_report = 10
B = 30
seed = 1
n_bootstrap = 50
queries = "queries.csv"
confound = ["genre"]
report = false

[[setting]]
method = "Planted"
scores = "scores.npy"
segments = "segments.csv"
normalize = "zscore"
"""
    )
    return tmp_path / "study.toml"


def test_planted_structure_found_on_harmony_only(tmp_path, rng):
    out = run_study(_make_study(tmp_path, rng), quiet=True)
    meta = read_results_meta(out)
    assert meta["study"]["B"] == 30 and meta["settings"][0]["name"] == "Planted"
    hom = read_table(out, "homogeneity")
    orig = hom[(hom.variant == "original") & (hom.K == 10)].set_index("channel")
    assert orig.loc["harmony", "zbar"] > 5
    assert orig.loc["harmony", "pos"] == 1.0
    for ch in ("melody", "rhythm", "dynamic", "texture"):
        assert abs(orig.loc[ch, "zbar"]) < 2.0, ch
    rel = read_table(out, "reliability").iloc[0]
    assert rel.verdict == "ok" and 0 <= rel.kappa <= 1
    assert set(hom.variant) == {"original", "residual"} and set(hom.K) == {5, 10, 20}
    topk = read_table(out, "topk")
    assert topk.groupby(["variant", "query"]).size().eq(10).all()
    assert topk["track_id"].str.startswith("t").all()
    conf = read_table(out, "confound")
    assert set(conf.stratum) == {"a", "b"} and conf.n.max() == N_QUERIES // 2
    align = read_table(out, "alignment")
    assert set(align.channel) == {"melody", "harmony", "rhythm", "dynamic", "texture"}
    ranking = read_table(out, "ranking")
    assert (ranking["rank"] == 1).any()
    assert read_table(out, "pairs") is not None and read_table(out, "null") is not None


def test_rerun_reuses_cache_and_change_recomputes(tmp_path, rng, capsys):
    study = _make_study(tmp_path, rng)
    run_study(study)
    capsys.readouterr()
    run_study(study)
    assert "reusing cached results" in capsys.readouterr().out
    text = study.read_text().replace("B = 30", "B = 31")
    study.write_text(text)
    run_study(study)
    assert "recomputing (parameters changed" in capsys.readouterr().out


def test_collapsed_setting_excluded_from_ranking(tmp_path, rng):
    out = run_study(_make_study(tmp_path, rng, collapsed=True), quiet=True)
    rel = read_table(out, "reliability").iloc[0]
    assert rel.verdict == "collapsed" and rel.r1 > 0.9
    ranking = read_table(out, "ranking")
    assert ranking["excluded"].all() and ranking["rank"].isna().all()


def test_track_ids_that_do_not_match_the_store(tmp_path, rng):
    study = _make_study(tmp_path, rng)
    seg = pd.read_csv(tmp_path / "segments.csv")
    seg["track_id"] = "x" + seg["track_id"]
    seg.to_csv(tmp_path / "segments.csv", index=False)
    with pytest.raises(DataError, match="have no features in the store"):
        run_study(load_study(study), quiet=True)


def test_cli_run_and_errors(tmp_path, rng, capsys):
    from aria.cli import main

    study = _make_study(tmp_path, rng)
    assert main(["run", str(study), "--quiet", "--out", str(tmp_path / "r2")]) == 0
    assert (tmp_path / "r2" / "results.json").is_file()
    capsys.readouterr()
    assert main(["run", str(tmp_path / "missing.toml")]) == 2
    err = capsys.readouterr().err
    assert "aria run: error:" in err and "no such file" in err and "Traceback" not in err
    study.write_text(study.read_text().replace("B = 30", "B = 30\nBB = 2"))
    assert main(["run", str(study)]) == 2
    assert "study.toml:9: BB: expected a known key" in capsys.readouterr().err


def test_cli_homogeneity_one_setting(tmp_path, rng):
    from aria.cli import main

    _make_study(tmp_path, rng)
    out = tmp_path / "one"
    code = main(["homogeneity", str(tmp_path / "scores.npy"), "--features", str(tmp_path / "store"),
                 "--segments", str(tmp_path / "segments.csv"), "-K", "5", "10", "-B", "20",
                 "--bootstrap", "20", "--out", str(out)])
    assert code == 0
    assert (out / "report.html").stat().st_size > 10_000
    hom = read_table(out, "homogeneity")
    assert set(hom.K) == {5, 10} and set(hom.setting) == {"scores"}


def test_study_without_segment_map_matches_store_by_position(tmp_path, rng):
    study = _make_study(tmp_path, rng)
    # one score row per store track, no row ids, no segment map: matched by position
    s = rng.normal(size=(N_TRACKS, N_QUERIES)).astype(np.float32)
    np.save(tmp_path / "plain.npy", s)
    text = study.read_text().replace('scores = "scores.npy"\nsegments = "segments.csv"', 'scores = "plain.npy"')
    study.write_text(text)
    out = run_study(load_study(study), quiet=True)
    topk = read_table(out, "topk")
    assert topk["track_id"].str.startswith("t").all()
    np.save(tmp_path / "plain.npy", s[:-1])
    with pytest.raises(DataError, match="no row ids"):
        run_study(load_study(study), quiet=True)


def test_shuffled_segment_map_with_row_column(tmp_path, rng):
    """A map listing segments out of order (with their score row) gives the same results."""
    study = _make_study(tmp_path, rng)
    out1 = run_study(load_study(study), quiet=True, output=tmp_path / "r1")
    seg = pd.read_csv(tmp_path / "segments.csv").rename(columns={"segment": "row"})
    seg.sample(frac=1.0, random_state=0).to_csv(tmp_path / "segments.csv", index=False)
    out2 = run_study(load_study(study), quiet=True, output=tmp_path / "r2")
    h1, h2 = read_table(out1, "homogeneity"), read_table(out2, "homogeneity")
    pd.testing.assert_frame_equal(h1, h2)


def test_input_mistakes_are_found_before_any_work(tmp_path, rng):
    study = _make_study(tmp_path, rng)
    study.write_text(study.read_text().replace('confound = ["genre"]', 'confound = ["genre", "tempo"]'))
    with pytest.raises(DataError, match="tempo"):
        run_study(load_study(study), quiet=True)
    assert not (tmp_path / "results" / ".cache").exists()
    assert not any((tmp_path / "results").glob("*.csv"))
    study.write_text(study.read_text().replace('confound = ["genre", "tempo"]', "").replace("K = [5, 10, 20]", "K = [10, 500]"))
    with pytest.raises(ParameterError, match="group sizes up to"):
        run_study(load_study(study), quiet=True)


def test_auto_normalisation_is_resolved_once_and_recorded(tmp_path, rng):
    study = _make_study(tmp_path, rng)
    study.write_text(study.read_text().replace('normalize = "zscore"', 'normalize = "auto"'))
    out = run_study(load_study(study), quiet=True)
    rel = read_table(out, "reliability").iloc[0]
    assert rel.normalize == "auto" and rel.normalize_used in {"zscore", "rank"}
    assert read_results_meta(out)["settings"][0]["normalize_used"] == rel.normalize_used
