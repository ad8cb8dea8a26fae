"""``aria-tda homogeneity``: one setting, flags derived from the study spec, its own log name."""

from __future__ import annotations

from aria_tda.cli import build_parser, main
from aria_tda.results import read_table


def test_cli_homogeneity_one_setting(tmp_path, rng, planted_study):
    planted_study(tmp_path, rng)
    out = tmp_path / "one"
    code = main(["homogeneity", str(tmp_path / "scores.npy"), "--features",
                 str(tmp_path / "store"), "--segments", str(tmp_path / "segments.csv"),
                 "-K", "5", "10", "-B", "20", "--bootstrap", "20", "--out", str(out)])
    assert code == 0
    assert (out / "report.html").stat().st_size > 10_000
    hom = read_table(out, "homogeneity")
    assert set(hom.K) == {5, 10} and set(hom.setting) == {"scores"}


def test_logs_under_its_own_name(tmp_path, rng, capsys, planted_study):
    planted_study(tmp_path, rng)
    code = main(["homogeneity", str(tmp_path / "scores.npy"), "--features",
                 str(tmp_path / "store"), "--segments", str(tmp_path / "segments.csv"),
                 "-K", "5", "-B", "5", "--bootstrap", "0", "--no-residual", "--no-report",
                 "--out", str(tmp_path / "one")])
    assert code == 0
    out = capsys.readouterr().out
    assert "[aria-tda homogeneity] scores: reliability diagnostics" in out
    assert "aria-tda run" not in out


def test_defaults_and_help_come_from_the_study_spec():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    p = sub.choices["homogeneity"]
    helps = {a.dest: a.help for a in p._actions}
    assert helps["B"].endswith("(default: 200)")
    assert helps["n_bootstrap"].endswith("(default: 1000)")
    assert "aria_tda.homogeneity.DEFAULT_KS" in helps["K"]
    args = p.parse_args(["s.npy", "--features", "f", "--out", "o"])
    assert args.B is None and args.K is None and args.n_bootstrap is None  # spec defaults


def test_transpose_flag(tmp_path, rng, planted_study):
    import numpy as np

    from aria_tda.results import read_results_meta

    planted_study(tmp_path, rng)
    s = np.load(tmp_path / "scores.npy")
    np.save(tmp_path / "scores_t.npy", np.ascontiguousarray(s.T))
    code = main(["homogeneity", str(tmp_path / "scores_t.npy"), "--transpose", "--features",
                 str(tmp_path / "store"), "--segments", str(tmp_path / "segments.csv"),
                 "-K", "5", "-B", "5", "--bootstrap", "0", "--no-residual", "--no-report",
                 "--out", str(tmp_path / "one")])
    assert code == 0
    assert read_results_meta(tmp_path / "one")["settings"][0]["transpose"] is True
