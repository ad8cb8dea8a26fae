"""Fixtures of the library's tests (the seeded ``rng`` and the quiet environment are in the
repository's root ``conftest.py``, shared with the experiments' tests)."""

from __future__ import annotations

import pytest

from studylib import make_planted_study


@pytest.fixture
def planted_study():
    """Factory ``planted_study(tmp_path, rng, collapsed=False) -> study.toml`` (study, CLI).

    A small planted study on disk: a symbolic feature store of 120 tracks in 4 clusters that
    differ on the harmony features only, a segment-level score matrix (2 segments per track, 24
    queries; query q retrieves cluster q % 4, or one shared axis when ``collapsed``), a segment
    map, a queries file with a ``genre`` column and the study file itself.
    """
    return make_planted_study


@pytest.fixture(scope="session")
def dask_client():
    """A real Dask cluster for the distributed-equals-local tests: two single-threaded worker
    *processes* on loopback TCP, started once per session (tests that kill a worker leave it
    to the nanny to restart)."""
    import warnings

    distributed = pytest.importorskip("dask.distributed")
    with (
        warnings.catch_warnings(),
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
            protocol="tcp", dashboard_address=None,
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        warnings.simplefilter("ignore", UserWarning)
        yield c
