"""Many queries: the exact tiled Gram (memory budget, spill to disk) and the approximate mode
(block Krylov intervals, sampled κ) against the in-memory exact path on planted spectra."""

from __future__ import annotations

import json
import re
import tracemalloc
import warnings

import numpy as np
import pytest

from aria_tda.diagnostics import ApproxOptions, choose_mode, diagnose
from aria_tda.diagnostics.kappa import abs_correlations, kappa_estimate
from aria_tda.diagnostics.krylov import block_krylov_eigs
from aria_tda.diagnostics.tiled import parse_memory
from aria_tda.errors import AriaWarning, ParameterError
from aria_tda.scores.stats import stream_stats

FIELDS = ("kappa", "r1", "r2_5", "p", "sigma1", "frobenius", "v1_constancy")


def planted(seed, m=600, t=150, *, scales=(8.0, 4.0, 2.0, 1.0), noise=0.7, offset=2.0):
    """A planted spectrum: rank-len(scales) signal with those singular scales, noise, offsets."""
    rng = np.random.default_rng(seed)
    r = len(scales)
    signal = rng.standard_normal((m, r)) @ (np.diag(scales) @ rng.standard_normal((r, t)))
    return signal + noise * rng.standard_normal((m, t)) + offset * rng.standard_normal(t)


def relerr(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


# ---------------------------------------------------------------------------------- tiled
@pytest.mark.parametrize("memory", ["2.5MB", "6MB"])
def test_tiled_equals_in_memory_path(tmp_path, memory):
    s = planted(0, 600, 400)
    s[:, 7] = 3.0  # a constant column: out of kappa in both paths
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AriaWarning)
        ref = diagnose(s, mode="exact", with_u1=True)
        d = diagnose(s, mode="exact-tiled", memory=memory, spill_dir=tmp_path, with_u1=True)
    assert d.mode == "exact-tiled" and d.details["panels"] >= 1
    if memory == "2.5MB":
        assert d.details["panels"] > 1  # really tiled
    for f in FIELDS:
        assert relerr(getattr(d, f), getattr(ref, f)) <= 1e-10, f
    np.testing.assert_allclose(d.energy_ratios, ref.energy_ratios, rtol=0, atol=1e-10)
    np.testing.assert_allclose(d.v1, ref.v1, atol=1e-9)
    np.testing.assert_allclose(d.u1, ref.u1, atol=1e-9)
    assert d.constant_columns == ref.constant_columns == 1
    assert list(tmp_path.iterdir()) == []  # spill folder removed


def test_tiled_float32_input_agrees_to_float32_rounding(tmp_path):
    s = planted(1, 2000, 120).astype(np.float32)
    ref = diagnose(s, mode="exact")
    d = diagnose(s, mode="exact-tiled", memory="1MB", spill_dir=tmp_path)
    for f in FIELDS:
        assert relerr(getattr(d, f), getattr(ref, f)) <= 1e-5, f


