"""The ``aria-tda report`` command: exports, exit codes and one-line errors."""

from __future__ import annotations

import pandas as pd

from aria_tda.cli import main


def test_cli_report(results, tmp_path, capsys):
    path, _ = results
    out = tmp_path / "out" / "r.html"
    rc = main(
        [
            "report",
            str(path),
            "--out",
            str(out),
            "--latex",
            "--k",
            "100",
            "--top-n",
            "5",
            "--pairs",
            "2",
            "--no-plots",
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert f"wrote {out}" in text and "K = 100" in text
    assert out.is_file() and (tmp_path / "out" / "r-tables" / "homogeneity.tex").is_file()
    csv = pd.read_csv(tmp_path / "out" / "r-tables" / "homogeneity.csv")
    assert len(csv) == 4


def test_cli_errors(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "aria-tda report: error: FileFormatError" in err and "not an ARIA results folder" in err
    assert "Traceback" not in err


def test_cli_bad_k(results, capsys):
    path, _ = results
    assert main(["report", str(path), "--k", "7"]) == 2
    assert "k: expected one of the group sizes" in capsys.readouterr().err


def test_cli_prints_missing(results, capsys):
    path, _ = results
    (path / "pairs.parquet").unlink()
    assert main(["report", str(path), "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert "missing from the results folder" in out and "pairs.parquet" in out
