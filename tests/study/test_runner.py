"""The study runner end to end on a small planted study (real store, real score files)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aria_tda.errors import DataError, ParameterError
from aria_tda.results import read_results_meta, read_table
from aria_tda.study import run_study
from aria_tda.study.studyfile import load_study

N_TRACKS, N_QUERIES = 120, 24  # the sizes of the planted_study fixture (tests/conftest.py)


def test_planted_structure_found_on_harmony_only(tmp_path, rng, planted_study):
    out = run_study(planted_study(tmp_path, rng), quiet=True)
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


def test_rerun_reuses_cache_and_change_recomputes(tmp_path, rng, planted_study, capsys):
    study = planted_study(tmp_path, rng)
    run_study(study)
    capsys.readouterr()
    run_study(study)
    assert "reusing cached results" in capsys.readouterr().out
    text = study.read_text().replace("B = 30", "B = 31")
    study.write_text(text)
    run_study(study)
    assert "recomputing (parameters changed" in capsys.readouterr().out


def test_collapsed_setting_excluded_from_ranking(tmp_path, rng, planted_study):
    out = run_study(planted_study(tmp_path, rng, collapsed=True), quiet=True)
    rel = read_table(out, "reliability").iloc[0]
    assert rel.verdict == "collapsed" and rel.r1 > 0.9
    ranking = read_table(out, "ranking")
    assert ranking["excluded"].all() and ranking["rank"].isna().all()


def test_track_ids_that_do_not_match_the_store(tmp_path, rng, planted_study):
    study = planted_study(tmp_path, rng)
    seg = pd.read_csv(tmp_path / "segments.csv")
    seg["track_id"] = "x" + seg["track_id"]
    seg.to_csv(tmp_path / "segments.csv", index=False)
    with pytest.raises(DataError, match="have no features in the store"):
        run_study(load_study(study), quiet=True)


def test_study_without_segment_map_matches_store_by_position(tmp_path, rng, planted_study):
    study = planted_study(tmp_path, rng)
    # one score row per store track, no row ids, no segment map: matched by position
    s = rng.normal(size=(N_TRACKS, N_QUERIES)).astype(np.float32)
    np.save(tmp_path / "plain.npy", s)
    text = study.read_text().replace('scores = "scores.npy"\nsegments = "segments.csv"',
                                     'scores = "plain.npy"')
    study.write_text(text)
    out = run_study(load_study(study), quiet=True)
    topk = read_table(out, "topk")
    assert topk["track_id"].str.startswith("t").all()
    np.save(tmp_path / "plain.npy", s[:-1])
    with pytest.raises(DataError, match="no row ids"):
        run_study(load_study(study), quiet=True)


def test_shuffled_segment_map_with_row_column(tmp_path, rng, planted_study):
    """A map listing segments out of order (with their score row) gives the same results."""
    study = planted_study(tmp_path, rng)
    out1 = run_study(load_study(study), quiet=True, output=tmp_path / "r1")
    seg = pd.read_csv(tmp_path / "segments.csv").rename(columns={"segment": "row"})
    seg.sample(frac=1.0, random_state=0).to_csv(tmp_path / "segments.csv", index=False)
    out2 = run_study(load_study(study), quiet=True, output=tmp_path / "r2")
    h1, h2 = read_table(out1, "homogeneity"), read_table(out2, "homogeneity")
    pd.testing.assert_frame_equal(h1, h2)


def test_input_mistakes_are_found_before_any_work(tmp_path, rng, planted_study):
    study = planted_study(tmp_path, rng)
    study.write_text(study.read_text().replace('confound = ["genre"]',
                                               'confound = ["genre", "tempo"]'))
    with pytest.raises(DataError, match="tempo"):
        run_study(load_study(study), quiet=True)
    assert not (tmp_path / "results" / ".cache").exists()
    assert not any((tmp_path / "results").glob("*.csv"))
    study.write_text(study.read_text().replace('confound = ["genre", "tempo"]', "")
                     .replace("K = [5, 10, 20]", "K = [10, 500]"))
    with pytest.raises(ParameterError, match="group sizes up to"):
        run_study(load_study(study), quiet=True)


def test_auto_normalisation_is_resolved_once_and_recorded(tmp_path, rng, planted_study):
    study = planted_study(tmp_path, rng)
    study.write_text(study.read_text().replace('normalize = "zscore"', 'normalize = "auto"'))
    out = run_study(load_study(study), quiet=True)
    rel = read_table(out, "reliability").iloc[0]
    assert rel.normalize == "auto" and rel.normalize_used in {"zscore", "rank"}
    assert read_results_meta(out)["settings"][0]["normalize_used"] == rel.normalize_used


# ---- reliability (issue 13, item 8): failed runs leave nothing half-made -----------------


def test_input_mistake_creates_no_output_folder(tmp_path, rng, planted_study):
    study = planted_study(tmp_path, rng)
    study.write_text(study.read_text().replace('confound = ["genre"]', 'confound = ["tempo"]'))
    with pytest.raises(DataError, match="tempo"):
        run_study(load_study(study), quiet=True)
    assert not (tmp_path / "results").exists()


def test_failed_setting_leaves_no_running_step_and_rerun_redoes_it(
    tmp_path, rng, planted_study, monkeypatch
):
    import aria_tda.homogeneity
    from aria_tda._steps import RECORD

    study = planted_study(tmp_path, rng)

    def broken(*args, **kwargs):
        raise RuntimeError("the null broke")

    monkeypatch.setattr(aria_tda.homogeneity, "null_distribution", broken)
    with pytest.raises(RuntimeError, match="the null broke"):
        run_study(study, quiet=True)
    records = list((tmp_path / "results").rglob(RECORD))
    assert not records  # no step marked "running"
    assert not (tmp_path / "results").exists()  # the run made it and it holds nothing
    monkeypatch.undo()
    out = run_study(study, quiet=True)
    assert (out / "results.json").is_file()


def test_output_that_is_a_file_is_an_error(tmp_path, rng, planted_study):
    study = planted_study(tmp_path, rng)
    (tmp_path / "taken").write_text("not a folder")
    with pytest.raises(ParameterError, match="output: expected a results folder, got a file"):
        run_study(study, output=tmp_path / "taken", quiet=True)
    assert (tmp_path / "taken").read_text() == "not a folder"


def test_out_of_range_query_index_is_named(tmp_path, rng, planted_study):
    study = planted_study(tmp_path, rng)
    q = pd.read_csv(tmp_path / "queries.csv")
    q.loc[3, "query"] = 9000
    q.to_csv(tmp_path / "queries.csv", index=False)
    with pytest.raises(DataError, match=r"^queries: index 9000 out of range for 24 queries$"):
        run_study(study, quiet=True)


def test_transpose_key_reads_a_query_by_train_matrix(tmp_path, rng, planted_study):
    study = planted_study(tmp_path, rng)
    out1 = run_study(study, quiet=True, output=tmp_path / "r1")
    s = np.load(tmp_path / "scores.npy")
    np.save(tmp_path / "scores_t.npy", np.ascontiguousarray(s.T))  # queries x segments
    study.write_text(study.read_text().replace('scores = "scores.npy"',
                                               'scores = "scores_t.npy"\ntranspose = true'))
    spec = load_study(study)
    assert spec.settings[0].transpose is True
    out2 = run_study(spec, quiet=True, output=tmp_path / "r2")
    h1, h2 = read_table(out1, "homogeneity"), read_table(out2, "homogeneity")
    pd.testing.assert_frame_equal(h1, h2)
    assert read_results_meta(out2)["settings"][0]["transpose"] is True


def test_constant_query_is_excluded_on_both_variants(tmp_path, rng, planted_study):
    study = planted_study(tmp_path, rng)
    s = np.load(tmp_path / "scores.npy")
    s[:, 3] = 1.5  # query 3 scores every segment the same: it ranks nothing
    np.save(tmp_path / "scores.npy", s)
    (tmp_path / "scores.npy.manifest.json").unlink(missing_ok=True)
    with pytest.warns(Warning, match="constant score column"):
        out = run_study(study, quiet=True)
    hom = read_table(out, "homogeneity")
    for variant in ("original", "residual"):
        rows = hom[hom.variant == variant]
        assert (rows["n_constant_excluded"] == 1).all(), variant
        assert (rows["n_queries"] == N_QUERIES - 1).all(), variant
    qz = read_table(out, "query_z")
    assert qz[(qz["query"] == 3)]["z"].isna().all()
