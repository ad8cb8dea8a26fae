"""How homogeneity results show themselves: a one-line repr without arrays, a notebook table
and the tidy ``to_frame()`` that holds the result's own numbers."""

from __future__ import annotations

import numpy as np

from aria_tda.homogeneity import run_homogeneity
from aria_tda.homogeneity.distinctive import distinctive_reading

from ._helpers import make_features


def _planted(rng):
    n, t, n_cl = 300, 30, 6
    clusters = rng.integers(0, n_cl, n)
    prepared, _ = make_features(rng, n, clusters=clusters)
    q_cluster = rng.integers(0, n_cl, t)
    s = (clusters[:, None] == q_cluster[None, :]) * 3.0 + rng.standard_normal((n, t))
    s[:, 3] = 1.0  # a constant query column: excluded
    res, null, _ = run_homogeneity(s, prepared, ks=[10, 20], B=60, seed=1, evidence_k=20,
                                   n_pairs=0)
    return s, prepared, null, res


def test_homogeneity_result_repr_html_and_frame(rng):
    _, _, _, res = _planted(rng)
    text = repr(res)
    assert text.startswith("HomogeneityResult(ks=(10, 20), channels=")
    assert "\n" not in text and "array" not in text and len(text) < 300
    assert "T=30" in text and "leading='harmony'" in text  # the planted channel
    means = res.mean_z()
    assert means["harmony"] == max(means.values())
    assert f"leading_mean_z={means['harmony']:.3g}" in text
    html = res._repr_html_()
    assert html.startswith("<div><table>") and "harmony" in html and "<array" not in html
    df = res.to_frame()
    assert list(df.columns) == ["K", "channel", "query", "z", "g", "constant"]
    assert len(df) == len(res.ks) * len(res.channels) * res.n_queries
    for k in res.ks:
        for c in res.channels:
            got = df[(df.K == k) & (df.channel == c)].sort_values("query")
            np.testing.assert_array_equal(got.z.to_numpy(), res.z_at(k, c))
    assert df[df["query"] == 3].constant.all() and df[df["query"] == 3].z.isna().all()
    assert not df[df["query"] != 3].constant.any()
    # the mean over queries of the frame is the repr's mean z
    at = df[(df.K == 20) & ~df.constant].groupby("channel").z.mean()
    np.testing.assert_allclose(at["harmony"], means["harmony"], rtol=1e-12)


def test_distinctive_reading_repr_html_and_frame(rng):
    s, prepared, null, _ = _planted(rng)
    s = s[:, [q for q in range(s.shape[1]) if q != 3]]
    r = distinctive_reading(s, prepared, null, k=20, anchor="group", n_boot=50,
                            n_reference=40, n_null=40)
    text = repr(r)
    assert text.startswith("DistinctiveReading(K=20, anchor='group', T=29, read=29")
    assert f"method_aspect={r.method_aspect!r}" in text and "\n" not in text
    named = {c: int(np.count_nonzero(r.named == i)) for i, c in enumerate(r.channels)}
    named["none"] = int(np.count_nonzero(r.named < 0))
    shown = text.split("named='")[1].split("'")[0]
    assert shown == " ".join(f"{c}:{n}" for c, n in named.items() if n)
    assert "method aspect" in r._repr_html_()
    df = r.to_frame()
    assert df.equals(r.query_frame())
    assert len(df) == 29 * len(r.channels)
