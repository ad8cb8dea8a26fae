"""Score files laid out as bergson, Kronfluence and TRAK write them, read in place or refused.

The writers below follow each tool's own code (read from its source): bergson 0.2x's
``score/score_writer.py`` (``_score_struct_dtype`` + ``MemmapSequenceScoreWriter``), Kronfluence
1.0.1's ``score/pairwise.py`` + ``computer/score_computer.py`` (partition files, metadata,
``score_arguments.json``), TRAK 0.3.2's ``savers.py`` (``scores/<exp>.mmap``,
``experiments.json``). Matrices are tiny; every error is checked for one line and the names it
must carry.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from aria_tda.diagnostics import diagnose
from aria_tda.errors import DataError, FileFormatError
from aria_tda.scores import open_scores, save_scores
from aria_tda.scores.distributed import reopen
from aria_tda.scores.formats import sniff_format
from aria_tda.scores.formats.bergson import BergsonSource


# ----------------------------------------------------------------------------------------
# bergson
# ----------------------------------------------------------------------------------------
def bergson_struct(num_scores: int, score_dtype: str) -> tuple[dict, dict]:
    """bergson's ``_score_struct_dtype``: interleaved (score_i, written_i), power-of-2 pairs.

    ``score_dtype="bfloat16"`` is laid out as bergson does through ml_dtypes (2 bytes), stored
    here as uint16 bit patterns; the JSON names it ``"bfloat16"``.
    """
    np_dtype = np.dtype("<u2") if score_dtype == "bfloat16" else np.dtype(score_dtype)
    pair = np_dtype.itemsize + 1
    aligned = 1 << (pair - 1).bit_length()
    names, formats, offsets = [], [], []
    for i in range(num_scores):
        names += [f"score_{i}", f"written_{i}"]
        formats += [np_dtype, "bool"]
        offsets += [i * aligned, i * aligned + np_dtype.itemsize]
    itemsize = ((num_scores * aligned + 7) // 8) * 8
    spec = {"names": names, "formats": formats, "offsets": offsets, "itemsize": itemsize}
    json_formats = [score_dtype if f is np_dtype else f for f in formats]
    return spec, {**spec, "formats": json_formats}


def write_bergson(folder: Path, s: np.ndarray, *, score_dtype: str = "float32",
                  query_batch: int | None = None, stop_after: int | None = None,
                  skip: tuple[int, int] | None = None) -> Path:
    """Write ``s`` (train x queries) as ``bergson score`` does, in query batches.

    ``stop_after`` batches are written (an interrupted run); ``skip=(row, query)`` leaves one
    cell unwritten.
    """
    folder.mkdir(parents=True, exist_ok=True)
    n, t = s.shape
    spec, spec_json = bergson_struct(t, score_dtype)
    mm = np.memmap(folder / "scores.bin", dtype=np.dtype(spec), mode="w+", shape=(n,))
    (folder / "info.json").write_text(json.dumps({
        "attribute_tokens": False, "num_items": n, "num_rows": n, "num_scores": t,
        "dtype": spec_json}, indent=2))
    batch = query_batch or t
    for b, q0 in enumerate(range(0, t, batch)):
        if stop_after is not None and b >= stop_after:
            break
        for i in range(q0, min(t, q0 + batch)):  # MemmapSequenceScoreWriter.__call__
            col = s[:, i]
            if score_dtype == "bfloat16":
                col = (col.astype(np.float32).view(np.uint32) >> 16).astype("<u2")
            mm[f"score_{i}"][:] = col
            mm[f"written_{i}"][:] = True
    if skip is not None:
        mm[f"written_{skip[1]}"][skip[0]] = False
        mm[f"score_{skip[1]}"][skip[0]] = 0
    mm.flush()
    del mm
    return folder / "scores.bin"


def test_bergson_run_is_read_in_place(rng, tmp_path):
    s = rng.standard_normal((57, 6)).astype(np.float32)
    path = write_bergson(tmp_path / "run", s, query_batch=4)
    for given in (tmp_path / "run", path):
        src = open_scores(given)
        assert isinstance(src, BergsonSource) and src.format == "bergson"
        assert src.shape == (57, 6) and not src.transposed and src.path == path
        np.testing.assert_array_equal(src.to_numpy(), s)
    assert sniff_format(path) == "bergson"
    for rows in (1, 10, 57):
        got = np.concatenate([b.copy() for _, b in src.iter_chunks(rows)])
        np.testing.assert_array_equal(got, s)
    np.testing.assert_array_equal(open_scores(path, transpose=True).to_numpy(), s.T)
    np.testing.assert_array_equal(reopen(str(path), None, False).to_numpy(), s)  # Dask task
    d, ref = diagnose(tmp_path / "run", chunk_rows=16), diagnose(s, chunk_rows=16)
    assert (d.kappa, d.r1, d.p) == pytest.approx((ref.kappa, ref.r1, ref.p), rel=1e-12)
    # RUN/scores/ (MAGIC and other pipelines) and the run folder above it
    write_bergson(tmp_path / "run2" / "scores", s)
    np.testing.assert_array_equal(open_scores(tmp_path / "run2").to_numpy(), s)
    np.testing.assert_array_equal(open_scores(tmp_path / "run2" / "scores").to_numpy(), s)


def test_bergson_streams_row_blocks_never_the_whole_file(rng, tmp_path, monkeypatch):
    s = rng.standard_normal((90, 5)).astype(np.float32)
    src = open_scores(write_bergson(tmp_path / "run", s))
    seen = []
    real = BergsonSource._read_raw

    def spy(self, start, stop):
        seen.append(stop - start)
        return real(self, start, stop)

    monkeypatch.setattr(BergsonSource, "_read_raw", spy)
    for _ in src.iter_chunks(20, reuse_buffers=True):
        pass
    assert seen and max(seen) == 20 and sum(seen) == 90


@pytest.mark.parametrize("score_dtype", ["float16", "bfloat16", "float64"])
def test_bergson_score_dtypes(rng, tmp_path, score_dtype):
    s = rng.standard_normal((33, 7))
    path = write_bergson(tmp_path / "run", s, score_dtype=score_dtype)
    got = open_scores(path).to_numpy()
    if score_dtype == "bfloat16":
        want = ((s.astype(np.float32).view(np.uint32) >> 16) << 16).view(np.float32)
    else:
        want = s.astype(score_dtype).astype(got.dtype)
    np.testing.assert_array_equal(got, want)
    assert open_scores(path).block_dtype == (np.float64 if score_dtype == "float64" else np.float32)


def test_bergson_older_layout_without_num_rows(rng, tmp_path):
    """bergson 0.5 packed pairs at 6-byte steps and wrote no num_rows: offsets come from info."""
    s = rng.standard_normal((20, 3)).astype(np.float32)
    names, formats, offsets = [], [], []
    for i in range(3):
        names += [f"score_{i}", f"written_{i}"]
        formats += ["float32", "bool"]
        offsets += [i * 6, i * 6 + 4]
    spec = {"names": names, "formats": formats, "offsets": offsets, "itemsize": 24}
    (tmp_path / "info.json").write_text(json.dumps(
        {"num_items": 20, "num_scores": 3, "dtype": spec}))
    mm = np.memmap(tmp_path / "scores.bin", dtype=np.dtype(spec), mode="w+", shape=(20,))
    for i in range(3):
        mm[f"score_{i}"][:] = s[:, i]
        mm[f"written_{i}"][:] = True
    mm.flush()
    del mm
    np.testing.assert_array_equal(open_scores(tmp_path).to_numpy(), s)
    np.testing.assert_array_equal(open_scores(tmp_path / "scores.bin", transpose=True).to_numpy(),
                                  s.T)


def _one_line(exc: pytest.ExceptionInfo, *names: str) -> str:
    text = str(exc.value)
    assert "\n" not in text and "\x1b" not in text and len(text) < 600, text
    for name in names:
        assert name in text, (name, text)
    return text


def test_interrupted_bergson_run_is_refused_up_front(rng, tmp_path):
    s = rng.standard_normal((40, 8)).astype(np.float32)
    write_bergson(tmp_path / "run", s, query_batch=3, stop_after=2)  # queries 6, 7 unwritten
    with pytest.raises(DataError) as exc:
        open_scores(tmp_path / "run")
    _one_line(exc, "scores.bin", "training row 0", "query 6", "written_6", "interrupted")
    # the folder an unfinished run writes into, whatever its flags say
    write_bergson(tmp_path / "out.part", s)
    with pytest.raises(DataError) as exc:
        open_scores(tmp_path / "out.part")
    _one_line(exc, "out.part", "'out'", "interrupted")


def test_unwritten_cell_inside_is_refused_when_its_block_is_read(rng, tmp_path):
    s = rng.standard_normal((50, 4)).astype(np.float32)
    path = write_bergson(tmp_path / "run", s, skip=(23, 2))
    src = open_scores(path)  # first and last rows are whole: the cheap check passes
    with pytest.raises(DataError) as exc:
        src.to_numpy()
    _one_line(exc, "training row 23", "query 2", "interrupted")
    with pytest.raises(DataError, match="training row 23 for query 2"):
        diagnose(path, chunk_rows=8)
    with pytest.raises(DataError, match="training row 23 for query 2"):
        open_scores(path, transpose=True).to_numpy()  # the column path checks too
    # blocks before the bad one stream fine
    it = src.iter_chunks(10, prefetch=False)
    np.testing.assert_array_equal(next(it)[1], s[:10])


def test_bad_bergson_stores(rng, tmp_path):
    s = rng.standard_normal((30, 3)).astype(np.float32)
    path = write_bergson(tmp_path / "run", s)
    data = path.read_bytes()
    path.write_bytes(data[:-20])
    with pytest.raises(FileFormatError) as exc:
        open_scores(path)
    _one_line(exc, "scores.bin", "truncated", "30 records")
    path.write_bytes(data)
    info = json.loads((tmp_path / "run" / "info.json").read_text())
    (tmp_path / "run" / "info.json").write_text(json.dumps({**info, "attribute_tokens": True}))
    with pytest.raises(FileFormatError, match="per-token bergson store"):
        open_scores(path)
    (tmp_path / "run" / "info.json").write_text("{not json")
    with pytest.raises(FileFormatError, match=r"info\.json: not a readable bergson info\.json"):
        open_scores(path)
    (tmp_path / "lone.bin").write_bytes(b"\0" * 16)
    with pytest.raises(FileFormatError) as exc:
        open_scores(tmp_path / "lone.bin")
    _one_line(exc, "lone.bin", "info.json")
    with pytest.raises(FileFormatError, match="drop key"):
        open_scores(write_bergson(tmp_path / "ok", s), key="score_0")


def test_bergson_candidates_are_row_ids(rng, tmp_path):
    s = rng.standard_normal((12, 3)).astype(np.float32)
    path = write_bergson(tmp_path / "run", s)
    np.save(tmp_path / "run" / "candidates.npy", np.arange(100, 112))
    src = open_scores(path)
    assert src.row_ids.tolist() == [str(i) for i in range(100, 112)]
    assert "candidates.npy" in src.notes[0]
    np.save(tmp_path / "run" / "candidates.npy", np.arange(5))
    with pytest.raises(FileFormatError, match=r"candidates\.npy: expected 12 integer"):
        open_scores(path)


# ----------------------------------------------------------------------------------------
# Kronfluence
# ----------------------------------------------------------------------------------------
def write_safetensors(path: Path, tensors: dict[str, np.ndarray],
                      metadata: dict[str, str] | None = None) -> Path:
    """safetensors as ``safetensors.torch.save_file`` lays it out (header, then raw data)."""
    codes = {"<f4": "F32", "<f2": "F16", "<f8": "F64"}
    header: dict = {"__metadata__": metadata} if metadata else {}
    blobs, offset = [], 0
    for name, arr in tensors.items():
        raw = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": codes[arr.dtype.str], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(len(text).to_bytes(8, "little") + text + b"".join(blobs))
    return path


def score_args(data: int, module: int, *, per_module: bool = False,
               aggregate_train: bool = False) -> dict:
    """A subset of Kronfluence's ScoreArguments.to_dict() (what ARIA reads)."""
    return {"damping_factor": 1e-08, "data_partitions": data, "module_partitions": module,
            "compute_per_module_scores": per_module, "compute_per_token_scores": False,
            "aggregate_query_gradients": False, "aggregate_train_gradients": aggregate_train,
            "score_dtype": "torch.float32"}


