"""K-sweep plots (conventions, inline-able SVG) and the ``aria report`` command."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from aria.cli import main
from aria.report import plots as P
from aria.report.load import load_results

pytest.importorskip("matplotlib")


def _rows(path, setting="TRAK/fine"):
    data = load_results(path)
    h = data.table("homogeneity")
    return data, h[h.setting == setting]


def test_ksweep_figure_conventions(results):
    path, _ = results
    data, rows = _rows(path)
    fig = P.ksweep_figure(rows, setting="TRAK/fine", channels=data.channels, k_report=300, verdict="suspect")
    ax = fig.axes[0]
    lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 4]  # the K-sweep curves
    assert len(lines) == 3 * 2
    styles = {(ln.get_color(), ln.get_linestyle()) for ln in lines}
    for i in range(3):
        color = P.OKABE_ITO[i]
        assert (color, "--") in styles and (color, "-") in styles  # original dashed, residual solid
    for ln in lines:
        ch_idx = P.OKABE_ITO.index(ln.get_color())
        ch = data.channels[ch_idx]
        variant = "original" if ln.get_linestyle() == "--" else "residual"
        want = rows[(rows.channel == ch) & (rows.variant == variant)].sort_values("K")
        assert list(ln.get_xdata()) == list(want.K)
        assert list(ln.get_ydata()) == pytest.approx(list(want.zbar))
    assert "suspect" in ax.get_title()
    assert ax.get_xlabel() and ax.get_ylabel()
    labels = [t.get_text() for leg in ax.findobj(lambda a: a.__class__.__name__ == "Legend") for t in leg.get_texts()]
    assert set(data.channels) <= set(labels) and any("residual" in x for x in labels)


def test_svg_is_inlineable_and_ids_unique(results):
    path, _ = results
    data, rows = _rows(path)
    a = P.ksweep_svg(rows, setting="A<&>", channels=data.channels, salt="one")
    b = P.ksweep_svg(rows, setting="B", channels=data.channels, salt="two")
    for s in (a, b):
        assert s.startswith("<svg") and "<?xml" not in s and "DOCTYPE" not in s
        root = re.match(r"<svg[^>]*>", s).group(0)
        assert "viewBox" in root and " width=" not in root and " height=" not in root
        assert "http://" not in s.replace("http://www.w3.org", "")  # no external references
    assert "A&lt;&amp;&gt;" in a
    ids_a = set(re.findall(r'id="([^"]+)"', a))
    ids_b = set(re.findall(r'id="([^"]+)"', b))
    assert ids_a and ids_b and not (ids_a & ids_b)
    for s, ids in ((a, ids_a), (b, ids_b)):  # every reference points at an id of the same plot
        refs = set(re.findall(r"url\(#([^)]+)\)", s)) | set(re.findall(r'href="#([^"]+)"', s))
        assert refs and refs <= ids


def test_cli_report(results, tmp_path, capsys):
    path, _ = results
    out = tmp_path / "out" / "r.html"
    rc = main(["report", str(path), "--out", str(out), "--latex", "--k", "100", "--top-n", "5", "--pairs", "2", "--no-plots"])
    assert rc == 0
    text = capsys.readouterr().out
    assert f"wrote {out}" in text and "K = 100" in text
    assert out.is_file() and (tmp_path / "out" / "r-tables" / "homogeneity.tex").is_file()
    csv = pd.read_csv(tmp_path / "out" / "r-tables" / "homogeneity.csv")
    assert len(csv) == 4


def test_cli_errors(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "aria report: error: FileFormatError" in err and "not an ARIA results folder" in err
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
