"""Collapse verdicts: the documented rules, calibrated on the paper's Table 2, and ranking."""

from __future__ import annotations

import pytest

from aria_tda.errors import ParameterError
from aria_tda.verdict import Verdict, VerdictThresholds, classify, rank_settings

# (setting, r1, r2_5, p, kappa) from the paper's Table 2 (audio, K=300) and Table 1 (symbolic).
PAPER_AUDIO = {
    "TRAK/S": (0.282, 0.098, 0.175, 0.076),
    "TRAK/C": (0.993, 0.004, 0.022, 0.991),
    "TRAK/F": (0.772, 0.208, 0.002, 0.641),
    "FactGraSS/S": (0.006, 0.018, 0.000, 0.012),
    "FactGraSS/C": (0.051, 0.030, 0.001, 0.046),
    "FactGraSS/F": (0.866, 0.081, 0.000, 0.663),
    "GradCos/S": (0.413, 0.419, 0.216, 0.374),
    "GradCos/C": (1.000, 0.000, 1.000, 0.997),
    "GradCos/F": (0.793, 0.200, 0.015, 0.736),
    "LoGra/S": (0.008, 0.017, 0.000, 0.013),
    "LoGra/C": (0.057, 0.038, 0.006, 0.049),
    "LoGra/F": (0.223, 0.065, 0.000, 0.272),
    "CLAP": (0.924, 0.054, 0.801, 0.584),
    "CLEWS": (0.607, 0.141, 0.406, 0.280),
    "MERT": (0.437, 0.375, 0.002, 0.358),
}
PAPER_SYMBOLIC = {
    "TRAK10": (0.047, 0.067, 0.0002, 0.022),
    "TracIn": (0.102, 0.229, 0.037, 0.106),
    "GradCos": (0.137, 0.241, 0.038, 0.123),
    "GradDot": (0.147, 0.238, 0.035, 0.129),
}


def _classify(row, v1=None):
    r1, r25, p, kappa = row
    return classify(kappa=kappa, r1=r1, r2_5=r25, p=p, v1_constancy=v1)


def test_paper_collapsed_settings_are_flagged():
    labels = {k: _classify(v).label for k, v in PAPER_AUDIO.items()}
    collapsed = {k for k, lab in labels.items() if lab == "collapsed"}
    assert collapsed == {"TRAK/C", "GradCos/C", "FactGraSS/F"}
    assert labels["TRAK/F"] == "suspect" and labels["GradCos/F"] == "suspect"
    assert labels["CLAP"] == "suspect"  # offset-dominated, not a fixed group
    for k in ("TRAK/S", "FactGraSS/S", "FactGraSS/C", "LoGra/S", "LoGra/C", "LoGra/F", "MERT",
              "GradCos/S"):
        assert labels[k] == "ok", k


def test_symbolic_methods_are_not_vetoed():
    assert {_classify(v).label for v in PAPER_SYMBOLIC.values()} == {"ok"}


def test_v1_constancy_gates_rank_one_rule():
    row = PAPER_AUDIO["FactGraSS/F"]
    assert _classify(row, v1=0.99).label == "collapsed"
    # the same energy split with v1 changing sign across queries is not one shared group
    assert _classify(row, v1=0.2).label == "suspect"


def test_offset_dominated_rank_one_is_not_collapsed():
    v = classify(kappa=0.3, r1=0.95, r2_5=0.01, p=0.9, v1_constancy=1.0)
    assert v.label == "suspect" and "offset" in v.reason


def test_thresholds_validated():
    with pytest.raises(ParameterError, match="kappa_collapsed"):
        VerdictThresholds(kappa_collapsed=1.5)
    with pytest.raises(ParameterError, match="r1"):
        classify(kappa=0.1, r1=-0.2, r2_5=0.1, p=0.1)


def test_rank_settings_excludes_collapsed():
    verdicts = {k: _classify(v) for k, v in PAPER_AUDIO.items()}
    # the paper's harmonic zbar, K=300: GradCos coarse would top a naive ranking
    zbar = {"GradCos/C": 8.56, "TRAK/F": 1.25, "MERT": 6.55, "TRAK/C": -5.89, "LoGra/S": -1.53}
    rows = rank_settings(zbar, verdicts)
    ranked = [r["setting"] for r in rows if not r["excluded"]]
    assert ranked == ["MERT", "TRAK/F", "LoGra/S"]
    assert [r["rank"] for r in rows[:3]] == [1, 2, 3]
    excluded = {r["setting"] for r in rows if r["excluded"]}
    assert excluded == {"GradCos/C", "TRAK/C"}
    assert all(r["rank"] is None and r["reason"].startswith("collapsed")
               for r in rows if r["excluded"])


def test_rank_settings_needs_every_verdict():
    with pytest.raises(ParameterError, match="verdict for every setting"):
        rank_settings({"a": 1.0}, {})
    assert rank_settings({"a": 1.0}, {"a": Verdict("ok", "")})[0]["rank"] == 1