def test_tiled_budget_too_small_for_the_eigensolver_is_refused_before_any_pass(tmp_path):
    s = planted(0, 600, 400)
    with pytest.raises(ParameterError, match=r"memory: expected at least ([0-9.]+) MB for the "
                       r"exact-tiled pass of 400 columns") as err:
        diagnose(s, mode="exact-tiled", memory="1MB", spill_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []  # refused before the spill file was made
    least = float(re.search(r"at least ([0-9.]+) MB", str(err.value)).group(1))
    assert 1.0 < least < 2.5  # and the least it names is enough:
    d = diagnose(s, mode="exact-tiled", memory=f"{least + 0.01}MB", spill_dir=tmp_path)
    assert d.mode == "exact-tiled"


@pytest.mark.slow
@pytest.mark.parametrize(("t", "memory"), [(400, "2.5MB"), (600, "3.5MB")])
def test_tiled_memory_budget_respected(tmp_path, t, memory):
    # in memory this needs 3 x 8 x T^2 (3.8 MB and 8.6 MB) of T x T arrays: above the budget
    s = planted(2, 1000, t)
    budget = parse_memory(memory)
    assert choose_mode(400, memory=budget)[0] == "exact-tiled"
    diagnose(s[:50, :40], mode="exact-tiled", memory=budget, spill_dir=tmp_path)  # imports
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        d = diagnose(s, memory=budget, spill_dir=tmp_path)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert d.mode == "exact-tiled"
    assert peak <= budget, f"peak {peak / 2**20:.2f} MB over the {memory} budget"
    tracemalloc.start()
    try:
        diagnose(s, mode="exact")
        _, peak_in_memory = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak_in_memory > budget  # the budget was binding


def test_tiled_too_small_budget_is_a_parameter_error(tmp_path):
    with pytest.raises(ParameterError, match="memory"):
        diagnose(planted(0), mode="exact-tiled", memory="10KB", spill_dir=tmp_path)
    with pytest.raises(ParameterError, match="memory"):
        parse_memory("lots")


def test_choose_mode_reasons():
    assert choose_mode(100, memory="1GB")[0] == "exact"
    mode, why = choose_mode(50_000, memory="8GB")
    assert mode == "exact-tiled" and "over the 8.0 GB budget" in why
    assert choose_mode(100, mode="approx")[0] == "approx"


# ---------------------------------------------------------------------------------- Krylov
def test_krylov_intervals_contain_exact_eigenvalues_at_every_step():
    s = planted(3, 800, 200)
    g = s.T @ s
    exact = np.linalg.eigvalsh(g)[::-1][:10]
    seen = []
    block_krylov_eigs(lambda v: g @ v, 200, 10, trace=float(np.trace(g)), block=12,
                      max_products=6, callback=seen.append)
    assert len(seen) == 6
    for r in seen:
        assert np.all(r.lower <= exact * (1 + 1e-12))
        assert np.all(r.upper >= exact * (1 - 1e-12))
    assert seen[-1].certified[0]
    assert (seen[-1].upper[0] - seen[-1].lower[0]) <= 1e-9 * exact[0]


# ---------------------------------------------------------------------------------- approx
@pytest.mark.parametrize("seed", range(8))
def test_approx_r_intervals_cover_exact_values(seed):
    # few passes and a small block: the intervals are wide for the noise eigenvalues, but
    # they must contain the exact value every time (a deterministic guarantee)
    s = planted(seed, 500, 160, scales=(6.0, 3.0, 2.5, 1.0), noise=0.8)
    ref = diagnose(s, mode="exact")
    d = diagnose(
        s, mode="approx", seed=seed, approx=ApproxOptions(max_passes=2, block=6,
                                                          sample_columns=40)
    )
    for i, (lo, hi) in enumerate(d.energy_intervals):
        assert lo - 1e-12 <= ref.energy_ratios[i] <= hi + 1e-12, i
    lo, hi = d.r1_interval
    assert lo - 1e-12 <= ref.r1 <= hi + 1e-12
    lo, hi = d.r2_5_interval
    assert lo - 1e-12 <= ref.r2_5 <= hi + 1e-12
    assert d.p == pytest.approx(ref.p, rel=1e-10)  # p is exact in approx mode
    assert d.details["passes"] == 2


def test_approx_r1_within_one_percent_and_recorded():
    s = planted(11, 2000, 300)
    ref = diagnose(s, mode="exact")
    d = diagnose(s, mode="approx", approx=ApproxOptions(sample_columns=60))
    assert relerr(d.r1, ref.r1) <= 0.01
    assert d.r1_interval[0] <= ref.r1 <= d.r1_interval[1]
    assert (d.r1_interval[1] - d.r1_interval[0]) <= 1e-3 * d.r1  # converged and certified
    assert d.details["passes"] <= 8
    assert d.kappa_ci[0] <= ref.kappa <= d.kappa_ci[1]
    rec = d.to_dict()
    assert rec["mode"] == "approx" and rec["sources"]["kappa"].startswith("sampled")
    assert "r1_interval" in rec and "kappa_ci" in rec
    json.dumps(rec)
    assert "mode" not in ref.to_dict()  # the default record keeps its keys (golden fixtures)


def test_kappa_ci_coverage_at_nominal_rate():
    """Over a fixed set of seeds (4 matrices x 100 column samples of 30 of 200 columns)
    the 95% intervals contain the exact κ at least 95% of the time."""
    hits = total = 0
    for mseed in range(4):
        rng = np.random.default_rng(mseed)
        load = rng.standard_normal((3, 200)) * rng.uniform(0.2, 2.0, 200)
        s = rng.standard_normal((300, 3)) @ load + rng.standard_normal((300, 200))
        a = abs_correlations(stream_stats(s), np.ones(200, dtype=bool))
        exact = a.sum() / (200 * 199)
        assert diagnose(s, mode="exact").kappa == pytest.approx(exact, rel=1e-10)
        for k in range(100):
            idx = np.random.default_rng([mseed, k]).choice(200, 30, replace=False)
            est = kappa_estimate(a[np.ix_(idx, idx)], 200, 0.95)
            hits += est.ci[0] <= exact <= est.ci[1]
            total += 1
    assert hits / total >= 0.95, hits / total


def test_kappa_exact_when_every_column_is_sampled():
    s = planted(4, 300, 40)
    ref = diagnose(s, mode="exact")
    d = diagnose(s, mode="approx")
    assert d.kappa == pytest.approx(ref.kappa, rel=1e-12)
    assert d.kappa_ci == (d.kappa, d.kappa)
    assert d.sources["kappa"].startswith("exact")


def test_modes_refused_with_a_dask_client():
    with pytest.raises(ParameterError, match="mode"):
        diagnose(planted(0), mode="approx", client=object())


# ---------------------------------------------------------------------------------- CLI
def _cli(capsys, *args):
    from aria_tda.cli import main

    code = main(["diagnose", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_memory_and_approx_flags(tmp_path, capsys):
    path = tmp_path / "s.npy"
    np.save(path, planted(5, 800, 400).astype(np.float32))
    code, out, err = _cli(
        capsys, str(path), "--memory", "2.5MB", "--spill-dir", str(tmp_path / "sp"), "--json"
    )
    assert code == 0, err
    assert "mode exact-tiled: the in-memory Gram needs" in err
    rec_t = json.loads(out)
    assert rec_t["mode"] == "exact-tiled"
    code, out, err = _cli(capsys, str(path), "--json")
    plain = json.loads(out)
    assert plain["mode"] == "exact" and err == ""  # the usual path stays quiet
    assert rec_t["r1"] == pytest.approx(plain["r1"], rel=1e-6)
    code, out, err = _cli(capsys, str(path), "--approx", "--sample-columns", "50", "--json")
    assert code == 0, err
    assert "mode approx" in err
    rec_a = json.loads(out)
    assert rec_a["mode"] == "approx" and len(rec_a["kappa_ci"]) == 2
    assert rec_a["r1_interval"][0] <= plain["r1"] * (1 + 1e-6)
    code, out, err = _cli(capsys, str(path), "--approx", "--sample-columns", "50")
    assert "r1 interval" in out and "kappa CI" in out
    code, out, err = _cli(capsys, str(path), "--memory", "lots")
    assert code == 2 and "memory" in err and "Traceback" not in err
