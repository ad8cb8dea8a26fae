"""Headers that lie, in real child processes: ``aria-tda diagnose FILE`` on crafted files.

Every reader distrusts its header (issue 38, items 2 and 5). Each class of lie is built from a
real peer-library file (``tests/data/peer/``) with its header corrupted, for each format that
has such a field: a header describing fewer or more rows than the file holds, negative numbers,
numbers written as text, huge numbers, nested lists, repeated keys, duplicated, missing or
overlapping parts, and files of thousands of tensors or partitions read under a small limit of
open files. Each file must be refused in a few seconds (a hang fails: the child runs under a
timeout, each file under an alarm) with exit status 2 and one error line naming the field,
never a traceback.

The issue's own examples each run ``aria-tda diagnose`` in a process of their own; the wider
corpus of each format runs in one child process per format, which calls the CLI's ``main`` once
per file (the same dispatcher, exit status and one-line error as the console script) — a few
seconds of interpreter start-up per format rather than per file.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from headerlib import (
    KRON,
    PART,
    PEER,
    bergson_run,
    few_files_cli,
    kron_file,
    npy_with,
    partitions,
    put,
    refused,
    refused_all,
    set_args,
    set_entry,
    st_parts,
    st_tensors,
    st_write,
)


# ----------------------------------------------------------------------------------------
# the examples, each in a process of its own
# ----------------------------------------------------------------------------------------
def test_bergson_info_claiming_fewer_rows_than_the_file_holds(tmp_path):
    """It was read silently: 500 of the file's 600 rows."""
    refused(bergson_run(tmp_path, put("num_rows", 500)), "info.json: num_rows = 500",
            "288000 bytes: 600 records")


def test_bergson_negative_offset_and_text_numbers(tmp_path):
    """They crashed with IndexError / ValueError tracebacks."""
    refused(bergson_run(tmp_path / "a", put("dtype", "offsets", [-4, *range(4, 480, 4)])),
            "dtype.offsets[0] = -4")
    refused(bergson_run(tmp_path / "b", put("num_rows", "600")), "num_rows = '600'")


def test_bergson_absurd_num_scores_is_refused_at_once(tmp_path):
    """It hung (a loop over num_scores)."""
    refused(bergson_run(tmp_path, put("num_scores", 10**12)), "num_scores = 1000000000000")


def test_kronfluence_duplicated_partition(tmp_path):
    """It was accepted."""
    folder = partitions(tmp_path)
    shutil.copy(folder / PART.format(0, 1), folder / PART.format(1, 1))
    refused(folder, "holds the same bytes as", PART.format(0, 1))


def test_kronfluence_absurd_partition_grid_is_refused_at_once(tmp_path):
    """It hung (a list of every cell of the grid)."""
    folder = partitions(tmp_path)
    set_args(folder, data_partitions=10**12, module_partitions=10**12)
    refused(folder, "data_partitions = 1000000000000", "module_partitions = 1000000000000")


def test_safetensors_negative_and_text_offsets_and_shapes(tmp_path):
    """Negative offsets were accepted, text ones crashed, a negative shape was "-4 columns"."""
    refused(kron_file(tmp_path / "a", set_entry("data_offsets", [-4, 143996])),
            "data_offsets = [-4, 143996]")
    refused(kron_file(tmp_path / "b", set_entry("data_offsets", ["0", 144000])),
            "data_offsets = ['0', 144000]")
    line = refused(kron_file(tmp_path / "c", set_entry("shape", [600, -4])), "shape = [600, -4]")
    assert "columns" not in line