def test_undefined_kappa_is_suspect_not_an_error():
    for k in (None, float("nan")):
        v = classify(kappa=k, r1=0.3, r2_5=0.1, p=0.1)
        assert v.label == "suspect" and "kappa undefined" in v.reason
    assert classify(kappa=None, r1=0.99, r2_5=0.0, p=0.0, v1_constancy=1.0).label == "collapsed"


# -- rule 3: the top-K itself (aria_tda.diagnostics.concentration) ---------------------------
def _conc(top1_share, overlaps, *, ks=(1, 10), m=1500, t=100, level="segment"):
    from aria_tda.diagnostics.concentration import Concentration

    return Concentration(ks=ks, level=level, n_rows=m, n_queries=t,
                         distinct_ratio=tuple(0.5 for _ in ks), mean_overlap=tuple(overlaps),
                         top1_share=top1_share, top1_row=7)


HEALTHY_LOW_KAPPA = {"kappa": 0.2, "r1": 0.19, "r2_5": 0.05, "p": 0.001, "v1_constancy": 0.05}


def test_concentrated_top_k_is_collapsed_whatever_kappa_says():
    # the planted outlier: one row is the top-1 of 94 % of the queries, kappa 0.2
    v = classify(**HEALTHY_LOW_KAPPA, concentration=_conc(0.94, (0.88, 0.2)))
    assert v.label == "collapsed"
    assert "top-1 share=0.940" in v.reason and "segment 7" in v.reason
    assert classify(**HEALTHY_LOW_KAPPA).label == "ok"  # without it: the old rules
    v = classify(**HEALTHY_LOW_KAPPA, concentration=_conc(0.02, (0.001, 0.5)))
    assert v.label == "collapsed" and "top-10 overlap=0.500" in v.reason


def test_concentration_thresholds_are_chance_corrected():
    th = VerdictThresholds()
    # the same raw overlap 0.35 at K = 10: far above chance with 1,500 rows, at chance with 28
    assert classify(**HEALTHY_LOW_KAPPA, concentration=_conc(0.0, (0.0, 0.35))).collapsed
    assert not classify(**HEALTHY_LOW_KAPPA,
                        concentration=_conc(0.0, (0.0, 0.35), m=28)).collapsed
    # K above M/2 is not used: any two large sets overlap
    v = classify(**HEALTHY_LOW_KAPPA, concentration=_conc(0.0, (0.0, 1.0), ks=(1, 900)))
    assert v.label == "ok"
    # two queries always have a top-1 share of at least 1/2: its chance level is max(1/T, 1/M)
    v = classify(**HEALTHY_LOW_KAPPA, concentration=_conc(0.5, (0.0, 0.0), t=2))
    assert v.label == "ok"
    assert 0.0 < th.topk_suspect < th.topk_collapsed < 1.0


def test_concentration_suspect_band_and_order_of_rules():
    v = classify(**HEALTHY_LOW_KAPPA, concentration=_conc(0.15, (0.05, 0.05)))
    assert v.label == "suspect" and "top-1 share" in v.reason
    # kappa decides first: its reason stays the kappa one
    v = classify(kappa=0.95, r1=0.2, r2_5=0.1, p=0.0, concentration=_conc(0.9, (0.9, 0.9)))
    assert v.collapsed and v.reason.startswith("kappa=")


def test_concentration_as_a_mapping_and_bad_input():
    c = _conc(0.94, (0.88, 0.2))
    assert classify(**HEALTHY_LOW_KAPPA, concentration=c.to_dict()) == classify(
        **HEALTHY_LOW_KAPPA, concentration=c)
    with pytest.raises(ParameterError, match="concentration"):
        classify(**HEALTHY_LOW_KAPPA, concentration={"ks": [1]})


def test_paper_table_two_unchanged_with_unconcentrated_top_k():
    # a top-K at chance (independent rankings) never changes the Table-2 verdicts
    chance = _conc(1 / 100, (1 / 1500, 10 / 1500))
    for row in PAPER_AUDIO.values():
        r1, r25, p, kappa = row
        plain = classify(kappa=kappa, r1=r1, r2_5=r25, p=p)
        with_topk = classify(kappa=kappa, r1=r1, r2_5=r25, p=p, concentration=chance)
        assert with_topk.label == plain.label
        assert plain.reason == with_topk.reason + (
            "" if plain.label == "ok" else " (top-K not measured: the structural rules decide)")


def test_a_hub_is_named_by_its_track_s_label():
    """Before: "1 hub(s): track 22 (...)" — an id a reader cannot place. The study passes the
    tracks table's labels; the line names the track by both."""
    from aria_tda.study.tables import _labelled_hubs
    from aria_tda.verdict import hub_text

    hubs = [{"row": "22", "count": 9, "share": 0.18, "times_chance": 27.0}]
    assert hub_text(hubs, 1, 10, "track").startswith("1 hub(s): track 22 (top-10 of 18")
    conc = _labelled_hubs({"top1_row": "22", "dependence": {"hubs": hubs}},
                          {"22": "Chorale BWV 66", "23": "other"})
    line = hub_text(conc["dependence"]["hubs"], 1, 10, "track")
    assert line.startswith("1 hub(s): track 22 (Chorale BWV 66) (top-10 of 18"), line
    assert "label" not in hubs[0]  # the study's record is left as it was
