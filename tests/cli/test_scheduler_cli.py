"""``--scheduler`` of ``aria-tda diagnose`` and ``aria-tda homogeneity``: a real ``local:N`` cluster
of worker processes gives the single-machine numbers; bad values are one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from aria_tda.cli import main
from aria_tda.scores import save_scores

pytest.importorskip("dask.distributed")


@pytest.fixture
def scores_file(rng, tmp_path):
    s = rng.standard_normal((300, 10)) + np.outer(rng.random(300), np.ones(10))
    return save_scores(s, tmp_path / "scores.npy")


@pytest.mark.slow
def test_diagnose_on_a_local_cluster_equals_local(scores_file, capsys):
    assert main(["diagnose", str(scores_file), "--json", "--chunk-rows", "32"]) == 0
    want = json.loads(capsys.readouterr().out)
    proc = subprocess.run(
        [sys.executable, "-m", "aria_tda", "diagnose", str(scores_file), "--json",
         "--chunk-rows", "32", "--scheduler", "local:2"],
        capture_output=True, text=True, timeout=240, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["verdict"] == want["verdict"]
    for key in ("kappa", "r1", "r2_5", "p", "v1_constancy", "sigma1"):
        assert got[key] == pytest.approx(want[key], rel=1e-12), key
    np.testing.assert_allclose(got["energy_ratios"], want["energy_ratios"], rtol=1e-12)


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--scheduler", "local:0"], "N >= 1"),
        (["--scheduler", "somewhere"], "scheduler address"),
        (["--scheduler", "local:2", "--approx"], "drop --approx or --scheduler"),
        (["--scheduler", "local:2", "--exact-tiled"], "drop --exact-tiled or --scheduler"),
        (["--scheduler", "local:2", "--device", "cpu"], "drop --device or --scheduler"),
        (["--scheduler", "local:2", "--memory", "1KB"], "raise --memory or drop --scheduler"),
    ],
)
def test_diagnose_bad_scheduler_is_one_line(scores_file, capsys, extra, needle):
    assert main(["diagnose", str(scores_file), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("aria-tda diagnose: error:") and "--scheduler" in err and needle in err


def test_homogeneity_bad_scheduler_is_one_line(scores_file, tmp_path, capsys):
    code = main(["homogeneity", str(scores_file), "--features", str(tmp_path / "none"),
                 "--out", str(tmp_path / "out"), "--scheduler", "local:x"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--scheduler" in err and "local:N" in err


def test_help_names_the_flag(capsys):
    for cmd in ("diagnose", "homogeneity"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        assert "--scheduler ADDRESS|local:N" in capsys.readouterr().out
