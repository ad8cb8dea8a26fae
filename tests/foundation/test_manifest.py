"""aria_tda.manifest: manifests beside artefacts, and the refusal of silent reuse."""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.errors import FileFormatError, ManifestMismatchError
from aria_tda.manifest import check_manifest, make_manifest, read_manifest, write_manifest


def test_manifest_roundtrip_and_mismatch(tmp_path):
    art = tmp_path / "s.npy"
    np.save(art, np.zeros((3, 2)))
    write_manifest(art, make_manifest("scores", shape=[3, 2], parameters={"proj_dim": 512}))
    assert read_manifest(art)["shape"] == [3, 2]
    check_manifest(art, {"parameters": {"proj_dim": 512}})
    with pytest.raises(ManifestMismatchError, match=r"parameters.proj_dim: stored 512, asked 4096"):
        check_manifest(art, {"parameters": {"proj_dim": 4096}})


@pytest.mark.parametrize(
    "text, field",
    [
        ("[1, 2]", "JSON object"),
        ('{"shape": "abc"}', "shape"),
        ('{"shape": [[3, 4]]}', "shape"),
        ('{"shape": [3, -4]}', "shape"),
        ('{"parameters": 3}', "parameters"),
        ('{"parameters": [["a", 1]]}', "parameters"),
        ('{"kind": ["scores"]}', "kind"),
        ('{"seed": true}', "seed"),
        ('{"row_ids": {"file": "x"}}', "row_ids"),
        ('{"created": 2024}', "created"),
    ],
)
def test_malformed_manifests_are_one_line_errors_naming_file_and_field(tmp_path, text, field):
    art = tmp_path / "s.npy"
    art.write_bytes(b"")
    (tmp_path / "s.npy.manifest.json").write_text(text)
    for call in (lambda: read_manifest(art),
                 lambda: check_manifest(art, {"parameters": {"lr": 1}, "shape": [3, 4]})):
        with pytest.raises(FileFormatError) as exc:
            call()
        msg = str(exc.value)
        assert "\n" not in msg and "s.npy.manifest.json" in msg and field in msg, msg


def test_unreadable_manifests_are_one_line_errors(tmp_path):
    art = tmp_path / "s.npy"
    art.write_bytes(b"")
    for raw in (b"\xff\xfe{", b"[" * 100_000, b'{"a": '):
        (tmp_path / "s.npy.manifest.json").write_bytes(raw)
        with pytest.raises(FileFormatError, match=r"s\.npy\.manifest\.json' is unreadable: \w+"):
            check_manifest(art, {"kind": "scores"})


def test_sanity_columns_of_a_score_file(tmp_path):
    from aria_tda.manifest import SANITY_KEY, make_manifest, sanity_columns, write_manifest

    path = tmp_path / "scores.npy"
    np.save(path, np.zeros((4, 2)))
    assert sanity_columns(path) == {"sanity": "unavailable"}  # no manifest: not ARIA's
    assert sanity_columns(None) == {"sanity": "unavailable"}
    write_manifest(path, make_manifest("scores"))
    assert sanity_columns(path) == {"sanity": "unavailable"}  # ARIA's, without the checks
    entry = {"version": 1,
             "randomization": {"mean": 0.62, "lo": 0.55, "hi": 0.7, "flagged": True},
             "bias": {"median": 0.1, "flagged": False}}
    write_manifest(path, make_manifest("scores", **{SANITY_KEY: entry}))
    got = sanity_columns(path)
    assert got == {"sanity": "computed", "randomization_rho": 0.62, "randomization_lo": 0.55,
                   "randomization_hi": 0.7, "randomization_flagged": True,
                   "norm_bias_rho": 0.1, "norm_bias_flagged": False}
