"""A corpus of malformed inputs, one per case, across every ``aria-tda`` command (issue 13, item 9).

Every case builds its bad input in ``tmp_path`` and runs the command in-process. Each must end
the same way: exit status 2; stderr exactly one non-empty line ``aria-tda COMMAND: error: ...``
that names the offending thing (file, key, parameter, index); no traceback anywhere; nothing
half-written (``tmp_path`` is byte-for-byte and mtime-for-mtime what it was before the run:
no output folder, no empty parent folder, no ``*.tmp-*`` leftover); and the inputs untouched.

Each case is ``build(d, kit) -> (argv, names)``: ``d`` is the case's folder, ``kit`` the valid
artefacts built once per module (a small symbolic study and its results folder), ``names`` the
substrings the error line must contain.

A bad *file* inside an input folder of ``aria-tda features`` is not a user mistake of the run: it
is recorded in the store's errors table and skipped (status 0); the last tests check that for
MIDI and audio files. The module is longer than the house's ~600 lines because it is a corpus:
one small builder per case, kept side by side so a reviewer sees every input in one place.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import struct
import subprocess
import sys
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from aria_tda.cli import main

N_TRACKS, SEG_PER_TRACK, N_QUERIES = 60, 2, 8

Build = Callable[[Path, "Kit"], tuple[list[str], tuple[str, ...]]]
CASES: dict[str, tuple[str, Build]] = {}


def case(command: str, case_id: str) -> Callable[[Build], Build]:
    """Register ``build`` as the bad-input case ``case_id`` of ``aria-tda COMMAND``."""

    def deco(build: Build) -> Build:
        assert case_id not in CASES, case_id
        CASES[case_id] = (command, build)
        return build

    return deco


# ----------------------------------------------------------------------------------------
# valid artefacts (built once) and small writers
# ----------------------------------------------------------------------------------------
STUDY = """\
name = "bad-inputs"
modality = "symbolic"
feature_store = "store"
output = "results"
K = [5, 10]
K_report = 5
B = 10
seed = 1
n_bootstrap = 10
queries = "queries.csv"
report = false

