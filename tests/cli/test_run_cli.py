"""``aria-tda run STUDY.toml``: results folder, one-line errors, nothing half-made on failure."""

from __future__ import annotations

from aria_tda.cli import main


def test_cli_run_and_errors(tmp_path, rng, capsys, planted_study):
    study = planted_study(tmp_path, rng)
    assert main(["run", str(study), "--quiet", "--out", str(tmp_path / "r2")]) == 0
    assert (tmp_path / "r2" / "results.json").is_file()
    capsys.readouterr()
    assert main(["run", str(tmp_path / "missing.toml")]) == 2
    err = capsys.readouterr().err
    assert "aria-tda run: error:" in err and "no such file" in err and "Traceback" not in err
    study.write_text(study.read_text().replace("B = 30", "B = 30\nBB = 2"))
    assert main(["run", str(study)]) == 2
    assert "study.toml:9: BB: expected a known key" in capsys.readouterr().err


def test_out_pointing_at_a_file_is_one_line(tmp_path, rng, capsys, planted_study):
    study = planted_study(tmp_path, rng)
    (tmp_path / "file.txt").write_text("keep me")
    assert main(["run", str(study), "--quiet", "--out", str(tmp_path / "file.txt")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("aria-tda run: error: ParameterError: output:")
    assert "expected a results folder, got a file" in err[0]
    assert (tmp_path / "file.txt").read_text() == "keep me"


def test_failed_run_leaves_no_empty_output_folder(tmp_path, rng, capsys, planted_study):
    study = planted_study(tmp_path, rng)
    q = tmp_path / "queries.csv"
    q.write_text(q.read_text().replace("\n3,", "\n9000,"))
    assert main(["run", str(study), "--quiet", "--out", str(tmp_path / "new" / "res")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "aria-tda run: error: DataError: queries: index 9000 out of range for 24 queries"
    ]
    assert not (tmp_path / "new").exists()


def test_a_transposed_setting_names_the_study_key(tmp_path, rng, capsys, planted_study):
    import numpy as np

    study = planted_study(tmp_path, rng)
    original = study.read_text()
    s = np.load(tmp_path / "scores.npy")
    np.save(tmp_path / "scores_t.npy", np.ascontiguousarray(s.T))
    study.write_text(original.replace('scores = "scores.npy"', 'scores = "scores_t.npy"'))
    assert main(["run", str(study), "--quiet", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "looks transposed (24 × 240)" in err[0]
    assert "study key transpose = true" in err[0] and "segments.csv" in err[0]
    study.write_text(original.replace('segments = "segments.csv"',
                                      'segments = "segments.csv"\ntranspose = true'))
    # now the flag is the mistake
    assert main(["run", str(study), "--quiet", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "looks transposed (24 × 240); drop --transpose" in err[0]
    assert "transpose = false" in err[0]
