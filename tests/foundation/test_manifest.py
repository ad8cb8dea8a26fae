"""aria_tda.manifest: manifests beside artefacts, and the refusal of silent reuse."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.errors import ManifestMismatchError
from aria_tda.manifest import check_manifest, make_manifest, read_manifest, write_manifest


def test_manifest_roundtrip_and_mismatch(tmp_path):
    art = tmp_path / "s.npy"
    np.save(art, np.zeros((3, 2)))
    write_manifest(art, make_manifest("scores", shape=[3, 2], parameters={"proj_dim": 512}))
    assert read_manifest(art)["shape"] == [3, 2]
    check_manifest(art, {"parameters": {"proj_dim": 512}})
    with pytest.raises(ManifestMismatchError, match=r"parameters.proj_dim: stored 512, asked 4096"):
        check_manifest(art, {"parameters": {"proj_dim": 4096}})
