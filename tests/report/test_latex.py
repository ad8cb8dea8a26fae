"""LaTeX exports: syntactically sound (balanced environments and braces, column counts), one row
per setting, and the numbers of the CSV exports."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from aria_tda.report import write_report
from aria_tda.report.latex import escape

from .conftest import build_results

# ------------------------------------------------------------------ a small LaTeX checker

_ESCAPED = re.compile(r"\\[{}&%$#_]")


def check_balanced(tex: str) -> None:
    body = "\n".join(
        line.split("%", 1)[0] if not line.lstrip().startswith("%") else ""
        for line in _unescape_percent(tex).splitlines()
    )
    stripped = _ESCAPED.sub("", body)
    depth = 0
    for ch in stripped:
        depth += ch == "{"
        depth -= ch == "}"
        assert depth >= 0, "closing brace without opening one"
    assert depth == 0, "unbalanced braces"
    stack = []
    for kind, env in re.findall(r"\\(begin|end)\{([^}]*)\}", stripped):
        if kind == "begin":
            stack.append(env)
        else:
            assert stack and stack[-1] == env, f"\\end{{{env}}} closes {stack[-1:] or 'nothing'}"
            stack.pop()
    assert not stack, f"unclosed environments {stack}"


def _unescape_percent(tex: str) -> str:
    return tex.replace(r"\%", "PCT")


def _split_cells(row: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)&", row)]


def _width(cell: str) -> int:
    m = re.match(r"\\multicolumn\{(\d+)\}", cell)
    return int(m.group(1)) if m else 1


def tabulars(tex: str) -> list[dict]:
    """Every tabular: its column count and its rows (cells), split at \\midrule into blocks."""
    out = []
    for spec, inner in re.findall(r"\\begin\{tabular\}\{([^}]*)\}(.*?)\\end\{tabular\}", tex, re.S):
        ncols = len(re.findall(r"[lcr]", spec))
        blocks: list[list[list[str]]] = [[]]
        for line in inner.splitlines():
            line = line.strip()
            if (
                not line
                or line.startswith("\\toprule")
                or line.startswith("\\cmidrule")
                or line.startswith("\\bottomrule")
            ):
                continue
            if line.startswith("\\midrule"):
                blocks.append([])
                continue
            assert line.endswith("\\\\"), f"row does not end with \\\\: {line!r}"
            cells = _split_cells(line[:-2])
            assert sum(_width(c) for c in cells) == ncols, (
                f"{len(cells)} cells for {ncols} columns: {line!r}"
            )
            blocks[-1].append(cells)
        out.append({"ncols": ncols, "head": blocks[0], "body": [r for b in blocks[1:] for r in b]})
    return out


def num(cell: str) -> float:
    """The number in a cell: '\\textbf{+1.51}', '$-$3.63', '85.8\\%', '0.282', '7{,}148'."""
    s = re.sub(r"\\multirow\{\d+\}\{\*\}\{(.*)\}", r"\1", cell)
    s = (
        s.replace(r"\textbf{", "")
        .replace("}", "")
        .replace("{", "")
        .replace("$-$", "-")
        .replace(r"\%", "")
        .replace(",", "")
    )
    s = re.sub(r"\\rlap.*", "", s).replace("$", "").replace(r"^\dagger", "")
    return float(s)


# ------------------------------------------------------------------ tests


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """One export for the module (module scope: a fixed seed instead of the function-scoped rng)."""
    root = tmp_path_factory.mktemp("latex")
    frames = build_results(root / "results", np.random.default_rng(20261125))
    out = write_report(root / "results", latex=True, tables_dir=root / "tables", plots=False)
    return out, frames


def read(out, name):
    return (out.exports / f"{name}.tex").read_text(), pd.read_csv(out.exports / f"{name}.csv")


def test_every_table_has_csv_and_balanced_tex(exported):
    out, _ = exported
    csvs = sorted(p.stem for p in out.exports.glob("*.csv"))
    assert csvs == sorted(out.tables)
    for name in out.tables:
        tex_path = out.exports / f"{name}.tex"
        if name == "ksweep":
            assert not tex_path.exists()  # the K-sweep is exported as data + figure, not as a table
            continue
        tex = tex_path.read_text()
        check_balanced(tex)
        for t in tabulars(tex):
            assert t["body"], name
        assert r"\toprule" in tex and r"\bottomrule" in tex and r"\midrule" in tex


@pytest.mark.parametrize("name", ["homogeneity", "homogeneity_residual"])
def test_homogeneity_layout_and_numbers(exported, name):
    out, frames = exported
    tex, csv = read(out, name)
    (t,) = tabulars(tex)
    assert t["ncols"] == 2 + 4 + 3 * 3
    assert len(t["body"]) == len(csv) == 4  # one row per setting
    channels = ["rhythm", "harmony", "timbre"]
    for cells, (_, row) in zip(t["body"], csv.iterrows(), strict=True):
        assert [num(c) for c in cells[2:6]] == pytest.approx(
            [round(row[c], 3) for c in ("r1", "r2_5", "p", "kappa")]
        )
        for i, c in enumerate(channels):
            z, pos, sig = cells[6 + 3 * i : 9 + 3 * i]
            assert num(z) == pytest.approx(round(row[f"{c}_zbar"], 2))
            assert num(pos) == pytest.approx(round(100 * row[f"{c}_pos"], 1))
            assert num(sig) == pytest.approx(round(100 * row[f"{c}_sig"], 1))
            assert (r"\textbf{" in z) == (row[f"{c}_zbar"] > 0)
    # the CSV holds what the results folder holds
    h = frames["homogeneity"]
    variant = "residual" if name.endswith("residual") else "original"
    for _, row in csv.iterrows():
        src = h[
            (h.setting == row.setting)
            & (h.variant == variant)
            & (h.K == 300)
            & (h.channel == "harmony")
        ].iloc[0]
        assert row["harmony_zbar"] == pytest.approx(src.zbar, rel=1e-9)
    # paper layout: TRAK as a 3-row multirow group with S/C/F, the collapsed stage daggered,
    # MERT alone
    assert t["body"][0][0] == r"\multirow{3}{*}{TRAK}"
    assert [r[1] for r in t["body"][:3]] == ["S", r"C$^\dagger$", "F"]
    assert t["body"][3][:2] == ["MERT", "---"]
    assert "collapsed (reliability verdict)" in tex


def test_reliability_and_alignment_numbers(exported):
    out, _ = exported
    tex, csv = read(out, "reliability")
    (t,) = tabulars(tex)
    assert len(t["body"]) == len(csv) == 4
    for cells, (_, row) in zip(t["body"], csv.iterrows(), strict=True):
        assert [num(c) for c in cells[3:8]] == pytest.approx(
            [round(row[c], 3) for c in ("kappa", "r1", "r2_5", "p", "v1_constancy")]
        )
        assert row["verdict"] in cells[8]

    tex, csv = read(out, "alignment")
    (t,) = tabulars(tex)
    assert len(t["body"]) == 4
    for j, c in enumerate(
        col
        for ch in ("rhythm", "harmony", "timbre")
        for col in (f"{ch}_alpha_max", f"{ch}_alpha_reg")
    ):
        vals = [num(r[1 + j]) for r in t["body"]]
        assert vals == pytest.approx(list(csv[c].round(3)))
        best = [r"\textbf" in r[1 + j] for r in t["body"]]
        assert best == list(csv[c].round(3) == csv[c].round(3).max())



def test_confound_one_table_per_group(exported):
    out, _ = exported
    tex, csv = read(out, "confound")
    tabs = tabulars(tex)
    groups = csv.groupby(["setting", "variant", "channel", "column"], sort=False)
    assert len(tabs) == groups.ngroups == 4
    for t, (_, g) in zip(tabs, groups, strict=True):
        assert [r[0] for r in t["body"]] == list(g["stratum"])
        assert [num(r[2]) for r in t["body"]] == pytest.approx(list(g["mean_z"].round(3)))
        assert [num(r[1]) for r in t["body"]] == list(g["n"])
    assert tex.count(r"\begin{table}") == 4


def test_lds_summary_and_ranking(exported):
    out, _ = exported
    tex, csv = read(out, "lds_summary")
    (t,) = tabulars(tex)
    assert len(t["body"]) == len(csv) == 4
    assert [num(r[1]) for r in t["body"]] == pytest.approx([0.318, 0.318, 0.318, 0.149])
    tex, csv = read(out, "ranking")
    (t,) = tabulars(tex)
    assert len(t["body"]) == len(csv) == 8  # 4 settings x 2 variants
    excluded = [r[-1] for r in t["body"]]
    assert excluded == ["yes" if s == "TRAK/coarse" else "no" for s in csv["setting"]]


def test_escape_specials():
    s = escape("50% of A&B_{x} $5 #2 ~ ^ \\ <b>")
    check_balanced(s)
    for bad in ("%", "&", "_", "$", "#"):
        assert re.search(rf"(?<!\\){re.escape(bad)}", s) is None
    assert r"\textbackslash{}" in s and r"\textless{}" in s


def test_special_characters_in_setting_names(make_results):
    path, frames = make_results()
    from aria_tda.results import write_table

    new = "MERT_v2 & 50% #1"
    for name, df in frames.items():
        if "setting" in df.columns:
            write_table(path, name, df.assign(setting=df["setting"].replace("MERT", new)))
    out = write_report(path, latex=True, plots=False)
    for name in ("reliability", "homogeneity", "alignment", "ranking"):
        tex = (out.exports / f"{name}.tex").read_text()
        check_balanced(tex)
        for t in tabulars(tex):
            assert any(r"MERT\_v2 \& 50\% \#1" in cell for row in t["body"] for cell in row), name
        assert new in set(pd.read_csv(out.exports / f"{name}.csv")["setting"])
