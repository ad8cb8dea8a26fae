"""Special inputs, refused in one line before anything opens them (issue 26, item 8).

A FIFO given as a score file hung every command (opening a FIFO for reading waits for a
writer); ``/dev/zero`` never ends; a symlink loop was called "no such file"; a ``.pt`` saved with
``pickle_protocol=5`` printed torch's two-line warning before its error (and a tensor saved so
could not be read at all); a malformed manifest could end in a ``TypeError`` traceback. Each
case runs ``aria-tda`` in a child process with a timeout, so a hang fails the test instead of
stalling the suite, and asserts one error line that says what the path is.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aria_tda.cli import main
from faultlib import cli, one_line_error

TIMEOUT = 60
N_TRACKS, N_QUERIES = 30, 6

STUDY = """\
name = "special"
modality = "symbolic"
feature_store = "store"
output = "results"
K = [5]
B = 10
seed = 1
n_bootstrap = 0
queries = "{queries}"
report = false

[[setting]]
method = "M"
scores = "{scores}"
segments = "segments.csv"
"""


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small valid study folder: feature store, scores, segment map, queries, a FIFO."""
    from aria_tda.features.registry import features as registry_features
    from aria_tda.features.store import write_store
    from aria_tda.scores import save_scores

    d = tmp_path_factory.mktemp("special-inputs")
    rng = np.random.default_rng(26)
    ids = [f"t{i:02d}" for i in range(N_TRACKS)]
    feats = {s.name: rng.normal(size=(N_TRACKS, s.dim)) for s in registry_features("symbolic")}
    write_store(d / "store", modality="symbolic", track_ids=ids, features=feats)
    seg_track = np.repeat(np.arange(N_TRACKS), 2)
    save_scores(rng.normal(size=(seg_track.size, N_QUERIES)).astype(np.float32),
                d / "scores.npy", method="M")
    pd.DataFrame({"segment": np.arange(seg_track.size),
                  "track_id": np.array(ids)[seg_track]}).to_csv(d / "segments.csv", index=False)
    pd.DataFrame({"query": np.arange(N_QUERIES),
                  "genre": ["a", "b"] * (N_QUERIES // 2)}).to_csv(d / "queries.csv", index=False)
    os.mkfifo(d / "fifo.npy")
    os.mkfifo(d / "fifo.csv")
    return d


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return cli(args, cwd=cwd, timeout=TIMEOUT, env=env or None)


FIFO = "got a FIFO (named pipe)"


# ----------------------------------------------------------------------------------------
# FIFOs, devices, links: every command that reads a score matrix
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv",
    [
        ["diagnose", "fifo.npy"],
        ["aggregate", "fifo.npy", "--segments", "segments.csv", "--out", "out/t.npy"],
        ["homogeneity", "fifo.npy", "--features", "store", "--segments", "segments.csv",
         "-K", "5", "-B", "5", "--bootstrap", "0", "--no-report", "--out", "out/res"],
    ],
    ids=["diagnose", "aggregate", "homogeneity"],
)
def test_a_fifo_as_the_score_file_is_refused_not_read(kit, argv):
    line = one_line_error(_run(argv, kit))
    assert "scores" in line and FIFO in line and "fifo.npy" in line
    assert not (kit / "out").exists()


def test_a_fifo_as_the_score_file_of_a_study_setting(kit, tmp_path):
    (tmp_path / "study.toml").write_text(STUDY.format(queries=kit / "queries.csv",
                                                      scores=kit / "fifo.npy"))
    for name in ("store", "segments.csv"):
        (tmp_path / name).symlink_to(kit / name)
    line = one_line_error(_run(["run", "study.toml", "--quiet", "--no-progress"], tmp_path))
    assert FIFO in line and "fifo.npy" in line
    assert not (tmp_path / "results").exists()


def test_a_fifo_found_inside_a_score_folder(kit, tmp_path):
    os.mkfifo(tmp_path / "scores.npy")
    line = one_line_error(_run(["diagnose", str(tmp_path)], kit))
    assert FIFO in line and "scores.npy" in line


@pytest.mark.parametrize("flag", ["--segments", "--tracks"])
def test_a_fifo_as_a_table_of_aggregate(kit, flag):
    tables = {"--segments": "segments.csv", flag: "fifo.csv"}
    argv = ["aggregate", "scores.npy", "--out", "out/t.npy"]
    for name, value in tables.items():
        argv += [name, value]
    line = one_line_error(_run(argv, kit))
    assert flag.lstrip("-") in line and FIFO in line


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_character_device_as_scores(kit, device):
    line = one_line_error(_run(["diagnose", device], kit))
    assert "scores: expected a file or a directory, got a character device" in line
    assert device in line


def test_a_symlink_loop_is_called_one(kit, tmp_path):
    (tmp_path / "a.npy").symlink_to(tmp_path / "b.npy")
    (tmp_path / "b.npy").symlink_to(tmp_path / "a.npy")
    line = one_line_error(_run(["diagnose", str(tmp_path / "a.npy")], kit))
    assert "a symlink loop" in line and "no such file" not in line


def test_a_dangling_symlink_names_its_target(kit, tmp_path):
    (tmp_path / "s.npy").symlink_to(tmp_path / "moved-away.npy")
    line = one_line_error(_run(["diagnose", str(tmp_path / "s.npy")], kit))
    assert "a symlink to a missing target" in line and "moved-away.npy" in line


def test_a_folder_where_a_file_is_expected(kit, tmp_path):
    argv = ["aggregate", "scores.npy", "--segments", str(tmp_path), "--out", "out/t.npy"]
    line = one_line_error(_run(argv, kit))
    assert "segments: expected a file, got a directory" in line


# inputs read by modules outside the score readers: their entry points call the same check
def test_a_fifo_as_the_study_file(kit):
    line = one_line_error(_run(["run", "fifo.csv"], kit))
    assert FIFO in line


def test_a_fifo_as_the_queries_file(kit):
    argv = ["homogeneity", "scores.npy", "--features", "store", "--segments", "segments.csv",
            "--queries", "fifo.csv", "-K", "5", "-B", "5", "--bootstrap", "0", "--no-report",
            "--out", "out/res"]
    line = one_line_error(_run(argv, kit))
    assert "queries" in line and FIFO in line


def test_a_fifo_as_the_feature_store(kit):
    argv = ["homogeneity", "scores.npy", "--features", "fifo.csv", "--segments", "segments.csv",
            "-K", "5", "-B", "5", "--bootstrap", "0", "--no-report", "--out", "out/res"]
    line = one_line_error(_run(argv, kit))
    assert FIFO in line


# ----------------------------------------------------------------------------------------
# torch files saved with pickle protocol 5
# ----------------------------------------------------------------------------------------
@pytest.mark.slow  # a child process that imports torch: several seconds
def test_a_protocol_5_pt_holding_a_non_tensor_is_one_line(kit, tmp_path):
    import torch

    torch.save({"scores": np.ones((40, 6))}, tmp_path / "s.pt", pickle_protocol=5)
    proc = _run(["diagnose", str(tmp_path / "s.pt")], kit, PYTHONWARNINGS="default")
    line = one_line_error(proc)
    assert "pickled NumPy array" in line and "s.pt" in line
    assert "Warning" not in proc.stderr and "pickle protocol" not in proc.stderr


@pytest.mark.parametrize("protocol", [3, 4, 5])
def test_a_newer_protocol_pt_holding_a_tensor_reads_as_the_npy_does(tmp_path, capsys, protocol):
    import warnings

    import torch

    a = np.random.default_rng(5).normal(size=(60, N_QUERIES)).astype(np.float32)
    np.save(tmp_path / "s.npy", a)
    torch.save({"scores": torch.from_numpy(a), "row_ids": [f"r{i}" for i in range(60)]},
               tmp_path / "s.pt", pickle_protocol=protocol)
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # a warning torch emits would be printed
        assert main(["diagnose", str(tmp_path / "s.pt"), "--json"]) == 0
        pt = capsys.readouterr()
        assert main(["diagnose", str(tmp_path / "s.npy"), "--json"]) == 0
        npy = capsys.readouterr()
    assert pt.err == "", pt.err  # no torch warning, no ARIA warning
    got, want = json.loads(pt.out), json.loads(npy.out)
    assert got.pop("input")["format"] == "torch" and want.pop("input")["format"] == "npy"
    assert got == want

    from aria_tda.scores import open_scores

    with open_scores(tmp_path / "s.pt") as src:
        assert src.row_ids.tolist() == [f"r{i}" for i in range(60)]
        np.testing.assert_array_equal(src.to_numpy(), a)


class _Payload:
    marker: Path

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_protocol_5_pt_with_a_code_payload_runs_nothing(tmp_path, capsys):
    import torch

    payload = _Payload()
    payload.marker = tmp_path / "ran"
    torch.save({"scores": torch.ones(40, 6), "x": payload}, tmp_path / "s.pt",
               pickle_protocol=5)
    status = main(["diagnose", str(tmp_path / "s.pt")])
    line = one_line_error(subprocess.CompletedProcess([], status, "", capsys.readouterr().err))
    assert "does not unpickle" in line and not payload.marker.exists()


# ----------------------------------------------------------------------------------------
# malformed manifests beside a valid matrix
# ----------------------------------------------------------------------------------------
MALFORMED = {
    "a-list": "[]",
    "a-string": '"scores"',
    "a-number": "3",
    "null": "null",
    "truncated": '{"kind": "scores", "shape": [',
    "empty": "",
    "not-utf8": b"\xff\xfe{\x00",
    "nested-too-deep": "[" * 100_000,
    "shape-a-string": '{"shape": "abc"}',
    "shape-a-number": '{"shape": 3}',
    "shape-an-object": '{"shape": {"rows": 60}}',
    "shape-nested": '{"shape": [[60, 6]]}',
    "shape-negative": '{"shape": [-60, 6]}',
    "shape-floats": '{"shape": [60.5, 6]}',
    "shape-booleans": '{"shape": [true, 6]}',
    "shape-null": '{"shape": null}',
    "shape-other": '{"shape": [3, 4]}',
    "parameters-a-number": '{"parameters": 3}',
    "parameters-a-list": '{"parameters": [[1], [2]]}',
    "parameters-a-string": '{"parameters": "lr=1"}',
    "kind-a-number": '{"kind": 7}',
    "dtype-a-list": '{"dtype": ["float32"]}',
    "seed-a-float": '{"seed": 1.5}',
    "seed-a-string": '{"seed": "one"}',
    "method-an-object": '{"method": {"name": "TRAK"}}',
    "stage-a-list": '{"stage": ["fine"]}',
    "row-ids-a-number": '{"row_ids": 3}',
    "created-a-number": '{"created": 20240101}',
    "format-a-list": '{"format": ["npy"]}',
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_manifest_is_one_line(case, tmp_path, capsys):
    np.save(tmp_path / "s.npy", np.random.default_rng(0).normal(size=(60, 6)))
    text = MALFORMED[case]
    manifest = tmp_path / "s.npy.manifest.json"
    if isinstance(text, bytes):
        manifest.write_bytes(text)
    else:
        manifest.write_text(text)
    status = main(["diagnose", str(tmp_path / "s.npy")])
    err = capsys.readouterr().err
    line = one_line_error(subprocess.CompletedProcess([], status, "", err))
    assert "manifest" in line and "s.npy" in line, line
    field = case.split("-")[0].replace("row", "row_ids")
    if field in {"shape", "parameters", "kind", "dtype", "seed", "method", "stage", "row_ids",
                 "created", "format"}:
        assert field in line, line


def test_a_malformed_manifest_in_a_child_process(tmp_path):
    np.save(tmp_path / "s.npy", np.ones((60, 6)))
    (tmp_path / "s.npy.manifest.json").write_text('{"shape": 3, "parameters": 3}')
    line = one_line_error(cli(["diagnose", "s.npy"], cwd=tmp_path, timeout=TIMEOUT))
    assert "manifest 's.npy.manifest.json': shape: expected a list of non-negative integers, " \
        "got 3" in line