def write_partitions(folder: Path, s: np.ndarray, data: int, module: int, rng, *,
                     per_module: bool = False, arguments_file: bool = True,
                     metadata: bool = True) -> dict[str, np.ndarray]:
    """``s`` (train x queries) written as Kronfluence's D x P partition files.

    Data partitions split the training examples into np.array_split bins (stored
    queries x training); module partitions each hold a share of the modules, summing to
    ``s``. Returns the per-module matrices (train x queries) when ``per_module``.
    """
    args = score_args(data, module, per_module=per_module)
    meta = {k: str(v) for k, v in args.items()} if metadata else None
    if arguments_file:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "score_arguments.json").write_text(json.dumps(args, indent=4))
    shares = [rng.standard_normal(s.shape).astype(np.float32) for _ in range(module - 1)]
    shares.append((s - sum(shares, np.zeros_like(s))).astype(np.float32))
    bins = np.array_split(np.arange(s.shape[0]), data)
    for i, rows in enumerate(bins):
        for j, share in enumerate(shares):
            block = np.ascontiguousarray(share[rows].T)  # queries x this partition's training
            key = f"model.fc{j}" if per_module else "all_modules"
            write_safetensors(
                folder / f"pairwise_scores_data_partition{i}_module_partition{j}.safetensors",
                {key: block}, meta)
    return {f"model.fc{j}": share for j, share in enumerate(shares)}


