"""``aria-tda embed`` on a real Dask LocalCluster (worker processes): the serial store, exactly."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.cli import main
from aria_tda.embed import embed_to_store
from aria_tda.features.store import FeatureStore

distributed = pytest.importorskip("dask.distributed")


@pytest.fixture(scope="module")
def client():
    """Two single-threaded worker processes on loopback (they import the toy encoder)."""
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            protocol="tcp",
            dashboard_address=None,
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def _same(a, b):
    x, y = FeatureStore.open(a), FeatureStore.open(b)
    assert list(x.track_ids) == list(y.track_ids)
    np.testing.assert_array_equal(x.vectors("embedding"), y.vectors("embedding"))
    assert x.metadata.equals(y.metadata) and x.params == y.params
    assert list(x.errors["track_id"]) == list(y.errors["track_id"])


@pytest.mark.slow
def test_embed_on_a_cluster_equals_serial(tmp_path, toy_encoder, corpus, client, capsys):
    kw = {"encoder": "toy", "weights": toy_encoder}
    one = embed_to_store(corpus, tmp_path / "one", **kw)
    got = embed_to_store(corpus, tmp_path / "dask", client=client, **kw)
    assert (got["n_extracted"], got["n_errors"]) == (one["n_extracted"], one["n_errors"]) == (4, 1)
    _same(tmp_path / "one", tmp_path / "dask")
    # segments, through the CLI connected to the running scheduler by its address
    embed_to_store(corpus, tmp_path / "seg1", segment_seconds=0.5, **kw)
    code = main(["embed", str(corpus), "--encoder", "toy", "--weights", str(toy_encoder),
                 "--segment-seconds", "0.5", "--out", str(tmp_path / "seg2"),
                 "--scheduler", client.scheduler.address])
    assert code == 0, capsys.readouterr().err
    assert "12 toy embeddings" in capsys.readouterr().out
    _same(tmp_path / "seg1", tmp_path / "seg2")
    code = main(["embed", str(corpus), "--encoder", "toy", "--weights", str(toy_encoder),
                 "--out", str(tmp_path / "x"), "--scheduler", "local:1", "--workers", "2"])
    err = capsys.readouterr().err
    assert code == 2 and "--workers" in err and len(err.strip().splitlines()) == 1
