"""How readers talk: orientation advice fitting the flag given; library errors in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from aria_tda.errors import DataError, FileFormatError, library_message, one_line
from aria_tda.scores import as_source, open_scores, save_scores
from aria_tda.scores.source import check_orientation, transpose_advice


def _kronfluence(path, s):
    """A Kronfluence pairwise_scores.safetensors of ``s`` (train x queries), stored transposed."""
    data = np.ascontiguousarray(s.T.astype(np.float32))
    header = json.dumps({"all_modules": {"dtype": "F32", "shape": list(data.shape),
                                         "data_offsets": [0, data.nbytes]}}).encode()
    header += b" " * (-len(header) % 8)
    path.write_bytes(len(header).to_bytes(8, "little") + header + data.tobytes())
    return path


def test_advice_never_tells_who_passed_transpose_to_pass_it():
    assert transpose_advice(False).startswith("pass --transpose")
    assert transpose_advice(True).startswith("drop --transpose")
    assert "pass --transpose" not in transpose_advice(True, "safetensors")
    assert "Kronfluence" in transpose_advice(True, "safetensors")
    assert "drop it if it was given" in transpose_advice(None)


def test_orientation_check_reads_how_the_source_was_opened(rng, tmp_path):
    s = rng.standard_normal((30, 4))
    kron = _kronfluence(tmp_path / "pairwise_scores.safetensors", s)
    as_stored = open_scores(kron, transpose=True)  # the user's --transpose undoes ARIA's own
    assert as_stored.shape == (4, 30) and as_stored.transpose_requested is True
    assert as_stored.format == "safetensors"
    with pytest.raises(DataError) as exc:
        check_orientation(as_stored, 30, what="the segment map")
    text = str(exc.value)
    assert "looks transposed (4 × 30); drop --transpose" in text and "pass --transpose" not in text
    assert "Kronfluence" in text and "\n" not in text
    check_orientation(open_scores(kron), 30, what="the segment map")  # read right: fine
    npy = save_scores(np.ascontiguousarray(s.T), tmp_path / "qt.npy")
    with pytest.raises(DataError, match=r"looks transposed \(4 × 30\); pass --transpose"):
        check_orientation(open_scores(npy), 30, what="tracks")
    with pytest.raises(DataError, match=r"drop --transpose"):
        check_orientation(as_source(s, transpose=True), 30, what="tracks")
    with pytest.raises(DataError, match=r"pass --transpose \(transpose=True\), or drop it"):
        check_orientation((4, 30), 30, what="tracks")  # a bare shape: the flag is unknown


def test_how_a_matrix_was_read_travels_through_transposition(rng, tmp_path):
    parts = {"a": rng.standard_normal((3, 9)).astype(np.float32),
             "b": rng.standard_normal((3, 9)).astype(np.float32)}
    data = b"".join(np.ascontiguousarray(v).tobytes() for v in parts.values())
    header = json.dumps({k: {"dtype": "F32", "shape": [3, 9],
                             "data_offsets": [i * 108, (i + 1) * 108]}
                         for i, k in enumerate(parts)}).encode()
    header += b" " * (-len(header) % 8)
    path = tmp_path / "pm.safetensors"
    path.write_bytes(len(header).to_bytes(8, "little") + header + data)
    src = open_scores(path)
    assert src.transposed and src.summed_keys == ("a", "b") and src.format == "safetensors"
    assert src.provenance() == {
        "path": str(path), "format": "safetensors", "key": "all_modules", "transposed": True,
        "summed_keys": ["a", "b"], "notes": list(src.notes)}
    back = open_scores(path, transpose=True)
    assert back.summed_keys == ("a", "b") and back.transpose_requested is True


def test_a_pickled_numpy_array_in_a_pt_file_is_one_short_line(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save(np.zeros((5, 3)), tmp_path / "np.pt")
    with pytest.raises(FileFormatError) as exc:
        open_scores(tmp_path / "np.pt")
    text = str(exc.value)
    assert "\n" not in text and "\x1b" not in text and len(text) < 400, text
    assert "np.pt" in text and "pickled NumPy array" in text and "torch.from_numpy" in text


def test_library_messages_become_one_line():
    long = "\x1b[1mWeights\x1b[0m only load failed.\n\t(1) details\n" + "x" * 2000
    assert one_line(long) == "Weights only load failed."
    cut = one_line("a " * 400, limit=50)
    assert cut.endswith("...") and len(cut) <= 50
    text = library_message(ValueError("\x1b[31mred\x1b[0m first\nsecond"))
    assert text == "ValueError: red first"
    assert one_line("\n\n  \n") == ""


@pytest.mark.parametrize("protocol", [3, 4, 5])
def test_protocol2_rewrites_newer_pickles_to_the_same_objects(protocol):
    import collections
    import pickle
    import pickletools

    from aria_tda.scores.formats.torch import protocol2

    shared = ("storage", "cpu")
    obj = {
        "a": [shared, shared, "storage", ("cpu", 1.5, None, True)],
        "od": collections.OrderedDict(x=1, y=[2, 3]),
        "many": [f"s{i % 300}" for i in range(600)] + [(i,) for i in range(300)],  # > 256 memo
        "ü": "é" * 300,
    }
    data = pickle.dumps(obj, protocol=protocol)
    out = protocol2(data)
    assert out[:2] == b"\x80\x02"
    assert max(op.proto for op, _, _ in pickletools.genops(out)) <= 2
    assert pickle.loads(out) == obj


def test_a_tensor_saved_with_a_newer_protocol_is_read(tmp_path):
    torch = pytest.importorskip("torch")
    t = torch.arange(24, dtype=torch.float32).reshape(6, 4)
    for protocol in (2, 5):
        path = tmp_path / f"p{protocol}.pt"
        torch.save({"scores": t, "row_ids": list("abcdef")}, path, pickle_protocol=protocol)
        with open_scores(path) as src:
            np.testing.assert_array_equal(src.to_numpy(), t.numpy())
            assert src.row_ids.tolist() == list("abcdef") and src.key == "scores"
    torch.save(np.zeros((5, 3)), tmp_path / "np5.pt", pickle_protocol=5)
    with pytest.raises(FileFormatError, match="pickled NumPy array"):
        open_scores(tmp_path / "np5.pt")