def test_kronfluence_partitions_are_assembled_whole(rng, tmp_path):
    s = rng.standard_normal((51, 6)).astype(np.float32)
    folder = tmp_path / "influence_results" / "mnist" / "scores_ekfac"
    write_partitions(folder, s, 3, 2, rng)
    one = folder / "pairwise_scores_data_partition1_module_partition0.safetensors"
    for given in (folder, one, folder.parent):
        src = open_scores(given)
        assert src.shape == (51, 6) and src.transposed and src.path == folder
        np.testing.assert_allclose(src.to_numpy(), s, rtol=1e-5, atol=1e-5)
        assert "3 data x 2 module partitions" in src.notes[0]
    for rows in (5, 51):
        got = np.concatenate([b.copy() for _, b in src.iter_chunks(rows)])
        np.testing.assert_allclose(got, s, rtol=1e-5, atol=1e-5)
    assert sniff_format(folder) == "safetensors"
    np.testing.assert_allclose(reopen(str(folder), None, True).to_numpy(), s, atol=1e-5)
    np.testing.assert_allclose(open_scores(folder, transpose=True).to_numpy(), s.T, atol=1e-5)
    d, ref = diagnose(folder), diagnose(s.astype(np.float64))
    assert (d.kappa, d.r1, d.p) == pytest.approx((ref.kappa, ref.r1, ref.p), rel=1e-5)
    # once Kronfluence has aggregated them, the whole file is what is read
    write_safetensors(folder / "pairwise_scores.safetensors", {"all_modules": s.T.copy()})
    src = open_scores(folder)
    assert src.path == folder / "pairwise_scores.safetensors" and not src.notes
    np.testing.assert_array_equal(src.to_numpy(), s)


