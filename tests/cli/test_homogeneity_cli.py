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
    assert "[aria-tda homogeneity] scores: reading the scores (diagnostics, top-K, S_track)" in out
    assert "aria-tda run" not in out


def test_defaults_and_help_come_from_the_study_spec():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    p = sub.choices["homogeneity"]
    helps = {a.dest: a.help for a in p._actions}
    assert helps["B"].endswith("(default: 200)")
    assert helps["n_bootstrap"].endswith("(default: 1000)")
    assert "20 50 100 200 300 400 500" in helps["K"] and "DEFAULT_KS" not in helps["K"]
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


def _kronfluence_file(path, s):
    """Kronfluence's pairwise_scores.safetensors of ``s`` (train x queries): queries x train."""
    import json

    import numpy as np

    data = np.ascontiguousarray(s.T.astype(np.float32))
    header = json.dumps({"all_modules": {"dtype": "F32", "shape": list(data.shape),
                                         "data_offsets": [0, data.nbytes]}}).encode()
    header += b" " * (-len(header) % 8)
    path.write_bytes(len(header).to_bytes(8, "little") + header + data.tobytes())
    return path


def _error_line(capsys):
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    return err[0]


def test_transposed_matrices_are_named_as_such(tmp_path, rng, capsys, planted_study):
    import numpy as np

    planted_study(tmp_path, rng)
    s = np.load(tmp_path / "scores.npy")  # 240 segments x 24 queries
    common = ["--features", str(tmp_path / "store"), "-K", "5", "-B", "5", "--bootstrap", "0",
              "--no-residual", "--no-report"]
    # columns match the store's 120 tracks, no segment map: not "no segment map was given"
    track_level = s.reshape(120, 2, 24).mean(axis=1)
    np.save(tmp_path / "tracks_t.npy", np.ascontiguousarray(track_level.T))
    assert main(["homogeneity", str(tmp_path / "tracks_t.npy"), *common,
                 "--out", str(tmp_path / "a")]) == 2
    line = _error_line(capsys)
    assert "looks transposed (24 × 120); pass --transpose" in line
    assert "feature store has 120 tracks" in line and "no segment map was given" in line
    # columns match the segment map's 240 entries
    np.save(tmp_path / "seg_t.npy", np.ascontiguousarray(s.T))
    assert main(["homogeneity", str(tmp_path / "seg_t.npy"), *common, "--segments",
                 str(tmp_path / "segments.csv"), "--out", str(tmp_path / "b")]) == 2
    line = _error_line(capsys)
    assert "looks transposed (24 × 240); pass --transpose" in line and "segments.csv" in line
    # a Kronfluence file (queries x train, transposed by ARIA) and --transpose: drop the flag
    kron = _kronfluence_file(tmp_path / "pairwise_scores.safetensors", s)
    assert main(["homogeneity", str(kron), "--transpose", *common, "--segments",
                 str(tmp_path / "segments.csv"), "--out", str(tmp_path / "c")]) == 2
    line = _error_line(capsys)
    assert "looks transposed (24 × 240); drop --transpose" in line
    assert "pass --transpose" not in line and "Kronfluence" in line
    assert not any((tmp_path / d).exists() for d in "abc")