def test_fifteen_hundred_per_module_tensors_under_a_small_open_file_limit(tmp_path):
    """Kronfluence per-module scores of 1,500 modules ("Too many open files"): summed one
    tensor at a time, under a limit of 64 open files."""
    rng = np.random.default_rng(38)
    parts = {f"model.layers.{k}.mlp": rng.standard_normal((6, 40)) for k in range(1500)}
    path = st_tensors(tmp_path / "scores_pm" / "pairwise_scores.safetensors", parts)
    proc = few_files_cli(["diagnose", path, "--json"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    from aria_tda.diagnostics import diagnose

    want = diagnose(sum(np.float32(p).astype(np.float64) for p in parts.values()).T)
    got = json.loads(proc.stdout)
    assert (got["kappa"], got["r1"]) == pytest.approx((want.kappa, want.r1), rel=1e-9)


def test_thousands_of_partitions_under_a_small_open_file_limit(tmp_path):
    """1 data x 1,200 module partitions: assembled without holding them all open."""
    folder = tmp_path / "scores_many"
    folder.mkdir()
    n = 1200
    (folder / "score_arguments.json").write_text(
        json.dumps({"data_partitions": 1, "module_partitions": n}))
    rng = np.random.default_rng(3)
    total = np.zeros((5, 30))
    for j in range(n):
        part = rng.standard_normal((5, 30)).astype(np.float32)
        total += part
        st_tensors(folder / PART.format(0, j), {"all_modules": part})
    proc = few_files_cli(["diagnose", folder, "--json"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    from aria_tda.diagnostics import diagnose

    want = diagnose(total.T)
    got = json.loads(proc.stdout)
    assert (got["kappa"], got["r1"]) == pytest.approx((want.kappa, want.r1), rel=1e-6)


# ----------------------------------------------------------------------------------------
# safetensors: every field, one child
# ----------------------------------------------------------------------------------------
SAFETENSORS_LIES: dict[str, tuple[Callable[[dict, bytes], tuple[dict, bytes]], list[str]]] = {
    "offset-nested": (set_entry("data_offsets", [[0], [144000]]),
                      ["data_offsets = [[0], [144000]]"]),
    "offset-huge": (set_entry("data_offsets", [0, 10**30]),
                    ["truncated", "data_offsets = [0, 1" + "0" * 30]),
    "offset-three": (set_entry("data_offsets", [0, 72000, 144000]),
                     ["data_offsets = [0, 72000, 144000]", "a list of 2"]),
    "shape-text": (set_entry("shape", ["60", 600]), ["shape = ['60', 600]"]),
    "shape-huge": (set_entry("shape", [10**12, 600]),
                   ["data_offsets = [0, 144000]", "[1000000000000, 600]"]),
    "shape-fewer-rows": (set_entry("shape", [30, 600]), ["data_offsets = [0, 144000]",
                                                         "72000 bytes"]),
    "shape-float": (set_entry("shape", [60.0, 600]), ["shape = [60.0, 600]"]),
    "dtype-unknown": (set_entry("dtype", "F33"), ["dtype = 'F33'"]),
    "dtype-list": (set_entry("dtype", ["F32"]), ["dtype = ['F32']"]),
    "entry-extra-key": (set_entry("offsets", [0, 1]), ["entry = ['data_offsets', 'dtype'"]),
    "metadata-number": (lambda h, d: ({**h, "__metadata__": 5}, d), ["__metadata__ = 5"]),
    "metadata-not-text": (lambda h, d: ({**h, "__metadata__": {"a": 1}}, d),
                          ["__metadata__ = {'a': 1}"]),
    "data-longer": (lambda h, d: (h, d + b"\0" * 96),
                    ["data_offsets = [0, 144000]", "96 after the last"]),
    "data-shorter": (lambda h, d: (h, d[:-96]), ["truncated", "data_offsets = [0, 144000]"]),
}


def test_safetensors_header_lies(tmp_path):
    cases = {case: (kron_file(tmp_path / case, edit), needles)
             for case, (edit, needles) in SAFETENSORS_LIES.items()}
    header, data = st_parts(KRON / "scores_ekfac" / "pairwise_scores.safetensors")
    for length, needle in ((2**63, "header length = 9223372036854775808"),
                           (2**20, "header length = 1048576"), (1, "header length = 1"),
                           (40, "not a readable safetensors file")):
        path = st_write(tmp_path / f"length{length}" / "s.safetensors", header, data,
                        length=length)
        cases[f"length-{length}"] = (path, [needle])
    entry = json.dumps(header["all_modules"]).encode()
    raw_headers = {
        "key-repeated": (b'{"all_modules": ' + entry + b', "all_modules": ' + entry + b"}",
                         "'all_modules' appears twice"),
        "deep-nesting": (b"[" * 100_000 + b"]" * 100_000, "nested too deep"),
        "array": (b"[1, 2]", "got an array"),
        "garbage": (bytes(range(256)) * 2, "not a readable safetensors"),
    }
    for case, (raw, needle) in raw_headers.items():
        cases[case] = (st_write(tmp_path / case / "s.safetensors", raw, data), [needle])
    per_module, pm_data = st_parts(KRON / "scores_ekfac_per_module" / "pairwise_scores.safetensors")
    overlap = json.loads(json.dumps(per_module))
    overlap["fc2"]["data_offsets"] = [0, 144000]  # fc1's bytes, read twice
    cases["overlap"] = (st_write(tmp_path / "overlap" / "s.safetensors", overlap,
                                 pm_data[:144000]),
                        ["['fc2']: data_offsets = [0, 144000]", "not overlapping it"])
    gap = json.loads(json.dumps(per_module))
    gap["fc2"]["data_offsets"] = [144400, 288400]
    cases["gap"] = (st_write(tmp_path / "gap" / "s.safetensors", gap, pm_data + b"\0" * 400),
                    ["['fc2']: data_offsets = [144400, 288400]", "leaving bytes no tensor"])
    refused_all(cases)


# ----------------------------------------------------------------------------------------
# bergson info.json: every field, one child
# ----------------------------------------------------------------------------------------
FIELDS = [f"{k}_{j}" for j in range(60) for k in ("score", "written")]
BERGSON_LIES: dict[str, tuple[Callable[[dict], None], list[str]]] = {
    "rows-more": (put("num_rows", 700), ["truncated", "700 records of 480 bytes"]),
    "rows-negative": (put("num_rows", -600), ["num_rows = -600"]),
    "rows-float": (put("num_rows", 600.0), ["num_rows = 600.0"]),
    "rows-bool": (put("num_rows", True), ["num_rows = True"]),
    "rows-nested": (put("num_rows", [[600]]), ["num_rows = [[600]]"]),
    "rows-huge": (put("num_rows", 10**30), ["truncated", "num_rows x dtype.itemsize"]),
    "items-text": (put("num_items", "600"), ["num_items = '600'"]),
    "scores-fewer": (put("num_scores", 59), ["num_scores = 59", "120 fields"]),
    "scores-text": (put("num_scores", "60"), ["num_scores = '60'"]),
    "offset-text": (put("dtype", "offsets", [0, 4, "8", *range(12, 480, 4)]),
                    ["dtype.offsets[2] = '8'"]),
    "offset-overlap": (put("dtype", "offsets", [0, 4, 2, *range(12, 480, 4)]),
                       ["dtype.offsets[2] = 2", "overlap"]),
    "offset-huge": (put("dtype", "offsets", [10**20, *range(4, 480, 4)]),
                    ["dtype.offsets[0] = 1" + "0" * 20]),
    "offsets-short": (put("dtype", "offsets", [0, 4]), ["dtype.offsets holds 2 entries"]),
    "itemsize-text": (put("dtype", "itemsize", "480"), ["dtype.itemsize = '480'"]),
    "itemsize-huge": (put("dtype", "itemsize", 10**15), ["truncated", "dtype.itemsize"]),
    "itemsize-zero": (put("dtype", "itemsize", 0), ["dtype.itemsize = 0"]),
    "itemsize-smaller": (put("dtype", "itemsize", 240), ["dtype.offsets[60] = 240"]),
    "format-int": (put("dtype", "formats", ["int8", *["bool", "float32"] * 59, "bool"]),
                   ["dtype.formats[0] = 'int8'"]),
    "format-nested": (put("dtype", "formats", [["float32"], *["bool", "float32"] * 59, "bool"]),
                      ["dtype.formats[0] = ['float32']"]),
    "format-flag": (put("dtype", "formats", ["float32", "float32", *["float32", "bool"] * 59]),
                    ["dtype.formats[1] = 'float32'", "bool"]),
    "format-mixed": (put("dtype", "formats", [*["float32", "bool"] * 59, "float16", "bool"]),
                     ["dtype.formats[118] = 'float16'", "the format of score_0"]),
    "name-repeated": (put("dtype", "names", ["score_0", "written_0", "score_0", *FIELDS[3:]]),
                      ["dtype.names[2] = 'score_0'"]),
    "name-beyond": (put("dtype", "names", [*FIELDS[:-1], "written_60"]),
                    ["dtype.names[119] = 'written_60'"]),
    "names-number": (put("dtype", "names", 5), ["dtype.names = 5"]),
    "dtype-text": (put("dtype", "float32"), ["dtype = 'float32'"]),
    "tokens-text": (put("attribute_tokens", "false"), ["attribute_tokens = 'false'"]),
}


def test_bergson_info_lies(tmp_path):
    cases = {case: (bergson_run(tmp_path / case, edit), needles)
             for case, (edit, needles) in BERGSON_LIES.items()}
    texts = {
        "key-repeated": (lambda t: t.replace('"num_rows": 600', '"num_rows": 600, "num_rows": 9'),
                         "'num_rows' appears twice"),
        "deep-nesting": (lambda t: "[" * 100_000 + "]" * 100_000, "nested too deep"),
        "array": (lambda t: "[1, 2]", "got an array"),
        "garbage": (lambda t: "\x00\xff garbage", "not a readable bergson info.json"),
    }
    for case, (text, needle) in texts.items():
        cases[case] = (bergson_run(tmp_path / case, text=text), [needle])
    path = bergson_run(tmp_path / "candidates-huge")
    npy_with(path.parent / "candidates.npy", (10**12,), descr="<i8", body=np.arange(600).tobytes())
    cases["candidates-huge"] = (path, ["candidates.npy: expected 600 integer", "(1000000000000,)"])
    path = bergson_run(tmp_path / "candidates-negative")
    np.save(path.parent / "candidates.npy", np.arange(-1, 599))
    cases["candidates-negative"] = (path, ["candidates.npy: [0] = -1"])
    refused_all(cases)


# ----------------------------------------------------------------------------------------
# Kronfluence partitions: every field, one child
# ----------------------------------------------------------------------------------------
GRID_LIES: dict[str, tuple[dict, list[str]]] = {
    "data-huge": ({"data_partitions": 10**12}, ["data_partitions = 1000000000000",
                                                "lacks data2/module0", "and 1999999999986 more"]),
    "data-text": ({"data_partitions": "2"}, ["data_partitions = '2'"]),
    "data-float": ({"data_partitions": 2.0}, ["data_partitions = 2.0"]),
    "data-null": ({"data_partitions": None}, ["data_partitions = None"]),
    "module-zero": ({"module_partitions": 0}, ["module_partitions = 0"]),
    "module-negative": ({"module_partitions": -2}, ["module_partitions = -2"]),
    "module-bool": ({"module_partitions": True}, ["module_partitions = True"]),
    "module-list": ({"module_partitions": [2]}, ["module_partitions = [2]"]),
    "flag-text": ({"aggregate_train_gradients": "false"},
                  ["aggregate_train_gradients = 'false'"]),
    "grid-smaller": ({"data_partitions": 1}, ["has unexpected data1/module0"]),
}


def test_partition_lies(tmp_path):
    cases: dict[str, tuple[Path, list[str]]] = {}
    for case, (values, needles) in GRID_LIES.items():
        folder = partitions(tmp_path / case)
        set_args(folder, **values)
        cases[case] = (folder, needles)

    folder = partitions(tmp_path / "metadata-huge")
    (folder / "score_arguments.json").unlink()
    first = folder / PART.format(0, 0)
    header, data = st_parts(first)
    header["__metadata__"]["data_partitions"] = "99999999999"
    st_write(first, header, data)
    cases["metadata-huge"] = (folder, ["data_partitions = 99999999999", "metadata of",
                                       "lacks data2/module0"])
    folder = partitions(tmp_path / "metadata-float")
    (folder / "score_arguments.json").unlink()
    header["__metadata__"]["data_partitions"] = "2.5"
    st_write(folder / PART.format(0, 0), header, data)
    cases["metadata-float"] = (folder, ["data_partitions = '2.5'"])

    folder = partitions(tmp_path / "arguments-array")
    (folder / "score_arguments.json").write_text("[2, 2]")
    cases["arguments-array"] = (folder, ["score_arguments.json: expected", "got an array"])

    folder = partitions(tmp_path / "name-duplicate")
    shutil.copy(folder / PART.format(0, 0), folder / PART.format("00", 0))
    cases["name-duplicate"] = (folder, ["are both data partition 0, module partition 0"])
    folder = partitions(tmp_path / "link")
    (folder / PART.format(1, 0)).unlink()
    (folder / PART.format(1, 0)).symlink_to(folder / PART.format(0, 0))
    cases["link"] = (folder, ["holds the same bytes as", PART.format(0, 0)])
    folder = partitions(tmp_path / "missing")
    (folder / PART.format(1, 1)).unlink()
    cases["missing"] = (folder, ["lacks data1/module1"])
    folder = partitions(tmp_path / "index-digits")
    shutil.copy(folder / PART.format(0, 0), folder / PART.format("9" * 40, 0))
    cases["index-digits"] = (folder, ["partition index"])
    folder = partitions(tmp_path / "foreign")  # data partition 1 from a run of 400 examples
    rng = np.random.default_rng(1)
    for j in range(2):
        st_tensors(folder / PART.format(1, j), {"all_modules": rng.standard_normal((60, 200))})
    cases["foreign"] = (folder, ["data partitions hold [300, 200] training examples: "
                                 "expected [250, 250]"])
    folder = tmp_path / "module-twice"
    folder.mkdir()
    (folder / "score_arguments.json").write_text(json.dumps(
        {"data_partitions": 1, "module_partitions": 2, "compute_per_module_scores": True}))
    st_tensors(folder / PART.format(0, 0), {"fc1": rng.standard_normal((6, 30)),
                                            "fc2": rng.standard_normal((6, 30))})
    st_tensors(folder / PART.format(0, 1), {"fc2": rng.standard_normal((6, 30)),
                                            "fc3": rng.standard_normal((6, 30))})
    cases["module-twice"] = (folder, ["tensor 'fc2' is in module partitions 0 and 1"])
    refused_all(cases)


# ----------------------------------------------------------------------------------------
# .npy, TRAK's .mmap, .npz, zarr, torch: one child
# ----------------------------------------------------------------------------------------
NPY_LIES: dict[str, tuple[tuple, list[str]]] = {
    "rows-negative": ((-40, 6), ["shape = [-40, 6]"]),
    "cols-negative": ((40, -6), ["shape = [40, -6]"]),
    "rows-bool": ((True, 6), ["shape = [True, 6]"]),
    "rows-fewer": ((20, 6), ["shape = (20, 6)", "480 bytes", "holds 960 (the header describes"]),
    "rows-more": ((50, 6), ["truncated", "shape (50, 6)"]),
    "rows-huge": ((10**15, 6), ["truncated", "shape (1000000000000000, 6)"]),
}


def test_array_file_header_lies(tmp_path):
    cases = {f"npy-{case}": (npy_with(tmp_path / f"{case}.npy", shape), needles)
             for case, (shape, needles) in NPY_LIES.items()}
    # TRAK's scores/<exp>.mmap is an .npy file: its shape is checked the same way
    raw = (PEER / "traker" / "healthy_fp16" / "scores" / "queries.mmap").read_bytes()
    for case, data, needles in (("longer", raw + b"\0" * 240, ["shape = (600, 60)",
                                                                "the header describes less"]),
                                ("shorter", raw[:-240], ["truncated", "shape (600, 60)"])):
        (tmp_path / f"trak-{case}" / "scores").mkdir(parents=True)
        path = tmp_path / f"trak-{case}" / "scores" / "queries.mmap"
        path.write_bytes(data)
        cases[f"trak-{case}"] = (path, needles)
    # .npz members: a header of 20 rows over 40 rows of data, stored and compressed
    s = np.random.default_rng(5).standard_normal((40, 6)).astype(np.float32)
    member = tmp_path / "scores.npy"
    npy_with(member, (20, 6), body=s.tobytes())
    for compression, name in ((zipfile.ZIP_STORED, "stored"), (zipfile.ZIP_DEFLATED, "deflated")):
        with zipfile.ZipFile(tmp_path / f"{name}.npz", "w", compression) as zf:
            zf.write(member, "scores.npy")
        cases[f"npz-{name}-fewer-rows"] = (tmp_path / f"{name}.npz", ["shape = (20, 6)"])
    npy_with(member, (60, 6), body=s.tobytes())
    with zipfile.ZipFile(tmp_path / "short.npz", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(member, "scores.npy")
    cases["npz-more-rows"] = (tmp_path / "short.npz", ["truncated member 'scores.npy'"])
    ids = tmp_path / "row_ids.npy"
    npy_with(ids, (10**12,), descr="<U4", body=b"")
    np.save(member, s)
    with zipfile.ZipFile(tmp_path / "ids.npz", "w") as zf:
        zf.write(member, "scores.npy")
        zf.write(ids, "row_ids.npy")
    cases["npz-row-ids-huge"] = (tmp_path / "ids.npz", ["expected 40 row ids",
                                                        "(1000000000000,)"])
    cases.update(zarr_lies(tmp_path))
    cases.update(torch_lies(tmp_path))
    refused_all(cases)


def zarr_lies(tmp_path: Path) -> dict[str, tuple[Path, list[str]]]:
    zarr = pytest.importorskip("zarr")
    out = {}
    edits = {
        "rows-fewer": (lambda d, _: d.update(shape=[20, 6]),
                       ["shape = [20, 6]", "the store holds chunk"]),
        "rows-huge": (lambda d, _: d.update(shape=[10**15, 6]),
                      ["99999999999996 of 100000000000000 chunks",
                       "shape = [1000000000000000, 6]"]),
        "chunks-zero": (lambda d, v: zarr_chunks(d, [0, 6]), ["chunks = [0, 6]"]),
        "chunks-huge": (lambda d, v: zarr_chunks(d, [10**12, 6]),
                        ["chunks = [1000000000000, 6]"]),
    }
    for fmt in (2, 3):
        for case, (edit, needles) in edits.items():
            path = tmp_path / f"zarr{fmt}-{case}.zarr"
            arr = zarr.open_array(str(path), mode="w", shape=(40, 6), chunks=(10, 6),
                                  dtype="f4", zarr_format=fmt)
            arr[:] = np.random.default_rng(6).standard_normal((40, 6))
            meta = path / (".zarray" if fmt == 2 else "zarr.json")
            doc = json.loads(meta.read_text())
            edit(doc, None)
            meta.write_text(json.dumps(doc))
            out[f"zarr{fmt}-{case}"] = (path, needles)
    group = zarr.open_group(str(tmp_path / "g.zarr"), mode="w")
    group.create_array("scores", shape=(40, 6), chunks=(10, 6), dtype="f4")[:] = 1.0
    ids = group.create_array("row_ids", shape=(10**12,), chunks=(10,), dtype="i8")
    ids[:10] = np.arange(10)
    out["zarr-row-ids-huge"] = (tmp_path / "g.zarr", ["['row_ids']: shape = [1000000000000]",
                                                      "[40]"])
    return out


def zarr_chunks(doc: dict, value: list) -> None:
    if "chunk_grid" in doc:
        doc["chunk_grid"]["configuration"]["chunk_shape"] = value
    else:
        doc["chunks"] = value


def torch_lies(tmp_path: Path) -> dict[str, tuple[Path, list[str]]]:
    torch = pytest.importorskip("torch")
    real = PEER / "dattri" / "healthy_IF.pt"
    numel = torch.load(real, weights_only=True).numel()  # 36000: pickled as BININT2 (M)
    out = {}
    for case, claim, needle in (("numel-more", numel + 60, "numel = 36060"),
                                ("numel-fewer", numel - 60, "numel = 35940")):
        path = tmp_path / f"{case}.pt"
        with zipfile.ZipFile(real) as zin, zipfile.ZipFile(path, "w") as zout:
            for info in zin.infolist():
                data = zin.read(info)
                if info.filename.endswith("data.pkl"):
                    old = b"M" + numel.to_bytes(2, "little") + b"t"  # ends the persistent id
                    assert old in data
                    data = data.replace(old, b"M" + claim.to_bytes(2, "little") + b"t", 1)
                zout.writestr(info, data)
        out[f"torch-{case}"] = (path, [needle, "expected 36000 elements of 4 bytes",
                                       "144000 bytes in this storage's record"])
    torch.save({"scores": torch.randn(40, 6), "row_ids": 5}, tmp_path / "ids.pt")
    out["torch-row-ids-number"] = (tmp_path / "ids.pt", ["row_ids = 5"])
    return out