def test_a_partition_without_the_rest_is_refused(rng, tmp_path):
    s = rng.standard_normal((20, 4)).astype(np.float32)
    folder = tmp_path / "scores_x"
    write_partitions(folder, s, 2, 2, rng)
    (folder / "pairwise_scores_data_partition1_module_partition0.safetensors").unlink()
    one = folder / "pairwise_scores_data_partition0_module_partition0.safetensors"
    for given in (one, folder):
        with pytest.raises(FileFormatError) as exc:
            open_scores(given)
        text = _one_line(exc, "not a whole matrix", "2 data x 2 module", "score_arguments.json",
                         "lacks data1/module0", "data0/module0, data0/module1, data1/module1")
        assert "compute_pairwise_scores" in text
    with pytest.raises(FileFormatError) as exc:
        open_scores(one)
    assert str(exc.value).startswith(
        "pairwise_scores_data_partition0_module_partition0.safetensors: a Kronfluence partition")
    # without score_arguments.json the grid comes from the files' metadata
    (folder / "score_arguments.json").unlink()
    with pytest.raises(FileFormatError, match=r"metadata of .*lacks data1/module0"):
        open_scores(one)


def test_partition_grid_without_arguments_or_metadata_is_inferred(rng, tmp_path):
    s = rng.standard_normal((9, 3)).astype(np.float32)
    write_partitions(tmp_path / "scores_a", s, 3, 1, rng, arguments_file=False, metadata=False)
    src = open_scores(tmp_path / "scores_a")
    np.testing.assert_allclose(src.to_numpy(), s, atol=1e-6)
    (tmp_path / "scores_a" / "pairwise_scores_data_partition1_module_partition0.safetensors"
     ).unlink()
    with pytest.raises(FileFormatError, match=r"files present.*lacks data1/module0"):
        open_scores(tmp_path / "scores_a")


