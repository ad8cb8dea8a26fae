"""``aria-tda diagnose``: JSON and table output, one-line errors without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from aria_tda.cli import main
from aria_tda.diagnostics import diagnose
from aria_tda.scores import save_scores


@pytest.fixture
def scores_file(rng, tmp_path):
    s = rng.standard_normal((400, 12)).astype(np.float32) + np.outer(rng.random(400), np.ones(12))
    return s, save_scores(s, tmp_path / "scores.npy")


def test_json_output(scores_file, capsys):
    s, path = scores_file
    assert main(["diagnose", str(path), "--json", "--chunk-rows", "64"]) == 0
    rec = json.loads(capsys.readouterr().out)
    for key in (
        "n_train",
        "n_queries",
        "kappa",
        "r1",
        "r2_5",
        "p",
        "energy_ratios",
        "constant_columns",
    ):
        assert key in rec
    assert (rec["n_train"], rec["n_queries"]) == (400, 12)
    assert len(rec["energy_ratios"]) == 10
    ref = diagnose(s)
    assert rec["kappa"] == pytest.approx(ref.kappa, rel=1e-9)
    assert rec["r1"] == pytest.approx(ref.r1, rel=1e-9)
    assert rec["p"] == pytest.approx(ref.p, rel=1e-9)


def test_table_output(scores_file, capsys):
    _, path = scores_file
    assert main(["diagnose", str(path)]) == 0
    out = capsys.readouterr().out
    assert "400 training segments x 12 queries" in out
    for label in ("kappa", "r1", "r2:5", "p ", "v1 constancy", "energy ratios"):
        assert label in out


def test_key_and_constant_columns(rng, tmp_path, capsys):
    s = rng.standard_normal((50, 4))
    s[:, 0] = 1.0
    np.savez(tmp_path / "m.npz", a=s, b=s * 2)
    assert main(["diagnose", str(tmp_path / "m.npz"), "--key", "b", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["constant_columns"] == 1
    warn = captured.err.strip().splitlines()
    assert warn == [
        "aria-tda diagnose: warning: 1 of 4 score columns are constant (columns 0); "
        "their correlation "
        "is undefined, so they are left out of kappa (and all-zero ones out of p)"
    ]
    assert main(["diagnose", str(tmp_path / "m.npz"), "--json"]) == 2
    assert "pass key= (--key)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing.npy", "no such file or directory"),
        (lambda d: (d / "junk.npy").write_bytes(b"junk") and d / "junk.npy", "not a readable .npy"),
        (
            lambda d: (
                np.save(d / "nan.npy", np.where(np.eye(5, 3) > 0, np.nan, 1.0)) or d / "nan.npy"
            ),
            "got nan at row 0, column 0",
        ),
        (lambda d: np.save(d / "zero.npy", np.zeros((5, 3))) or d / "zero.npy", "all-zero matrix"),
        (lambda d: np.save(d / "one.npy", np.ones((5, 1))) or d / "one.npy", "at least 2 queries"),
        (lambda d: np.save(d / "v.npy", np.ones(5)) or d / "v.npy", "2-D matrix"),
    ],
)
def test_errors_are_one_line(tmp_path, capsys, make, message):
    path = make(tmp_path)
    assert main(["diagnose", str(path), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("aria-tda diagnose: error:")
    assert message in err[0]


def test_bad_flag_value(scores_file, capsys):
    _, path = scores_file
    assert main(["diagnose", str(path), "--chunk-rows", "0"]) == 2
    assert "chunk_rows: expected an integer >= 1, got 0" in capsys.readouterr().err


def test_console_script_prints_no_traceback(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "aria_tda.cli", "diagnose", str(tmp_path / "nope.npy")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("aria-tda diagnose: error: FileFormatError")


def test_verdict_in_table_and_json(rng, tmp_path, capsys):
    ok = save_scores(rng.standard_normal((300, 10)), tmp_path / "ok.npy")
    assert main(["diagnose", str(ok)]) == 0
    assert "\nverdict        OK: the top-K follows the query" in capsys.readouterr().out
    collapsed = np.outer(rng.random(300) + 1, np.ones(10)) + 1e-3 * rng.standard_normal((300, 10))
    path = save_scores(collapsed, tmp_path / "collapsed.npy")
    assert main(["diagnose", str(path)]) == 0
    out = capsys.readouterr().out
    assert "verdict        COLLAPSED: unlike queries share" in out
    assert "\nfinding        " in out and "hub(s)" in out  # the rows every query shares
    assert main(["diagnose", str(path), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["verdict"]["label"] == "collapsed"
    assert "does not follow the query" in rec["verdict"]["reason"]
    assert any("hub" in f for f in rec["verdict"]["findings"])
    assert rec["concentration"]["dependence"]["hubs"][0]["share"] == 1.0
    # without the top-K, the structural rules decide and say so
    assert main(["diagnose", str(path), "--json", "--topk", "none"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["verdict"]["label"] == "collapsed"
    assert "queries share one score profile" in rec["verdict"]["reason"]
    assert "top-K not measured" in rec["verdict"]["reason"]


def test_transpose_flag(rng, tmp_path, capsys):
    s = rng.standard_normal((150, 6)) + np.outer(rng.random(150), np.ones(6))
    path = save_scores(np.ascontiguousarray(s.T), tmp_path / "test_by_train.npy")
    assert main(["diagnose", str(path), "--transpose", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert (rec["n_train"], rec["n_queries"]) == (150, 6)
    assert rec["r1"] == pytest.approx(diagnose(s).r1, rel=1e-10)


def test_sparse_tensor_is_one_line(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    torch.save(torch.eye(6, 4).to_sparse(), tmp_path / "sparse.pt")
    assert main(["diagnose", str(tmp_path / "sparse.pt")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "expected a dense tensor" in err[0] and "Traceback" not in err[0]


def _dominant_file(rng, tmp_path, *, stored_transposed=False):
    s = rng.standard_normal((1500, 100))
    d = rng.choice(1500, 15, replace=False)
    s[d] += 6.0 + rng.standard_normal(15)[:, None]  # 1 % of the rows lead every query
    s = s.astype(np.float32)
    path = tmp_path / "dominant.npy"
    np.save(path, s.T if stored_transposed else s)
    return s, path


def test_topk_concentration_in_table_and_json(rng, tmp_path, capsys):
    s, path = _dominant_file(rng, tmp_path)
    assert main(["diagnose", str(path)]) == 0
    out = capsys.readouterr().out
    assert "top-1 share" in out and "top-10 overlap" in out and "distinct ratio" in out
    verdict = next(line for line in out.splitlines() if line.startswith("verdict"))
    assert "COLLAPSED" in verdict and "unlike queries share" in verdict
    assert "unlike top-10" in out and "follows query" in out and "hubs" in out
    assert main(["diagnose", str(path), "--json", "--topk", "1,5,10"]) == 0
    rec = json.loads(capsys.readouterr().out)
    conc = rec["concentration"]
    assert conc["ks"] == [1, 5, 10] and conc["level"] == "segment"
    want = diagnose(s, topk=(1, 5, 10)).concentration
    assert conc["mean_overlap"] == pytest.approx(list(want.mean_overlap), rel=1e-12)
    assert conc["top1_share"] == pytest.approx(want.top1_share)
    assert rec["verdict"]["label"] == "collapsed"
    assert main(["diagnose", str(path), "--json", "--topk", "none"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert "concentration" not in rec and rec["verdict"]["label"] == "ok"
    with pytest.raises(SystemExit) as exc:
        main(["diagnose", str(path), "--topk", "0,x"])
    assert exc.value.code == 2 and "--topk" in capsys.readouterr().err
    for zero in ("0", "0,10"):  # 0 used to turn the measure off silently: refused, one line
        with pytest.raises(SystemExit) as exc:
            main(["diagnose", str(path), "--topk", zero])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and "--topk" in err and "'none'" in err


def test_orientation_warning_names_transpose_or_drops_it(rng, tmp_path, capsys):
    _, path = _dominant_file(rng, tmp_path, stored_transposed=True)  # queries x training
    assert main(["diagnose", str(path), "--topk", "none"]) == 0
    err = capsys.readouterr().err
    assert "fewer rows than columns (100 x 1500)" in err and "pass --transpose" in err
    assert main(["diagnose", str(path), "--transpose", "--topk", "none"]) == 0
    assert "warning" not in capsys.readouterr().err  # the right orientation: no word
    _, path = _dominant_file(rng, tmp_path)  # training x queries, and --transpose given
    assert main(["diagnose", str(path), "--transpose", "--topk", "none"]) == 0
    err = capsys.readouterr().err
    assert "drop --transpose" in err and "pass --transpose" not in err
