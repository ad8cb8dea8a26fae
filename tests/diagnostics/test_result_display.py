"""What a notebook shows of the diagnostics: one verdict, short reprs, tables."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import aria_tda
from aria_tda.errors import ParameterError
from aria_tda.verdict import RULES, classify


@pytest.fixture(scope="module")
def healthy():
    return aria_tda.diagnose(np.random.default_rng(0).standard_normal((300, 16)))


@pytest.fixture(scope="module")
def collapsed():
    rng = np.random.default_rng(1)
    s = np.outer(rng.random(300) + 0.5, np.ones(16)) + 1e-3 * rng.standard_normal((300, 16))
    return aria_tda.diagnose(s)


def test_the_verdict_is_an_attribute_and_in_to_dict(healthy, collapsed):
    for d, label in ((healthy, "ok"), (collapsed, "collapsed")):
        assert d.verdict.label == label
        rec = json.loads(json.dumps(d.to_dict()))["verdict"]
        assert rec["label"] == label and rec["reason"] == d.verdict.reason
        assert rec["rule"] in RULES and rec["rule_text"] == RULES[rec["rule"]]
        assert rec["thresholds"]["unlike_collapsed"] == 0.3
        assert d.collapsed() is (label == "collapsed")
        assert classify(d) == d.verdict == classify(d.to_dict())
        assert str(d.verdict).startswith(label.upper() + ": ")


def test_without_a_top_k_the_structural_rules_decide_and_say_so():
    rng = np.random.default_rng(2)
    s = np.outer(rng.random(300) + 0.5, np.ones(16)) + 1e-3 * rng.standard_normal((300, 16))
    d = aria_tda.diagnose(s, topk=None)
    assert d.concentration is None
    assert d.verdict.rule == "structural" and d.verdict.label == "collapsed"
    assert "top-K not measured" in d.verdict.reason


def test_classify_takes_the_diagnostics_or_the_numbers_not_both(healthy):
    with pytest.raises(ParameterError, match="kappa"):
        classify(healthy, kappa=0.1)
    with pytest.raises(ParameterError, match="r1"):
        classify(kappa=0.1)
    with pytest.raises(ParameterError, match="diagnostics"):
        classify({"kappa": 0.1})
    v = classify(kappa=healthy.kappa, r1=healthy.r1, r2_5=healthy.r2_5, p=healthy.p,
                 v1_constancy=healthy.v1_constancy, concentration=healthy.concentration)
    assert v == healthy.verdict


def test_reprs_are_one_short_line(healthy):
    for obj in (healthy, healthy.concentration, healthy.verdict):
        text = repr(obj)
        assert "\n" not in text and len(text) < 260, text
        assert "array" not in text
    assert "verdict='ok'" in repr(healthy)
    assert f"kappa={healthy.kappa:.3g}" in repr(healthy)


def test_to_frame_holds_the_numbers(healthy):
    row = healthy.to_frame().iloc[0]
    for name in ("kappa", "r1", "r2_5", "p", "v1_constancy"):
        assert row[name] == getattr(healthy, name)
    assert row["verdict"] == "ok" and row["verdict_rule"] == "query-dependence"
    assert row["n_hubs"] == healthy.concentration.dependence.n_hubs
    conc = healthy.concentration.to_frame()
    assert list(conc["K"]) == list(healthy.concentration.ks)
    assert np.allclose(conc["mean_overlap"], healthy.concentration.mean_overlap)


def test_html_reprs_show_the_verdict_and_escape(healthy):
    page = healthy._repr_html_()
    assert "<table>" in page and "OK" in page and healthy.verdict.reason[:30] in page
    from aria_tda._display import html_table

    assert "&lt;b&gt;" in html_table("t", [("reason", "<b>")]) and "<b>" not in html_table(
        "t", [("r", "<b>")]).split("</caption>")[1]
    assert "Top-K concentration" in healthy.concentration._repr_html_()
    assert "Verdict" in healthy.verdict._repr_html_()


def test_a_notebook_cell_with_a_tensor():
    """The researcher's first cell, in a fresh interpreter: a tensor in, the verdict out."""
    pytest.importorskip("torch")
    code = (
        "import torch, aria_tda\n"
        "torch.manual_seed(0)\n"
        "d = aria_tda.diagnose(torch.randn(200, 12))\n"
        "print(d.verdict.label, d.to_dict()['verdict']['label'], d.collapsed())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    assert out == ["ok", "ok", "False"]