def test_per_module_partitions_name_the_summed_keys(rng, tmp_path):
    s = rng.standard_normal((14, 5)).astype(np.float32)
    folder = tmp_path / "scores_pm"
    modules = write_partitions(folder, s, 2, 2, rng, per_module=True)
    src = open_scores(folder)
    np.testing.assert_allclose(src.to_numpy(), s, atol=1e-5)
    assert src.summed_keys == ("model.fc0", "model.fc1")
    assert any("model.fc0, model.fc1" in n for n in src.notes)
    prov = src.provenance()
    assert prov["summed_keys"] == ["model.fc0", "model.fc1"] and prov["format"] == "safetensors"
    one = open_scores(folder, key="model.fc1")
    np.testing.assert_allclose(one.to_numpy(), modules["model.fc1"], atol=1e-6)
    assert one.summed_keys is None


def test_summed_per_module_keys_of_one_file(rng, tmp_path):
    parts = {f"layer{i}": rng.standard_normal((4, 11)).astype(np.float32) for i in (1, 2, 3)}
    path = write_safetensors(tmp_path / "pairwise_scores.safetensors", parts)
    src = open_scores(path)
    assert src.summed_keys == ("layer1", "layer2", "layer3")
    assert src.notes == (
        "no 'all_modules' tensor: the scores are the sum of the 3 per-module tensors layer1, "
        "layer2, layer3 (Kronfluence per-module scores; --key NAME reads one module)",)
    assert src.provenance()["notes"] == list(src.notes)
    assert open_scores(path, key="layer2").summed_keys is None
    whole = write_safetensors(tmp_path / "w.safetensors", {"all_modules": parts["layer1"]})
    assert open_scores(whole).summed_keys is None and open_scores(whole).notes == ()


def test_aggregated_train_gradients_partitions_are_summed(rng, tmp_path):
    s = rng.standard_normal((1, 4)).astype(np.float32)  # one summed training "row"
    folder = tmp_path / "scores_agg"
    folder.mkdir()
    (folder / "score_arguments.json").write_text(
        json.dumps(score_args(2, 1, aggregate_train=True)))
    halves = [rng.standard_normal(s.shape).astype(np.float32)]
    halves.append(s - halves[0])
    for i, h in enumerate(halves):
        write_safetensors(
            folder / f"pairwise_scores_data_partition{i}_module_partition0.safetensors",
            {"all_modules": np.ascontiguousarray(h.T)})
    src = open_scores(folder)
    np.testing.assert_allclose(src.to_numpy(), s, atol=1e-6)
    assert "summed (aggregate_train_gradients)" in src.notes[0]


# ----------------------------------------------------------------------------------------
# folders: TRAK save folders, Kronfluence analyses, anything else
# ----------------------------------------------------------------------------------------
def write_trak(save_dir: Path, experiments: dict[str, np.ndarray], *,
               finalized: bool = True) -> None:
    """A TRAK save folder: model-id folders of intermediates, scores/<exp>.mmap, experiments."""
    (save_dir / "0").mkdir(parents=True)
    for name in ("grads.mmap", "out_to_loss.mmap", "features.mmap", "_is_featurized.mmap"):
        np.lib.format.open_memmap(save_dir / "0" / name, mode="w+", dtype=np.float16,
                                  shape=(3, 2)).flush()
    (save_dir / "scores").mkdir()
    record = {}
    for exp, s in experiments.items():
        mm = np.lib.format.open_memmap(save_dir / "scores" / f"{exp}.mmap", mode="w+",
                                       dtype=np.float16, shape=s.shape)
        if finalized:
            mm[:] = s
        mm.flush()
        del mm
        record[exp] = {"num_targets": s.shape[1],
                       "scores_path": str(save_dir / "scores" / f"{exp}.mmap"),
                       "scores_finalized": int(finalized)}
    (save_dir / "experiments.json").write_text(json.dumps(record))
    (save_dir / "metadata.json").write_text(json.dumps({"JL dimension": 2048}))


def test_trak_save_folder(rng, tmp_path):
    s = rng.standard_normal((25, 4)).astype(np.float16)
    write_trak(tmp_path / "trak", {"quickstart": s})
    src = open_scores(tmp_path / "trak")
    assert src.path == tmp_path / "trak" / "scores" / "quickstart.mmap" and src.format == "npy"
    np.testing.assert_array_equal(src.to_numpy(), s.astype(np.float32))
    np.testing.assert_array_equal(open_scores(tmp_path / "trak" / "scores").to_numpy(),
                                  s.astype(np.float32))
    write_trak(tmp_path / "two", {"a": s, "b": s})
    with pytest.raises(FileFormatError) as exc:
        open_scores(tmp_path / "two")
    _one_line(exc, "two: holds 2 score matrices", "scores/a.mmap, scores/b.mmap",
              "pass the one")
    write_trak(tmp_path / "unfinished", {"exp": s}, finalized=False)
    with pytest.raises(DataError) as exc:
        open_scores(tmp_path / "unfinished")
    _one_line(exc, "exp.mmap", "never finalized", "finalize_scores(exp_name='exp')")


