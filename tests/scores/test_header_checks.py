"""Readers distrust their headers (in-process): the checks' rules, the open-files bound, and
files that change after their header was checked. The crafted-file corpus runs in child
processes in ``tests/faults/test_header_faults.py``."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest

from aria_tda.errors import FileFormatError
from aria_tda.scores import open_scores, save_scores
from aria_tda.scores.formats import files as files_mod
from aria_tda.scores.formats.header import (
    header_dims,
    header_error,
    header_int,
    json_object,
    read_json_header,
)
from aria_tda.scores.formats.kronfluence import partition_files
from aria_tda.scores.formats.safetensors import read_safetensors_header


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


# -- the rules -----------------------------------------------------------------------------
@pytest.mark.parametrize("value", [True, 1.0, "1", None, [1], 10**40 * 1.0])
def test_an_integer_field_is_an_int(value):
    with pytest.raises(FileFormatError, match=r"^f\.json: n = .*: expected a non-negative int"):
        header_int("f.json", "n", value)


def test_an_integer_field_out_of_range_says_what_the_file_holds():
    with pytest.raises(FileFormatError) as exc:
        header_int("f.json", "n", 10**30, max_value=600, holds="600 rows")
    assert str(exc.value) == (
        "f.json: n = 1000000000000000000000000000000: expected an integer from 0 to 600, "
        "the file holds 600 rows")
    assert header_int("f.json", "n", 7, min_value=1) == 7


@pytest.mark.parametrize("value", [[-1, 2], [True, 2], ["2", 2], [2.0, 2], 5, [[2], 2]])
def test_a_shape_is_a_list_of_non_negative_ints(value):
    with pytest.raises(FileFormatError, match=r"shape = .*: expected a list of non-negative"):
        header_dims("f", "shape", value)
    assert header_dims("f", "shape", [0, 3]) == (0, 3)
    with pytest.raises(FileFormatError, match="a list of 2 non-negative integers"):
        header_dims("f", "data_offsets", [0, 1, 2], ndim=2)


def test_a_long_value_is_cut_in_the_message():
    text = str(header_error("f", "names", list(range(1000)), "a list"))
    assert len(text) < 140 and text.endswith("...: expected a list") and "\n" not in text


def test_json_headers_refuse_repeats_depth_and_size(tmp_path):
    path = tmp_path / "h.json"
    path.write_text('{"a": 1, "a": 2}')
    with pytest.raises(FileFormatError, match="key 'a' appears twice"):
        read_json_header(path, str(path), what="test header")
    path.write_text("[" * 50_000 + "]" * 50_000)
    with pytest.raises(FileFormatError, match="nested too deep"):
        read_json_header(path, str(path), what="test header")
    path.write_text("{}" + " " * 100)
    with pytest.raises(FileFormatError, match=r"size = 102: expected at most 10 bytes"):
        read_json_header(path, str(path), what="test header", max_bytes=10)
    with pytest.raises(FileFormatError, match="expected a test header, a JSON object, got null"):
        json_object(None, "h.json", "a test header")


def test_partition_names_of_one_cell_are_refused(tmp_path):
    for name in ("pairwise_scores_data_partition1_module_partition0.safetensors",
                 "pairwise_scores_data_partition01_module_partition0.safetensors"):
        (tmp_path / name).write_bytes(b"x")
    with pytest.raises(FileFormatError, match="are both data partition 1, module partition 0"):
        partition_files(tmp_path)


def test_safetensors_header_is_checked_whole(tmp_path):
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    header = {"__metadata__": {"format": "pt"},
              "a": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]},
              "b": {"dtype": "BOOL", "shape": [5], "data_offsets": [48, 53]}}
    text = json.dumps(header).encode()
    path = tmp_path / "x.safetensors"
    path.write_bytes(len(text).to_bytes(8, "little") + text + data.tobytes() + b"\1" * 5)
    parsed = read_safetensors_header(path)
    assert parsed.metadata == {"format": "pt"} and list(parsed.tensors) == ["a", "b"]
    assert parsed.tensors["b"].shape == (5,) and parsed.data_start == 8 + len(text)
    np.testing.assert_array_equal(open_scores(path, key="a", transpose=True).to_numpy(), data)
    with pytest.raises(FileFormatError, match=r"unsupported safetensors dtype 'BOOL'"):
        open_scores(path, key="b")


# -- reading without holding files ---------------------------------------------------------
def test_sources_hold_no_file_between_reads(rng, tmp_path):
    s = rng.standard_normal((200, 7)).astype(np.float32)
    path = save_scores(s, tmp_path / "s.npy")
    np.save(tmp_path / "f.npy", np.asfortranarray(s))
    before = _open_fds()
    sources = [open_scores(path) for _ in range(50)] + [open_scores(tmp_path / "f.npy")]
    assert _open_fds() == before
    for src in sources[:3] + sources[-1:]:
        np.testing.assert_array_equal(src.to_numpy(), s)
        got = np.concatenate([b.copy() for _, b in src.iter_chunks(30, reuse_buffers=True)])
        np.testing.assert_array_equal(got, s)
        np.testing.assert_array_equal(src.read_columns(slice(2, 5)), s[:, 2:5])
    np.testing.assert_array_equal(open_scores(path, transpose=True).to_numpy(), s.T)
    assert _open_fds() == before


def test_reads_from_many_threads_stay_within_the_bound(rng, tmp_path, monkeypatch):
    monkeypatch.setattr(files_mod, "_SLOTS", threading.BoundedSemaphore(2))
    now, most = [0], [0]
    lock = threading.Lock()
    real_open = open

    class Counted:
        def __init__(self, fh):
            self.fh = fh

        def __getattr__(self, name):
            return getattr(self.fh, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            with lock:
                now[0] -= 1
            self.fh.close()

    def counted_open(path, mode="r", *args, **kwargs):
        fh = real_open(path, mode, *args, **kwargs)
        with lock:
            now[0] += 1
            most[0] = max(most[0], now[0])
        return Counted(fh)

    monkeypatch.setattr(files_mod, "open", counted_open, raising=False)
    paths = [save_scores(rng.standard_normal((64, 5)), tmp_path / f"s{i}.npy") for i in range(8)]
    sources = [open_scores(p) for p in paths]
    errors: list[BaseException] = []

    def work(src):
        try:
            for _ in range(20):
                for _start, _block in src.iter_chunks(8, prefetch=True):
                    pass
        except BaseException as exc:  # handed to the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(src,)) for src in sources]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and 1 <= most[0] <= 2 and now[0] == 0


def test_a_file_replaced_after_its_header_was_checked_is_refused(rng, tmp_path):
    path = save_scores(rng.standard_normal((40, 6)), tmp_path / "s.npy")
    src = open_scores(path)
    tmp = tmp_path / "other.npy"
    np.save(tmp, rng.standard_normal((40, 6)))
    Path(tmp).replace(path)  # same size, another file
    with pytest.raises(FileFormatError, match="changed since its header was checked"):
        src.to_numpy()
    src = open_scores(path)
    with open(path, "ab") as fh:
        fh.write(b"\0" * 48)
    with pytest.raises(FileFormatError, match=r"changed since .*now 2096"):
        src.read_rows(0, 5)
