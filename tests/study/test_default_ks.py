"""The default K sweep fits the pool (aria_tda.results.default_ks); a minimal study runs on a
small corpus."""

from __future__ import annotations

import pytest

from aria_tda.errors import ParameterError
from aria_tda.results import DEFAULT_KS, default_ks, read_results_meta
from aria_tda.study import run_study
from aria_tda.study.config import SettingSpec, StudySpec


@pytest.mark.parametrize(("n", "ks"), [
    (120, (5, 10, 20)), (300, (5, 10, 20, 50)), (400, (20, 50, 100)),
    (1200, (20, 50, 100, 200, 300)), (2000, DEFAULT_KS), (10**6, DEFAULT_KS), (12, (3,)),
])
def test_rule(n, ks):
    assert default_ks(n) == ks
    assert max(default_ks(n)) <= n // 4 or n < 8


def test_rule_refuses_a_pool_below_two():
    with pytest.raises(ParameterError, match="n_tracks"):
        default_ks(1)


def test_for_pool_keeps_a_named_k_and_refits_the_derived_ones(tmp_path):
    setting = SettingSpec(scores=tmp_path / "s.npy")
    base = dict(modality="symbolic", feature_store=tmp_path, settings=(setting,))
    spec = StudySpec(**base)
    assert spec.K == DEFAULT_KS and spec.K_report == 300 and spec.k_is_default
    fitted = spec.for_pool(120)
    assert (fitted.K, fitted.K_report, fitted.K_aspects) == ((5, 10, 20), 20, 20)
    named = StudySpec(**base, K=[5, 7])
    assert named.for_pool(120) is named and not named.k_is_default
    with pytest.raises(ParameterError, match="default sweep for a pool of 120 tracks"):
        StudySpec(**base, K_report=300).for_pool(120)


def test_a_minimal_study_runs_on_120_tracks(tmp_path, rng, planted_study, capsys):
    planted_study(tmp_path, rng)
    study = tmp_path / "minimal.toml"
    study.write_text('modality = "symbolic"\nfeature_store = "store"\n\n[[setting]]\n'
                     'scores = "scores.npy"\nsegments = "segments.csv"\n')
    out = run_study(study, output=tmp_path / "out", report=False, progress=False)
    meta = read_results_meta(out)["study"]
    assert meta["K"] == [5, 10, 20] and meta["K_report"] == 20
    assert "K sweep: 5, 10, 20 (default for a pool of 120 tracks; set K in the study file" \
        in capsys.readouterr().err