[[setting]]
method = "M"
scores = "scores.npy"
segments = "segments.csv"
"""


class Kit:
    """The valid study folder and results folder every case copies from."""

    def __init__(self, root: Path) -> None:
        self.study_dir = root / "study"
        self.results = root / "study" / "results"

    def study(self, d: Path, text: str | None = None) -> Path:
        """Copy the valid study (store, scores, segment map, queries) into ``d``."""
        for name in ("store", "scores.npy", "segments.csv", "queries.csv"):
            src = self.study_dir / name
            if src.is_dir():
                shutil.copytree(src, d / name)
            else:
                shutil.copy2(src, d / name)
        (d / "study.toml").write_text(STUDY if text is None else text)
        return d / "study.toml"

    def results_copy(self, d: Path) -> Path:
        """Copy the valid results folder into ``d / "results"``."""
        shutil.copytree(self.results, d / "results")
        return d / "results"


def _write_study(d: Path) -> None:
    from aria_tda.features.registry import features as registry_features
    from aria_tda.features.store import write_store
    from aria_tda.scores import save_scores

    rng = np.random.default_rng(13)
    ids = [f"t{i:02d}" for i in range(N_TRACKS)]
    feats = {spec.name: rng.normal(size=(N_TRACKS, spec.dim))
             for spec in registry_features("symbolic")}
    write_store(d / "store", modality="symbolic", track_ids=ids, features=feats)
    seg_track = np.repeat(np.arange(N_TRACKS), SEG_PER_TRACK)
    s = rng.normal(size=(seg_track.size, N_QUERIES)).astype(np.float32)
    save_scores(s, d / "scores.npy", method="M")
    pd.DataFrame({"segment": np.arange(seg_track.size),
                  "track_id": np.array(ids)[seg_track]}).to_csv(d / "segments.csv", index=False)
    pd.DataFrame({"query": np.arange(N_QUERIES),
                  "genre": ["a", "b"] * (N_QUERIES // 2)}).to_csv(d / "queries.csv", index=False)
    (d / "study.toml").write_text(STUDY)


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Kit:
    root = tmp_path_factory.mktemp("bad-inputs-kit")
    (root / "study").mkdir()
    _write_study(root / "study")
    assert main(["run", str(root / "study" / "study.toml"), "--quiet", "--no-progress"]) == 0
    return Kit(root)


def _scores(d: Path, name: str = "scores.npy", shape: tuple[int, ...] = (40, 6)) -> Path:
    arr = np.random.default_rng(0).normal(size=shape)
    np.save(d / name, arr)
    return d / name


def _npy(d: Path, arr: Any, name: str = "bad.npy") -> Path:
    np.save(d / name, arr, allow_pickle=True)
    return d / name


def _bytes(d: Path, name: str, data: bytes) -> Path:
    (d / name).write_bytes(data)
    return d / name


def _wav(path: Path, samples: np.ndarray, rate: int = 22050) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.asarray(samples, dtype="<i2").tobytes())
    return path


def _midi(path: Path) -> Path:
    import pretty_midi

    path.parent.mkdir(parents=True, exist_ok=True)
    pm = pretty_midi.PrettyMIDI()
    piano = pretty_midi.Instrument(program=0)
    for i, pitch in enumerate((60, 64, 67, 72, 67, 64, 60, 62)):
        piano.notes.append(pretty_midi.Note(velocity=80, pitch=pitch, start=0.5 * i,
                                            end=0.5 * i + 0.4))
    pm.instruments.append(piano)
    pm.write(str(path))
    return path


def _segmap(d: Path, frame: pd.DataFrame) -> Path:
    frame.to_csv(d / "map.csv", index=False)
    return d / "map.csv"


def _track_ids(n_rows: int, per_track: int = 2) -> list[str]:
    return [f"song{i // per_track}" for i in range(n_rows)]


# ----------------------------------------------------------------------------------------
# aria-tda diagnose: score files
# ----------------------------------------------------------------------------------------
def _nan(d, kit):
    a = np.ones((30, 4))
    a[7, 2] = np.nan
    return ["diagnose", str(_npy(d, a))], ("scores", "nan", "row 7, column 2")


def _inf(d, kit):
    a = np.ones((30, 4))
    a[3, 1] = np.inf
    return ["diagnose", str(_npy(d, a))], ("scores", "inf", "row 3, column 1")


case("diagnose", "diagnose-nan")(_nan)
case("diagnose", "diagnose-inf")(_inf)


@case("diagnose", "diagnose-1d")
def _one_d(d, kit):
    return ["diagnose", str(_npy(d, np.arange(10.0)))], ("2-D",)


@case("diagnose", "diagnose-3d")
def _three_d(d, kit):
    return ["diagnose", str(_npy(d, np.zeros((4, 3, 2))))], ("2-D",)


@case("diagnose", "diagnose-empty")
def _empty(d, kit):
    return ["diagnose", str(_npy(d, np.zeros((0, 5))))], ("(0, 5)",)


@case("diagnose", "diagnose-object-dtype")
def _object(d, kit):
    a = np.empty((3, 2), dtype=object)
    a[:] = "x"
    return ["diagnose", str(_npy(d, a))], ("bad.npy", "object")


@case("diagnose", "diagnose-complex-dtype")
def _complex(d, kit):
    return ["diagnose", str(_npy(d, np.ones((5, 3), dtype=complex)))], ("complex",)


@case("diagnose", "diagnose-truncated-npy")
def _truncated(d, kit):
    p = _scores(d, "cut.npy", (200, 20))
    p.write_bytes(p.read_bytes()[:-500])
    return ["diagnose", str(p)], ("cut.npy",)


@case("diagnose", "diagnose-corrupt-npy-header")
def _corrupt_header(d, kit):
    p = _scores(d, "hdr.npy")
    data = bytearray(p.read_bytes())
    data[10:40] = b"{'descr': 'garbage'" + b"#" * 11
    p.write_bytes(bytes(data))
    return ["diagnose", str(p)], ("hdr.npy",)


@case("diagnose", "diagnose-not-npy-bytes")
def _not_npy(d, kit):
    return ["diagnose", str(_bytes(d, "s.npy", b"hello, I am text\n" * 10))], ("s.npy",)


@case("diagnose", "diagnose-npz-two-arrays-no-key")
def _npz_two(d, kit):
    np.savez(d / "two.npz", a=np.ones((5, 3)), b=np.ones((5, 3)))
    return ["diagnose", str(d / "two.npz")], ("--key", "'a'", "'b'")


@case("diagnose", "diagnose-npz-wrong-key")
def _npz_key(d, kit):
    np.savez(d / "two.npz", a=np.ones((5, 3)), b=np.ones((5, 3)))
    return ["diagnose", str(d / "two.npz"), "--key", "zz"], ("'zz'",)


@case("diagnose", "diagnose-pt-string")
def _pt_string(d, kit):
    import torch

    torch.save("not a tensor", d / "s.pt")
    return ["diagnose", str(d / "s.pt")], ("s.pt", "str")


@case("diagnose", "diagnose-sparse-tensor")
def _sparse(d, kit):
    import torch

    torch.save(torch.eye(6).to_sparse(), d / "sparse.pt")
    return ["diagnose", str(d / "sparse.pt")], ("sparse",)


@case("diagnose", "diagnose-zarr-missing-chunk")
def _zarr_chunk(d, kit):
    import zarr

    z = zarr.open_array(str(d / "s.zarr"), mode="w", shape=(40, 4), chunks=(10, 4),
                        dtype="f4")
    z[:] = np.ones((40, 4), dtype="f4")
    chunk = sorted(p for p in (d / "s.zarr").rglob("*") if p.is_file()
                   and "zarr" not in p.name and not p.name.startswith("."))[-1]
    chunk.unlink()
    return ["diagnose", str(d / "s.zarr")], ("s.zarr", "missing")


@case("diagnose", "diagnose-missing-file")
def _missing(d, kit):
    return ["diagnose", str(d / "nope.npy")], ("nope.npy",)


@case("diagnose", "diagnose-unknown-format")
def _unknown_format(d, kit):
    return ["diagnose", str(_bytes(d, "s.csv", b"1,2\n3,4\n"))], ("s.csv",)


@case("diagnose", "diagnose-folder-not-a-store")
def _folder(d, kit):
    (d / "empty.zarr").mkdir()
    return ["diagnose", str(d / "empty.zarr")], ("empty.zarr",)


@case("diagnose", "diagnose-pt-pickled-numpy")
def _pt_numpy(d, kit):
    import torch

    torch.save(np.ones((6, 3)), d / "np.pt")  # torch's own message: ~1,000 chars, ANSI codes
    return ["diagnose", str(d / "np.pt")], ("np.pt", "pickled NumPy array")


@case("diagnose", "diagnose-folder-two-score-files")
def _folder_two(d, kit):
    (d / "two").mkdir()
    for name in ("a.npy", "b.npy"):
        np.save(d / "two" / name, np.ones((5, 3)))
    return ["diagnose", str(d / "two")], ("two", "a.npy", "b.npy")


@case("diagnose", "diagnose-kronfluence-partition-alone")
def _kron_partition(d, kit):
    data = np.ascontiguousarray(np.ones((4, 10), np.float32))
    head = json.dumps({"__metadata__": {"data_partitions": "2", "module_partitions": "1"},
                       "all_modules": {"dtype": "F32", "shape": [4, 10],
                                       "data_offsets": [0, data.nbytes]}}).encode()
    head += b" " * (-len(head) % 8)
    name = "pairwise_scores_data_partition0_module_partition0.safetensors"
    (d / name).write_bytes(len(head).to_bytes(8, "little") + head + data.tobytes())
    return ["diagnose", str(d / name)], (name, "lacks data1/module0")


@case("diagnose", "diagnose-bergson-interrupted")
def _bergson_part(d, kit):
    spec = {"names": ["score_0", "written_0", "score_1", "written_1"],
            "formats": ["float32", "bool", "float32", "bool"], "offsets": [0, 4, 8, 12],
            "itemsize": 16}
    run = d / "run"
    run.mkdir()
    (run / "info.json").write_text(json.dumps({"attribute_tokens": False, "num_items": 9,
                                               "num_rows": 9, "num_scores": 2, "dtype": spec}))
    mm = np.memmap(run / "scores.bin", dtype=np.dtype(spec), mode="w+", shape=(9,))
    mm["score_0"][:] = 1.0
    mm["written_0"][:] = True  # query 1 never written: the run stopped after one batch
    mm.flush()
    del mm
    return ["diagnose", str(run)], ("scores.bin", "query 1", "interrupted")


@case("diagnose", "diagnose-chunk-rows-zero")
def _chunk_rows(d, kit):
    return ["diagnose", str(_scores(d)), "--chunk-rows", "0"], ("chunk_rows", "0")


@case("diagnose", "diagnose-n-energy-zero")
def _n_energy(d, kit):
    return ["diagnose", str(_scores(d)), "--n-energy", "0"], ("n_energy",)


@case("diagnose", "diagnose-compute-dtype-flag")
def _bad_choice(d, kit):
    return ["diagnose", str(_scores(d)), "--compute-dtype", "float8"], ("--compute-dtype",)


# ----------------------------------------------------------------------------------------
# aria-tda aggregate: segment maps, outputs
# ----------------------------------------------------------------------------------------
def _aggregate(d: Path, seg: Path | None, *extra: str, shape=(40, 6)) -> list[str]:
    argv = ["aggregate", str(_scores(d, shape=shape)), "--out", str(d / "out" / "track.npy")]
    return argv + (["--segments", str(seg)] if seg is not None else []) + list(extra)


@case("aggregate", "aggregate-transposed-vs-segment-map")
def _transposed(d, kit):
    seg = _segmap(d, pd.DataFrame({"track_id": _track_ids(40)}))
    return _aggregate(d, seg, shape=(6, 40)), ("looks transposed", "--transpose")


@case("aggregate", "aggregate-segmap-no-track-column")
def _no_col(d, kit):
    seg = _segmap(d, pd.DataFrame({"part": ["x"] * 40, "song": _track_ids(40)}))
    return _aggregate(d, seg), ("segments", "track_id", "'song'")


@case("aggregate", "aggregate-segmap-wrong-length")
def _wrong_len(d, kit):
    seg = _segmap(d, pd.DataFrame({"track_id": _track_ids(39)}))
    return _aggregate(d, seg), ("segments", "40", "39")


@case("aggregate", "aggregate-segmap-duplicate-segment-ids")
def _dup(d, kit):
    seg = _segmap(d, pd.DataFrame({"segment_id": [0] * 2 + list(range(2, 40)),
                                   "track_id": _track_ids(40)}))
    return _aggregate(d, seg), ("segments", "repeated")


@case("aggregate", "aggregate-segmap-nan-track-ids")
def _nan_ids(d, kit):
    ids: list[Any] = _track_ids(40)
    ids[5] = None
    seg = _segmap(d, pd.DataFrame({"track_id": ids}))
    return _aggregate(d, seg), ("segments", "missing")


@case("aggregate", "aggregate-segmap-unknown-format")
def _seg_format(d, kit):
    return _aggregate(d, _bytes(d, "map.xlsx", b"PK\x03\x04junk")), ("segments", "'.xlsx'")


@case("aggregate", "aggregate-segmap-corrupt-npy")
def _seg_npy(d, kit):
    p = _npy(d, np.array(_track_ids(40)), "map.npy")
    p.write_bytes(p.read_bytes()[:30])
    return _aggregate(d, p), ("segments", "map.npy")


@case("aggregate", "aggregate-segmap-2d-npy")
def _seg_2d(d, kit):
    return _aggregate(d, _npy(d, np.zeros((40, 2)), "map.npy")), ("segments", "map.npy")


@case("aggregate", "aggregate-out-zarr-is-a-file")
def _agg_out_file(d, kit):
    (d / "track.zarr").write_bytes(b"precious")
    argv = ["aggregate", str(_scores(d)), "--out", str(d / "track.zarr")]
    return argv, ("out", "track.zarr")


@case("aggregate", "aggregate-out-npy-is-a-folder")
def _agg_out_dir(d, kit):
    (d / "track.npy").mkdir()
    (d / "track.npy" / "keep.txt").write_text("keep me")
    argv = ["aggregate", str(_scores(d)), "--out", str(d / "track.npy")]
    return argv, ("out", "track.npy")


@case("aggregate", "aggregate-out-unknown-suffix")
def _agg_suffix(d, kit):
    return ["aggregate", str(_scores(d)), "--out", str(d / "out" / "t.csv")], ("t.csv",)


@case("aggregate", "aggregate-tracks-file-missing")
def _agg_tracks(d, kit):
    return _aggregate(d, None, "--tracks", str(d / "tracks.txt")), ("tracks", "tracks.txt")


@case("aggregate", "aggregate-nan-scores")
def _agg_nan(d, kit):
    a = np.ones((40, 6))
    a[0, 0] = np.nan
    argv = ["aggregate", str(_npy(d, a)), "--out", str(d / "out" / "t.npy")]
    return argv, ("scores", "nan", "row 0, column 0")


# ----------------------------------------------------------------------------------------
# aria-tda homogeneity: feature stores, groups, queries, outputs
# ----------------------------------------------------------------------------------------
def _homogeneity(d: Path, kit: Kit, *extra: str, store: str = "store",
                 out: Path | None = None, B: str = "5") -> list[str]:
    kit.study(d)
    return ["homogeneity", str(d / "scores.npy"), "--features", str(d / store), "--segments",
            str(d / "segments.csv"), "-B", B, "--bootstrap", "0", "--no-report",
            "--out", str(out or d / "out" / "res"), *extra]


@case("homogeneity", "homogeneity-missing-store")
def _hom_store(d, kit):
    return _homogeneity(d, kit, "-K", "5", store="nostore"), ("nostore",)


@case("homogeneity", "homogeneity-K-larger-than-pool")
def _hom_k(d, kit):
    return _homogeneity(d, kit, "-K", "5", "500"), ("500",)


@case("homogeneity", "homogeneity-K-report-not-in-K")
def _hom_kr(d, kit):
    return _homogeneity(d, kit, "-K", "5", "10", "--k-report", "7"), ("K_report", "7")


@case("homogeneity", "homogeneity-out-is-a-file")
def _hom_out(d, kit):
    (d / "res.txt").write_text("keep me")
    return _homogeneity(d, kit, "-K", "5", out=d / "res.txt"), ("output", "res.txt")


@case("homogeneity", "homogeneity-query-index-out-of-range")
def _hom_query(d, kit):
    argv = _homogeneity(d, kit, "-K", "5")
    pd.DataFrame({"query": [0, 1, 900], "genre": ["a", "b", "a"]}).to_csv(d / "q.csv",
                                                                          index=False)
    return [*argv, "--queries", str(d / "q.csv")], ("900",)


@case("homogeneity", "homogeneity-store-disagrees-with-manifest")
def _hom_manifest(d, kit):
    argv = _homogeneity(d, kit, "-K", "5")
    part = sorted((d / "store").rglob("part-*.parquet"))[0]
    data = part.read_bytes()
    part.write_bytes(data[: len(data) // 2])
    return argv, ("store",)


@case("homogeneity", "homogeneity-B-zero")
def _hom_b(d, kit):
    return _homogeneity(d, kit, "-K", "5", B="0"), ("B", "0")


@case("homogeneity", "homogeneity-scores-rows-vs-segment-map")
def _hom_rows(d, kit):
    argv = _homogeneity(d, kit, "-K", "5")
    np.save(d / "scores.npy", np.random.default_rng(1).normal(size=(7, N_QUERIES)))
    return argv, ("segments",)


@case("homogeneity", "homogeneity-scores-look-transposed")
def _hom_transposed(d, kit):
    argv = _homogeneity(d, kit, "-K", "5")
    s = np.random.default_rng(2).normal(size=(N_QUERIES, N_TRACKS * SEG_PER_TRACK))
    np.save(d / "scores_t.npy", s)
    argv[1] = str(d / "scores_t.npy")
    return argv, ("looks transposed", "--transpose", "segments.csv")


# ----------------------------------------------------------------------------------------
# aria-tda run: study files
# ----------------------------------------------------------------------------------------
def _run(d: Path, kit: Kit, text: str | None = None, *extra: str) -> list[str]:
    study = kit.study(d, text)
    return ["run", str(study), "--quiet", "--out", str(d / "out" / "res"), *extra]


@case("run", "run-missing-study")
def _run_missing(d, kit):
    return ["run", str(d / "nothere.toml")], ("nothere.toml",)


@case("run", "run-toml-syntax-error")
def _run_syntax(d, kit):
    return _run(d, kit, STUDY.replace("B = 10", "B = = 10")), ("study.toml", "TOML")


@case("run", "run-unknown-key")
def _run_unknown(d, kit):
    return _run(d, kit, STUDY.replace("B = 10", "B = 10\nBee = 3")), ("Bee",)


@case("run", "run-wrong-type")
def _run_type(d, kit):
    return _run(d, kit, STUDY.replace("B = 10", 'B = "ten"')), ("B", "'ten'")


@case("run", "run-missing-required-key")
def _run_required(d, kit):
    return _run(d, kit, STUDY.replace('scores = "scores.npy"\n', "")), ("scores",)


@case("run", "run-unknown-setting-key")
def _run_setting_key(d, kit):
    return _run(d, kit, STUDY + 'normalise = "rank"\n'), ("normalise",)


@case("run", "run-K-larger-than-pool")
def _run_k(d, kit):
    return _run(d, kit, STUDY.replace("K = [5, 10]", "K = [5, 1000]")), ("1000",)


@case("run", "run-K-report-not-in-K")
def _run_kr(d, kit):
    return _run(d, kit, STUDY.replace("K_report = 5", "K_report = 7")), ("K_report", "7")


@case("run", "run-missing-scores-file")
def _run_scores(d, kit):
    return _run(d, kit, STUDY.replace('"scores.npy"', '"gone.npy"')), ("gone.npy",)


@case("run", "run-scores-look-transposed")
def _run_transposed(d, kit):
    argv = _run(d, kit, STUDY.replace('"scores.npy"', '"scores_t.npy"'))
    s = np.random.default_rng(3).normal(size=(N_QUERIES, N_TRACKS * SEG_PER_TRACK))
    np.save(d / "scores_t.npy", s)
    return argv, ("setting 'M'", "looks transposed", "transpose = true")


@case("run", "run-query-index-out-of-range")
def _run_query(d, kit):
    argv = _run(d, kit)
    pd.DataFrame({"query": [0, 1, 4242], "genre": ["a", "b", "a"]}).to_csv(
        d / "queries.csv", index=False)
    return argv, ("4242",)


@case("run", "run-missing-feature-store")
def _run_store(d, kit):
    return _run(d, kit, STUDY.replace('feature_store = "store"', 'feature_store = "fs"')), (
        "fs",)


@case("run", "run-wrong-modality-store")
def _run_modality(d, kit):
    return _run(d, kit, STUDY.replace('"symbolic"', '"audio"')), ("a symbolic store",)


@case("run", "run-audio-store-in-symbolic-study")
def _run_audio_store(d, kit):
    from aria_tda.features.registry import features as registry_features
    from aria_tda.features.store import write_store

    argv = _run(d, kit, STUDY.replace('feature_store = "store"', 'feature_store = "astore"'))
    rng = np.random.default_rng(3)
    ids = [f"t{i:02d}" for i in range(N_TRACKS)]
    write_store(d / "astore", modality="audio", track_ids=ids,
                features={s.name: rng.normal(size=(N_TRACKS, s.dim)) if s.dim else
                          [[1, 5, 7]] * N_TRACKS for s in registry_features("audio")})
    return argv, ("feature_store", "a symbolic feature store", "an audio store")


@case("run", "run-unknown-modality")
def _run_bad_modality(d, kit):
    return _run(d, kit, STUDY.replace('"symbolic"', '"video"')), ("modality", "'video'")


@case("run", "run-store-parquet-vs-manifest")
def _run_parts(d, kit):
    argv = _run(d, kit)
    part = sorted((d / "store").rglob("part-*.parquet"))[0]
    part.unlink()
    return argv, ("store",)


@case("run", "run-out-is-a-file")
def _run_out(d, kit):
    argv = _run(d, kit)
    (d / "r.txt").write_text("keep me")
    return [*argv[:-1], str(d / "r.txt")], ("output", "r.txt")


@case("run", "run-duplicate-setting-names")
def _run_dup(d, kit):
    setting = STUDY[STUDY.index("[[setting]]"):]
    return _run(d, kit, STUDY + "\n" + setting), ("'M'",)


@case("run", "run-confound-not-a-column")
def _run_confound(d, kit):
    return _run(d, kit, STUDY.replace("report = false", 'report = false\nconfound = ["era"]')), (
        "era",)


# ----------------------------------------------------------------------------------------
# aria-tda features: extraction arguments, the errors listing, jSymbolic on one MIDI file
# ----------------------------------------------------------------------------------------
@case("features", "features-missing-input-folder")
def _feat_missing(d, kit):
    return ["features", "symbolic", str(d / "midis"), "--out", str(d / "out" / "fs")], (
        "midis",)


@case("features", "features-tracks-csv-without-path-column")
def _feat_csv(d, kit):
    _wav(d / "a.wav", np.zeros(100))
    pd.DataFrame({"file": [str(d / "a.wav")], "track_id": ["a"]}).to_csv(d / "tracks.csv",
                                                                         index=False)
    return ["features", "audio", str(d / "tracks.csv"), "--out", str(d / "out" / "fs")], (
        "'path'", "'file'")


@case("features", "features-workers-zero")
def _feat_workers(d, kit):
    _midi(d / "midis" / "a.mid")
    return ["features", "symbolic", str(d / "midis"), "--out", str(d / "out" / "fs"),
            "--workers", "0"], ("workers", "0")


@case("features", "features-unknown-backend")
def _feat_backend(d, kit):
    _wav(d / "a.wav", np.zeros(100))
    return ["features", "audio", str(d), "--out", str(d / "out" / "fs"), "--param",
            "beat_backend=nonsense"], ("beat_backend", "nonsense")


@case("features", "features-unknown-param")
def _feat_param(d, kit):
    _midi(d / "midis" / "a.mid")
    return ["features", "symbolic", str(d / "midis"), "--out", str(d / "out" / "fs"),
            "--param", "colour=1"], ("colour",)


@case("features", "features-param-not-key-value")
def _feat_kv(d, kit):
    _midi(d / "midis" / "a.mid")
    return ["features", "symbolic", str(d / "midis"), "--out", str(d / "out" / "fs"),
            "--param", "colour"], ("--param", "KEY=VALUE")


@case("features", "features-out-is-a-file")
def _feat_out(d, kit):
    _midi(d / "midis" / "a.mid")
    (d / "fs.txt").write_text("keep me")
    return ["features", "symbolic", str(d / "midis"), "--out", str(d / "fs.txt")], (
        "out", "fs.txt")


@case("features", "features-hop-alone")
def _feat_hop(d, kit):
    _midi(d / "midis" / "a.mid")
    return ["features", "symbolic", str(d / "midis"), "--out", str(d / "out" / "fs"),
            "--hop", "2"], ("--hop",)


@case("features", "features-audio-into-symbolic-store")
def _feat_modality(d, kit):
    kit.study(d)
    (d / "w").mkdir()
    _wav(d / "w" / "a.wav", np.zeros(100))
    return ["features", "audio", str(d / "w"), "--out", str(d / "store")], (
        "modality", "'symbolic'", "'audio'")


@case("features", "features-errors-not-a-store")
def _feat_errors(d, kit):
    (d / "stuff").mkdir()
    (d / "stuff" / "x.txt").write_text("x")
    return ["features", "errors", str(d / "stuff")], ("stuff",)


@case("features", "features-errors-missing-store")
def _feat_errors_missing(d, kit):
    return ["features", "errors", str(d / "nostore")], ("nostore",)


@case("features", "jsymbolic-not-midi-bytes")
def _js_bytes(d, kit):
    return ["features", "jsymbolic", str(_bytes(d, "song.mid", b"RIFF....WAVEfmt " * 8))], (
        "song.mid",)


@case("features", "jsymbolic-empty-file")
def _js_empty(d, kit):
    return ["features", "jsymbolic", str(_bytes(d, "empty.mid", b""))], ("empty.mid",)


@case("features", "jsymbolic-truncated-midi")
def _js_truncated(d, kit):
    header = b"MThd" + struct.pack(">IHHH", 6, 0, 1, 480)
    track = b"MTrk" + struct.pack(">I", 400) + b"\x00\x90\x3c\x40\x60\x80"
    return ["features", "jsymbolic", str(_bytes(d, "cut.mid", header + track))], ("cut.mid",)


@case("features", "jsymbolic-missing-file")
def _js_missing(d, kit):
    return ["features", "jsymbolic", str(d / "gone.mid")], ("gone.mid",)


# ----------------------------------------------------------------------------------------
# aria-tda report: result folders
# ----------------------------------------------------------------------------------------
@case("report", "report-not-a-results-folder")
def _rep_plain(d, kit):
    (d / "plain").mkdir()
    (d / "plain" / "notes.txt").write_text("hello")
    return ["report", str(d / "plain")], ("plain", "results")


@case("report", "report-missing-folder")
def _rep_missing(d, kit):
    return ["report", str(d / "nores")], ("nores",)


@case("report", "report-results-json-not-an-object")
def _rep_json_list(d, kit):
    res = kit.results_copy(d)
    (res / "results.json").write_text("[1, 2, 3]\n")
    return ["report", str(res), "--out", str(d / "out" / "r.html")], ("results.json",)


@case("report", "report-out-parent-is-a-file")
def _rep_parent(d, kit):
    res = kit.results_copy(d)
    (d / "page").write_text("keep me")
    return ["report", str(res), "--out", str(d / "page" / "r.html")], ("out", "page")


@case("report", "report-top-n-zero")
def _rep_top_n(d, kit):
    res = kit.results_copy(d)
    return ["report", str(res), "--out", str(d / "out" / "r.html"), "--top-n", "0"], (
        "top_n", "0")


@case("report", "report-corrupt-results-json")
def _rep_json(d, kit):
    res = kit.results_copy(d)
    (res / "results.json").write_text("{not json")
    return ["report", str(res), "--out", str(d / "out" / "r.html")], ("results.json",)


@case("report", "report-out-is-a-folder")
def _rep_out(d, kit):
    res = kit.results_copy(d)
    (d / "here").mkdir()
    (d / "here" / "notes.txt").write_text("keep me")
    return ["report", str(res), "--out", str(d / "here")], ("out", "here")


@case("report", "report-tables-dir-is-a-file")
def _rep_tables(d, kit):
    res = kit.results_copy(d)
    (d / "tables").write_text("keep me")
    return ["report", str(res), "--out", str(d / "out" / "r.html"), "--latex", "--tables-dir",
            str(d / "tables")], ("tables",)


@case("report", "report-k-not-in-results")
def _rep_k(d, kit):
    res = kit.results_copy(d)
    return ["report", str(res), "--out", str(d / "out" / "r.html"), "--k", "77"], ("77",)


# ----------------------------------------------------------------------------------------
# aria-tda sensitivity and aria-tda demo (the experiments package): bad flags only (their valid runs
# train models)
# ----------------------------------------------------------------------------------------
def _sweep(d: Path, kit: Kit, out: Path) -> list[str]:
    kit.study(d)
    np.save(d / "train.npy", np.zeros((4, 8), dtype=np.int64))
    return ["sensitivity", "--ensemble", str(d / "models"), "--train", str(d / "train.npy"),
            "--queries", str(d / "train.npy"), "--features", str(d / "store"), "--out", str(out)]


@case("sensitivity", "sensitivity-missing-ensemble")
def _sweep_ens(d, kit):
    return _sweep(d, kit, d / "out" / "res"), ("ensemble", "models")


@case("sensitivity", "sensitivity-out-is-a-file")
def _sweep_out(d, kit):
    (d / "res.txt").write_text("keep me")
    return _sweep(d, kit, d / "res.txt"), ("out", "res.txt")


@case("demo", "demo-unknown-preset")
def _demo_preset(d, kit):
    return ["demo", "--preset", "nonsense", "--out", str(d / "demo")], ("--preset", "nonsense")


@case("demo", "demo-out-is-a-file")
def _demo_out(d, kit):
    (d / "demo.txt").write_text("keep me")
    return ["demo", "--preset", "tiny", "--out", str(d / "demo.txt")], ("out", "demo.txt")


@case("demo", "demo-threads-zero")
def _demo_threads(d, kit):
    return ["demo", "--preset", "tiny", "--threads", "0", "--out", str(d / "demo")], (
        "threads",)


@case("demo", "demo-B-zero")
def _demo_b(d, kit):
    return ["demo", "--preset", "tiny", "-B", "0", "--out", str(d / "demo")], ("B",)


@case("demo", "demo-lds-seeds-zero")
def _demo_lds_seeds(d, kit):
    return ["demo", "--preset", "tiny", "--lds-seeds", "0", "--out", str(d / "demo")], (
        "lds_seeds",)


@case("demo", "demo-trak-k-beyond-the-ensemble")
def _demo_trak_k(d, kit):
    return ["demo", "--preset", "tiny", "--trak-k", "1", "9", "--out", str(d / "demo")], (
        "trak_k", "ensemble")


@case("demo", "demo-audio-refuses-trak-k")
def _demo_audio_trak_k(d, kit):
    return ["demo", "audio", "--preset", "tiny", "--trak-k", "1", "--out", str(d / "demo")], (
        "--trak-k", "symbolic")


@case("demo", "demo-unknown-device")
def _demo_device(d, kit):
    return ["demo", "--preset", "tiny", "--device", "tpu", "--out", str(d / "demo")], (
        "device", "'tpu'")


@case("demo", "demo-until-unknown-stage")
def _demo_until(d, kit):
    return ["demo", "--preset", "tiny", "--until", "report", "--out", str(d / "demo")], (
        "--until", "'report'")


@case("demo", "demo-audio-refuses-device")
def _demo_audio_device(d, kit):
    return ["demo", "audio", "--preset", "tiny", "--device", "cpu", "--out", str(d / "demo")], (
        "--device", "symbolic")


# ----------------------------------------------------------------------------------------
# the checks
# ----------------------------------------------------------------------------------------
def _snapshot(root: Path) -> dict[str, Any]:
    """Every path under ``root``: folders as None, files as (sha256, size, mtime_ns)."""
    out: dict[str, Any] = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_dir() and not p.is_symlink():
            out[rel] = None
        else:
            st = p.stat()
            out[rel] = (hashlib.sha256(p.read_bytes()).hexdigest(), st.st_size, st.st_mtime_ns)
    return out


def _run_main(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse: a bad flag
        return int(exc.code) if exc.code is not None else 0


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 40
    assert {command for command, _ in CASES.values()} == {
        "diagnose", "aggregate", "homogeneity", "run", "features", "report", "sensitivity", "demo"}


@pytest.mark.parametrize("case_id", list(CASES))
def test_bad_input_is_one_line_and_leaves_nothing(case_id, kit, tmp_path, capsys):
    command, build = CASES[case_id]
    d = tmp_path / "case"
    d.mkdir()
    argv, names = build(d, kit)
    before = _snapshot(tmp_path)
    capsys.readouterr()

    code = _run_main(argv)

    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert "Traceback" not in captured.err + captured.out
    assert len(lines) == 1, captured.err
    line = lines[0]
    assert re.match(rf"aria-tda {command}( \w+)?: error: \S", line), line
    for name in names:
        assert name in line, f"{name!r} not in {line!r}"
    assert code == 2, line
    after = _snapshot(tmp_path)
    assert not [p for p in after if ".tmp-" in p], sorted(after)
    changed = {k: (before.get(k, "absent"), after.get(k, "absent"))
               for k in set(before) | set(after) if before.get(k, 0) != after.get(k, 0)}
    assert not changed, changed


@pytest.mark.parametrize("case_id", ["diagnose-sparse-tensor", "run-wrong-type",
                                     "jsymbolic-not-midi-bytes", "demo-unknown-preset"])
def test_console_script_is_one_line(case_id, kit, tmp_path):
    """A few cases through a real process: the same line, exit status 2, no traceback."""
    _, build = CASES[case_id]
    argv, names = build(tmp_path, kit)
    proc = subprocess.run([sys.executable, "-m", "aria_tda.cli", *argv], capture_output=True,
                          text=True, timeout=120)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and all(n in lines[0] for n in names)


def _extract_bad_files(d: Path, modality: str, files: dict[str, bytes | None],
                       capsys: pytest.CaptureFixture[str]) -> None:
    """Bad files inside an input folder are recorded and skipped: status 0, listed, no traceback."""
    src = d / "in"
    src.mkdir()
    for name, data in files.items():
        if data is None and modality == "symbolic":
            _midi(src / name)
        elif data is None:
            _wav(src / name, 8000 * np.sin(np.linspace(0, 2000, 22050 * 3)))
        else:
            (src / name).write_bytes(data)
    before = {p: p.read_bytes() for p in src.iterdir()}
    assert main(["features", modality, str(src), "--out", str(d / "fs"), "--no-progress"]) == 0
    assert main(["features", "errors", str(d / "fs"), "--json"]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    bad = sorted(n for n, data in files.items() if data is not None)
    listed = captured.out[captured.out.index("["):]
    assert sorted(Path(r["path"]).name for r in json.loads(listed)) == bad
    assert {p: p.read_bytes() for p in src.iterdir()} == before


def test_bad_midi_files_in_a_folder_are_recorded_not_fatal(tmp_path, capsys):
    _extract_bad_files(tmp_path, "symbolic", {
        "good.mid": None, "text.mid": b"not a MIDI file\n" * 4, "empty.mid": b"",
        "cut.mid": b"MThd" + struct.pack(">IHHH", 6, 0, 1, 480) + b"MTrk\x00\x00\x01\x00\x00\x90",
    }, capsys)


@pytest.mark.slow
def test_bad_audio_files_in_a_folder_are_recorded_not_fatal(tmp_path, capsys):
    silent = tmp_path / "silent.wav"
    _wav(silent, np.zeros(22050 * 3))
    empty = tmp_path / "empty.wav"
    _wav(empty, np.zeros(0))
    _extract_bad_files(tmp_path, "audio", {
        "good.wav": None, "text.wav": b"RIFF but not really a wave file" * 8,
        "empty.wav": empty.read_bytes(), "silent.wav": silent.read_bytes(),
    }, capsys)
