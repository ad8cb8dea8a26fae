"""K-sweep plots: conventions and inline-able SVG."""

from __future__ import annotations

import re

import pytest

from aria_tda.report import plots as P
from aria_tda.report.load import load_results

pytest.importorskip("matplotlib")


def _rows(path, setting="TRAK/fine"):
    data = load_results(path)
    h = data.table("homogeneity")
    return data, h[h.setting == setting]


def test_ksweep_figure_conventions(results):
    path, _ = results
    data, rows = _rows(path)
    fig = P.ksweep_figure(
        rows, setting="TRAK/fine", channels=data.channels, k_report=300, verdict="suspect"
    )
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
    labels = [
        t.get_text()
        for leg in ax.findobj(lambda a: a.__class__.__name__ == "Legend")
        for t in leg.get_texts()
    ]
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
