"""The diagnostics on Dask: the same kernel over row ranges, merged in float64, equals the
streaming path (:mod:`aria_tda.diagnostics.distributed`)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from aria_tda.diagnostics import diagnose
from aria_tda.diagnostics.distributed import matvec_dask, stats_dask
from aria_tda.errors import DataError, ParameterError
from aria_tda.scores import save_scores
from aria_tda.scores.stats import stream_stats

distributed = pytest.importorskip("dask.distributed")

FIELDS = ("kappa", "r1", "r2_5", "p", "sigma1", "v1_constancy")


@pytest.fixture(scope="module")
def client():
    """A one-worker cluster talking TCP on loopback, worker in this process (starts in ~1 s)."""
    with (
        distributed.LocalCluster(
            n_workers=1,
            threads_per_worker=2,
            processes=False,
            dashboard_address=None,
            protocol="tcp",
            host="127.0.0.1",
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


@pytest.mark.parametrize("suffix", [".npy", ".zarr"])
def test_file_backed_equals_streaming(rng, tmp_path, client, suffix):
    s = rng.standard_normal((900, 10)) + np.outer(rng.random(900), rng.random(10)) * 3
    path = save_scores(s, tmp_path / f"s{suffix}")
    ref = diagnose(s, with_u1=True)
    got = diagnose(path, client=client, chunk_rows=64, with_u1=True)
    for f in FIELDS:
        assert getattr(got, f) == pytest.approx(getattr(ref, f), rel=1e-10)
    np.testing.assert_allclose(got.u1, ref.u1, atol=1e-10)
    st = stats_dask(path, client=client, chunk_rows=100, n_partitions=3, moments=4)
    one = stream_stats(s, shift=st.shift, moments=4)
    np.testing.assert_allclose(st.raw_gram(), one.raw_gram(), rtol=1e-12)
    np.testing.assert_allclose(st.s4, one.s4, rtol=1e-12)


@pytest.mark.parametrize("factor", [1e-21, 1e21])
def test_dask_path_is_scale_invariant(rng, tmp_path, client, factor):
    """Tiny or huge float32 scores: every partition scales its columns (no float32 underflow)."""
    from aria_tda.diagnostics.core import diagnose_reference

    s = rng.standard_normal((600, 8)) * np.logspace(-5, 5, 8) + 0.2 * rng.standard_normal(8)
    s32 = (s * factor).astype(np.float32)
    path = save_scores(s32, tmp_path / "tiny.npy")
    ref = diagnose_reference(s32)
    got = diagnose(path, client=client, chunk_rows=64)
    for f in ("kappa", "r1", "r2_5", "p", "v1_constancy"):
        assert getattr(got, f) == pytest.approx(getattr(ref, f), rel=1e-5), f
    assert got.constant_columns == 0


def test_arrays_and_dask_arrays(rng, client):
    da = pytest.importorskip("dask.array")
    s = rng.standard_normal((700, 6))
    ref = diagnose(s, with_u1=True)
    for obj in (s, da.from_array(s, chunks=(90, 3))):
        got = diagnose(obj, client=client, with_u1=True)
        for f in FIELDS:
            assert getattr(got, f) == pytest.approx(getattr(ref, f), rel=1e-10)
        np.testing.assert_allclose(got.u1, ref.u1, atol=1e-10)
    np.testing.assert_allclose(matvec_dask(s, np.ones(6), client=client), s.sum(1), rtol=1e-12)


@pytest.mark.parametrize("suffix", [".npy", ".zarr"])
def test_transposed_files_are_reopened_transposed(rng, tmp_path, client, suffix):
    s = rng.standard_normal((400, 7)) + np.outer(rng.random(400), np.ones(7))
    path = save_scores(np.ascontiguousarray(s.T), tmp_path / f"qt{suffix}")
    ref = diagnose(s, with_u1=True)
    got = diagnose(path, client=client, chunk_rows=64, with_u1=True, transpose=True)
    for f in FIELDS:
        assert getattr(got, f) == pytest.approx(getattr(ref, f), rel=1e-10)
    np.testing.assert_allclose(got.u1, ref.u1, atol=1e-10)


def test_errors_travel_back(rng, tmp_path, client):
    s = rng.standard_normal((300, 4))
    s[250, 1] = np.nan
    path = save_scores(s, tmp_path / "s.npy")
    with pytest.raises(DataError, match="row 250, column 1"):
        diagnose(path, client=client, chunk_rows=50)
    with pytest.raises(DataError, match="row 250, column 1"):
        diagnose(s, client=client, chunk_rows=50)
    from aria_tda.scores.lowrank import residual

    with pytest.raises(ParameterError, match="file-backed matrix"):
        stats_dask(residual(rng.standard_normal((20, 3))), client=client)


@pytest.mark.slow
def test_process_cluster_under_main_guard(rng, tmp_path):
    """Spawned worker processes re-import __main__: the documented guard makes that safe."""
    s = rng.standard_normal((2000, 8)).astype(np.float32)
    path = save_scores(s, tmp_path / "s.npy")
    script = tmp_path / "run.py"
    script.write_text(
        textwrap.dedent(f"""
        import json
        from dask.distributed import Client, LocalCluster
        from aria_tda.diagnostics import diagnose

        if __name__ == "__main__":
            with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                              dashboard_address=None, host="127.0.0.1") as cluster, \\
                    Client(cluster) as client:
                d = diagnose({str(path)!r}, client=client, chunk_rows=256)
            print(json.dumps(d.to_dict()))
    """)
    )
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    ref = diagnose(s, chunk_rows=256)
    assert got["kappa"] == pytest.approx(ref.kappa, rel=1e-9)
    assert got["r1"] == pytest.approx(ref.r1, rel=1e-9)
