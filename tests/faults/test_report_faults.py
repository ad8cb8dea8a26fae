"""A full file system under ``aria-tda report`` and ``aria-tda homogeneity``: one line, exit 2,
no temporary left, and an earlier report or results folder left as it was."""

from __future__ import annotations

import shutil

import pytest

from faultlib import cli, fill, leftovers, one_line_error, small_fs

pytestmark = pytest.mark.slow


@pytest.fixture
def results(tmp_path, rng, planted_study):
    """A finished small study: (study file, its results folder)."""
    study = planted_study(tmp_path, rng)
    out = tmp_path / "results"
    proc = cli(["run", study, "--out", out, "--quiet", "--no-report"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    return study, out


def test_report_on_a_full_disk_keeps_the_old_page(tmp_path, results):
    _, out = results
    with small_fs(tmp_path, "2m") as fs:
        copy = fs / "results"
        shutil.copytree(out, copy, ignore=shutil.ignore_patterns(".cache"))
        first = cli(["report", copy])
        assert first.returncode == 0, first.stderr[-2000:]
        page = (copy / "report.html").read_bytes()
        ballast = fill(fs, 8 * 2**10)
        line = one_line_error(cli(["report", copy]))
        assert "No space left on tmpfs" in line and "report.html" in line, line
        assert (copy / "report.html").read_bytes() == page  # the old page, whole
        assert leftovers(fs) == [] and not (copy / ".aria-lock").exists()
        line = one_line_error(cli(["report", copy, "--latex", "--out", fs / "latex"]))
        assert "No space left on tmpfs" in line, line
        assert not (fs / "latex").exists() and leftovers(fs) == []
        ballast.unlink()
        assert cli(["report", copy]).returncode == 0


def test_homogeneity_on_a_full_disk_leaves_nothing(tmp_path, results):
    study, _ = results
    base = study.parent
    args = ["homogeneity", base / "scores.npy", "--segments", base / "segments.csv",
            "--features", base / "store", "-K", "5", "10", "-B", "20", "--no-progress"]
    with small_fs(tmp_path, "1m") as fs:
        ballast = fill(fs, 4 * 2**10)
        line = one_line_error(cli([*args, "--out", fs / "hom"]))
        assert "No space left on tmpfs" in line, line
        assert leftovers(fs) == [] and not (fs / "hom").exists()
        ballast.unlink()
        done = cli([*args, "--out", fs / "hom"])
        assert done.returncode == 0, done.stderr[-2000:]
        assert (fs / "hom" / "results.json").is_file() and leftovers(fs) == []