def test_kronfluence_analysis_and_output_folders(rng, tmp_path):
    s = rng.standard_normal((15, 3)).astype(np.float32)
    analysis = tmp_path / "influence_results" / "mnist"
    write_safetensors(analysis / "factors_ekfac" / "activation_covariance.safetensors",
                      {"fc1": np.eye(3, dtype=np.float32)})
    write_safetensors(analysis / "scores_ekfac" / "pairwise_scores.safetensors",
                      {"all_modules": s.T.copy()})
    write_safetensors(analysis / "scores_ekfac" / "self_scores.safetensors",
                      {"all_modules": np.ones(15, np.float32)})
    for given in (analysis, analysis.parent, analysis / "scores_ekfac"):
        np.testing.assert_array_equal(open_scores(given).to_numpy(), s)
    write_partitions(analysis / "scores_ekfac_half", s, 2, 1, rng)
    with pytest.raises(FileFormatError) as exc:
        open_scores(analysis)
    _one_line(exc, "holds 2 score matrices",
              "scores_ekfac/pairwise_scores.safetensors, scores_ekfac_half/")


def test_any_folder_with_one_score_file(rng, tmp_path):
    s = rng.standard_normal((10, 3))
    save_scores(s, tmp_path / "one" / "s.npy", row_ids=[f"r{i}" for i in range(10)])
    src = open_scores(tmp_path / "one")  # the row-ids side file and manifest are not candidates
    np.testing.assert_array_equal(src.to_numpy(), s)
    assert src.row_ids[3] == "r3"
    (tmp_path / "many").mkdir()
    for i in range(13):
        np.save(tmp_path / "many" / f"m{i:02d}.npy", s)
    with pytest.raises(FileFormatError) as exc:
        open_scores(tmp_path / "many")
    text = _one_line(exc, "holds 13 score matrices", "m00.npy", "m09.npy", "and 3 more")
    assert "m10.npy" not in text
    (tmp_path / "none").mkdir()
    (tmp_path / "none" / "notes.txt").write_text("x")
    with pytest.raises(FileFormatError) as exc:
        open_scores(tmp_path / "none")
    _one_line(exc, "none: a folder that is not a zarr store and holds no score matrix",
              "scores.bin", "pairwise_scores.safetensors", "scores/<experiment>.mmap")


# ----------------------------------------------------------------------------------------
# the files the peer libraries wrote themselves (tests/data/peer, when present)
# ----------------------------------------------------------------------------------------
PEER = Path(__file__).resolve().parents[1] / "data" / "peer"


def _peer(*parts: str) -> Path:
    path = PEER.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"no peer fixture {path} (scripts/peer_fixtures/generate.py writes it)")
    return path


def test_kronfluence_wrote_partitions_that_assemble_to_its_own_aggregate():
    mlp = _peer("kronfluence", "healthy", "mlp")
    whole = open_scores(_peer("kronfluence", "healthy", "mlp", "scores_ekfac")).to_numpy()
    parts = open_scores(_peer("kronfluence", "healthy", "mlp", "scores_ekfac_partitioned"))
    assert "Kronfluence partition files" in parts.notes[0]
    # Kronfluence's own aggregate is a float32 sum; ARIA sums module partitions in float64, so
    # the two agree to float32 rounding of each entry
    got = parts.to_numpy()
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, whole, rtol=2e-7, atol=2e-7 * float(np.abs(whole).max()))
    per_module = open_scores(mlp / "scores_ekfac_per_module")
    assert per_module.summed_keys is not None and len(per_module.summed_keys) >= 2
    scale = float(np.abs(whole).max())
    np.testing.assert_allclose(per_module.to_numpy(), whole, rtol=1e-5, atol=1e-6 * scale)
    with pytest.raises(FileFormatError, match=r"holds \d+ score matrices"):
        open_scores(mlp)


def test_bergson_wrote_stores_read_whole_or_refused():
    src = open_scores(_peer("bergson", "healthy_fp32"))
    assert src.format == "bergson" and src.shape[0] > src.shape[1]
    assert np.isfinite(src.to_numpy()).all()
    with pytest.raises(DataError, match="interrupted"):
        open_scores(_peer("bergson", "healthy_fp16_interrupted"))
