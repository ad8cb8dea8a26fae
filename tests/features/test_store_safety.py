"""The feature store keeps what it holds: one writer at a time, content checksums of its parts,
parameters checked before a byte is written, nothing dropped silently, malformed manifests in
one line, and nothing written over that ARIA did not write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from aria_tda.cli import main
from aria_tda.errors import (
    AriaWarning,
    DataError,
    FileFormatError,
    LockedError,
    ParameterError,
)
from aria_tda.features.extract import collect_inputs, extract_to_store
from aria_tda.features.store import FeatureStore, StoreWriter, write_store

from ._midifiles import make_midi, note, save

EMBED_TESTS = Path(__file__).resolve().parents[1] / "embed"


def corpus(root, n=4):
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        save(make_midi([[*note(0, 96, 60 + i), *note(96, 192, 64 + i)]]), root / f"m{i}.mid")
    return root


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def error_line(err):
    lines = [ln for ln in err.splitlines() if "error:" in ln]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def small_store(tmp_path):
    with StoreWriter(tmp_path / "s", modality="symbolic", params={"p": 1}) as w:
        w.append(["a", "b"], {"pitch_range": np.array([[1.0], [2.0]])})
        w.append(["c"], {"pitch_range": np.array([[3.0]])})
    return tmp_path / "s"


def manifest(path):
    return json.loads((path / "aria-manifest.json").read_text())


def dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# --------------------------------------------------------------------------- content checksums


def test_a_part_rewritten_with_the_same_rows_and_other_values_is_an_error(tmp_path):
    path = small_store(tmp_path)
    part = path / "part-00001.parquet"
    t = pq.read_table(part)
    other = t.set_column(1, "pitch_range", pa.array([[99.0]], type=pa.list_(pa.float64())))
    pq.write_table(other, part, compression="zstd")
    assert pq.read_metadata(part).num_rows == 1  # same rows: only the checksum can tell
    with pytest.raises(FileFormatError, match=r"part-00001\.parquet was altered after it was"):
        FeatureStore.open(path)
    with pytest.raises(FileFormatError, match=r"part-00001\.parquet was altered"):  # resuming
        StoreWriter(path, modality="symbolic", params={"p": 1})


def test_an_altered_part_is_one_line_in_the_cli(tmp_path, capsys):
    path = small_store(tmp_path)
    part = path / "part-00000.parquet"
    t = pq.read_table(part)
    pq.write_table(t.set_column(0, "track_id", pa.array(["a", "z"])), part)
    code, _, err = run(["features", "errors", path], capsys)
    assert code == 2 and "part-00000.parquet was altered" in error_line(err)


def test_an_altered_single_file_store_is_an_error(tmp_path):
    single = write_store(tmp_path / "x.parquet", modality="audio", track_ids=["a", "b"],
                         features={"tempo": np.array([1.0, 2.0])})
    t = pq.read_table(single)
    pq.write_table(t.set_column(1, "tempo", pa.array([[5.0], [6.0]])), single)
    with pytest.raises(FileFormatError, match=r"x\.parquet' was altered after it was written"):
        FeatureStore.open(single)


def test_a_store_without_checksums_still_opens(tmp_path):
    path = small_store(tmp_path)
    man = manifest(path)
    for q in man["parts"]:
        del q["digest"]
    (path / "aria-manifest.json").write_text(json.dumps(man))
    assert FeatureStore.open(path).track_ids.tolist() == ["a", "b", "c"]
    with StoreWriter(path, modality="symbolic", params={"p": 1}) as w:  # and resumes
        w.append(["d"], {"pitch_range": np.array([[4.0]])})
    man = manifest(path)
    assert "digest" not in man["parts"][0] and "digest" in man["parts"][-1]
    assert len(FeatureStore.open(path)) == 4


# --------------------------------------------------------------------------- malformed manifests


def _with(**change):
    return lambda man: {**man, **change}


def _without(key):
    return lambda man: {k: v for k, v in man.items() if k != key}


MALFORMED = [
    (lambda man: [1, 2], "a JSON object with a 'kind'"),
    (lambda man: {"features": 3}, "a JSON object with a 'kind'"),
    (_with(kind=3), "a JSON object with a 'kind'"),
    (_without("modality"), "'modality'"),
    (_with(features=3), "'features' to be an object"),
    (_with(features={"pitch_range": {"kind": "vector"}}), r"features\['pitch_range'\]"),
    (_with(features={"pitch_range": {"kind": "vector", "dim": "1"}}), "features"),
    (_with(features={"pitch_range": [1]}), "features"),
    (_with(params=[1]), "'params' to be an object"),
    (_with(versions="x"), "'versions' to be an object"),
    (_with(n_tracks="3"), "'n_tracks' to be a count"),
    (_with(n_tracks=True), "'n_tracks' to be a count"),
    (_with(n_errors=-1), "'n_errors' to be a count"),
    (_with(parts={"a": 1}), "'parts' to be a list"),
    (_with(parts=[3]), r"parts\[0\]"),
    (_with(parts=[{"file": "../../etc/passwd", "rows": 1}]), r"parts\[0\]"),
    (_with(parts=[{"file": "part-00000.parquet", "rows": "2"}]), r"parts\[0\]"),
    (_with(parts=[{"file": "part-00000.parquet"}, {"file": "part-00000.parquet"}]),
     r"parts\[1\]"),
    (_with(parts=[{"file": "part-00000.parquet", "rows": 2, "digest": 7}]), r"parts\[0\]"),
]


@pytest.mark.parametrize(("change", "what"), MALFORMED)
def test_a_malformed_manifest_is_one_file_format_error(tmp_path, change, what):
    import re

    path = small_store(tmp_path)
    mpath = path / "aria-manifest.json"
    mpath.write_text(json.dumps(change(manifest(path))))
    for attempt in (lambda: FeatureStore.open(path),
                    lambda: StoreWriter(path, modality="symbolic", params={"p": 1})):
        with pytest.raises(FileFormatError, match="malformed manifest") as info:
            attempt()
        msg = str(info.value)
        assert str(mpath) in msg and "\n" not in msg
        assert re.search(what, msg), msg


def test_malformed_manifest_in_the_cli_and_in_embedding_info(tmp_path, capsys):
    from aria_tda.embed.store import embedding_info

    path = small_store(tmp_path)
    (path / "aria-manifest.json").write_text(json.dumps({**manifest(path), "features": 3}))
    code, _, err = run(["features", "errors", path], capsys)
    assert code == 2 and "malformed manifest" in error_line(err)
    emb = tmp_path / "emb"
    write_store(emb, modality="embedding", track_ids=["a"], features={"embedding": np.ones((1, 2))},
                params={"encoder": ["not", "a", "mapping"]})
    with pytest.raises(FileFormatError, match=r"malformed manifest .*params\['encoder'\]"):
        embedding_info(emb)
    (tmp_path / "garbage").mkdir()
    (tmp_path / "garbage" / "aria-manifest.json").write_text("{not json")
    with pytest.raises(FileFormatError, match="unreadable manifest"):
        FeatureStore.open(tmp_path / "garbage")


# --------------------------------------------------------------------------- one writer per store


def test_a_second_writer_in_another_process_is_refused_in_one_line(tmp_path):
    path = small_store(tmp_path)
    code = (
        "import sys\n"
        "from aria_tda.errors import LockedError\n"
        "from aria_tda.features.store import StoreWriter\n"
        "try:\n"
        f"    StoreWriter({str(path)!r}, modality='symbolic', params={{'p': 1}})\n"
        "except LockedError as exc:\n"
        "    print(exc); sys.exit(3)\n"
    )
    with StoreWriter(path, modality="symbolic", params={"p": 1}):
        held = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=120)
    assert held.returncode == 3, held.stderr
    assert f"being written by process pid {os.getpid()}" in held.stdout
    free = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert free.returncode == 0, free.stdout + free.stderr  # released by close()


def test_two_open_writers_of_one_store_in_one_process_are_refused(tmp_path):
    path = small_store(tmp_path)
    w = StoreWriter(path, modality="symbolic", params={"p": 1})
    with pytest.raises(LockedError, match="another StoreWriter of this process"):
        StoreWriter(path, modality="symbolic", params={"p": 1})
    w.append(["d"], {"pitch_range": np.array([[4.0]])})
    w.close()
    with pytest.raises(ParameterError, match="is closed"):
        w.append(["e"], {"pitch_range": np.array([[5.0]])})
    with StoreWriter(path, modality="symbolic", params={"p": 1}) as w2:
        assert w2.done == {"a", "b", "c", "d"}


def test_dead_writers_leftovers_are_swept_and_live_names_kept(tmp_path):
    path = small_store(tmp_path)
    from aria_tda._io import temp_name

    def dead(name):  # a temporary this machine's ARIA made, in a process that has ended
        return path / name.replace(f"-{os.getpid()}-", f"-{dead_pid()}-")

    stale = [dead(temp_name("part-00002.parquet")), dead(temp_name("", "staging")),
             path / "part-00002.parquet"]  # the last: written, never committed
    stale[0].write_bytes(b"half a part")
    stale[1].mkdir()
    (stale[1] / "x").write_text("x")
    stale[2].write_bytes((path / "part-00001.parquet").read_bytes())
    own = path / temp_name("errors.parquet")  # a live process's (this one's): kept
    own.write_bytes(b"live")
    with StoreWriter(path, modality="symbolic", params={"p": 1}) as w:
        assert not [p.name for p in stale if p.exists()]
        assert own.exists()
        w.append(["d"], {"pitch_range": np.array([[4.0]])})
    assert [q["file"] for q in manifest(path)["parts"]][-1] == "part-00002.parquet"
    assert FeatureStore.open(path).track_ids.tolist() == ["a", "b", "c", "d"]


def test_a_store_the_writer_created_and_never_filled_goes_on_error(tmp_path):
    with pytest.raises(RuntimeError), StoreWriter(tmp_path / "new", modality="symbolic"):
        raise RuntimeError("interrupted")
    assert not (tmp_path / "new").exists()
    path = small_store(tmp_path)  # an existing store stays, whatever happens
    with pytest.raises(RuntimeError), StoreWriter(path, modality="symbolic", params={"p": 1}):
        raise RuntimeError("interrupted")
    assert len(FeatureStore.open(path)) == 3


# --------------------------------------------------------------------------- never write over


def test_overwrite_never_removes_a_folder_aria_did_not_write(tmp_path, capsys):
    src = corpus(tmp_path / "in")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    with pytest.raises(FileFormatError, match="without a feature-store manifest"):
        StoreWriter(mine, modality="symbolic", overwrite=True)
    code, _, err = run(["features", "symbolic", src, "--out", mine, "--overwrite"], capsys)
    assert code == 2 and "ARIA writes over nothing it did not write" in error_line(err)
    with pytest.raises(FileFormatError, match="without a feature-store manifest"):
        write_store(mine, modality="symbolic", track_ids=["a"], features={"x": np.ones((1, 1))})
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]  # not even a lock file
    other = tmp_path / "results"
    other.mkdir()
    (other / "aria-manifest.json").write_text(json.dumps({"kind": "aria-results"}))
    code, _, err = run(["features", "symbolic", src, "--out", other, "--overwrite"], capsys)
    assert code == 2 and "not an ARIA feature store" in error_line(err)
    assert (other / "aria-manifest.json").is_file()
    table = tmp_path / "table.parquet"
    pq.write_table(pa.table({"a": [1]}), table)
    with pytest.raises(FileFormatError, match="no feature-store manifest beside it"):
        write_store(table, modality="audio", track_ids=["a"], features={"tempo": np.ones(1)})
    assert pq.read_table(table).column_names == ["a"]


def test_overwrite_replaces_a_damaged_store(tmp_path, capsys):
    src = corpus(tmp_path / "in")
    out = tmp_path / "store"
    assert run(["features", "symbolic", src, "--out", out], capsys)[0] == 0
    (out / "aria-manifest.json").write_text(json.dumps({"kind": "aria-feature-store"}))
    code, _, err = run(["features", "symbolic", src, "--out", out], capsys)
    assert code == 2 and "malformed manifest" in error_line(err)
    assert run(["features", "symbolic", src, "--out", out, "--overwrite"], capsys)[0] == 0
    assert len(FeatureStore.open(out)) == 4


# --------------------------------------------------------------------------- validate first


BAD_FLAGS = [
    (["--segment-seconds", "-2"], "--segment-seconds"),
    (["--segment-seconds", "nan"], "--segment-seconds"),
    (["--segment-notes", "0"], "--segment-notes"),
    (["--segment-seconds", "1", "--hop", "0"], "--hop"),
    (["--segment-notes", "2", "--hop", "0"], "--hop"),
    (["--segment-notes", "2", "--hop", "1.5"], "--hop"),
    (["--fps", "0"], "--fps"),
    (["--fps", "inf"], "--fps"),
    (["--flush-every", "0"], "--flush-every"),
    (["--workers", "-1"], "--workers"),
    (["--param", "qpm=-5"], "qpm"),
    (["--param", "tpq=0"], "tpq"),
]


@pytest.mark.parametrize(("flags", "name"), BAD_FLAGS)
def test_a_bad_flag_is_refused_before_the_store_exists(tmp_path, capsys, flags, name):
    src = corpus(tmp_path / "in", n=2)
    out = tmp_path / "deep" / "store"
    code, _, err = run(["features", "symbolic", src, "--out", out, *flags], capsys)
    line = error_line(err)
    assert code == 2 and f"{name}:" in line
    assert not out.exists()


def test_the_corrected_command_works_after_a_refused_one(tmp_path, capsys):
    src = corpus(tmp_path / "in", n=2)
    out = tmp_path / "store"
    for bad in (["--segment-seconds", "-2"], ["--segment-notes", "0"],
                ["--segment-seconds", "0.5", "--hop", "0"]):
        assert run(["features", "symbolic", src, "--out", out, *bad], capsys)[0] == 2
    code, stdout, _ = run(["features", "symbolic", src, "--out", out,
                           "--segment-seconds", "0.5", "--json"], capsys)
    assert code == 0 and json.loads(stdout)["n_extracted"] == 4
    assert FeatureStore.open(out).params["segments"] == {"seconds": 0.5, "hop": None}
    # a refused value with --overwrite leaves the existing store as it was
    code, _, _ = run(["features", "symbolic", src, "--out", out, "--segment-seconds", "-1",
                      "--overwrite"], capsys)
    assert code == 2 and len(FeatureStore.open(out)) == 4


@pytest.mark.parametrize(("segments", "match"), [
    ({"seconds": -2}, r"segments\['seconds'\]"),
    ({"n_notes": 0}, r"segments\['n_notes'\]"),
    ({"seconds": 1.0, "hop": 0}, r"segments\['hop'\]"),
    ({"n_notes": 3, "hop": 0.5}, r"segments\['hop'\]"),
    ({"seconds": 1.0, "n_notes": 3}, "exactly one of"),
    ({"hop": 1.0}, "exactly one of"),
    ({"bars": 2}, "keys among"),
    ([("seconds", 1)], "a mapping"),
])
def test_bad_segments_are_refused_before_the_store_exists(tmp_path, segments, match):
    src = corpus(tmp_path / "in", n=1)
    with pytest.raises(ParameterError, match=match):
        extract_to_store(src, tmp_path / "s", modality="symbolic", segments=segments)
    assert not (tmp_path / "s").exists()


@pytest.fixture
def toy(monkeypatch, tmp_path):
    """The embed tests' toy encoder, registered; returns (module, checkpoint, corpus)."""
    monkeypatch.syspath_prepend(str(EMBED_TESTS))
    import _toy_encoder

    from aria_tda.embed.encoders.registry import ENCODERS

    monkeypatch.setitem(ENCODERS, "toy", _toy_encoder.SPEC)
    ckpt = _toy_encoder.save_checkpoint(tmp_path / "toy.npy")
    audio = _toy_encoder.make_corpus(tmp_path / "audio", n=2, bad=False)
    return _toy_encoder, ckpt, audio


@pytest.mark.parametrize(("flags", "name"), [
    (["--segment-seconds", "-1"], "--segment-seconds"),
    (["--segment-seconds", "0"], "--segment-seconds"),
    (["--layer", "-1"], "--layer"),
    (["--workers", "0"], "--workers"),
    (["--device", " "], "--device"),
])
def test_embed_refuses_a_bad_flag_before_the_store_exists(tmp_path, capsys, toy, flags, name):
    _, ckpt, audio = toy
    out = tmp_path / "emb"
    code, _, err = run(["embed", audio, "--encoder", "toy", "--weights", ckpt, "--out", out,
                        *flags], capsys)
    assert code == 2 and f"{name}:" in error_line(err)
    assert not out.exists()
    code, _, _ = run(["embed", audio, "--encoder", "toy", "--weights", ckpt, "--out", out],
                     capsys)
    assert code == 0 and len(FeatureStore.open(out)) == 2


# --------------------------------------------------------------------------- nothing dropped


def test_metadata_ids_that_match_no_track_are_named(tmp_path):
    src = corpus(tmp_path / "in")
    meta = tmp_path / "meta.csv"
    meta.write_text("track_id,genre\nm0,jazz\nm1,rock\nM2.mid,folk\nm9,pop\n")
    with pytest.warns(AriaWarning, match=r"metadata: 2 of the 4 track ids of the metadata table "
                      r"'.*meta\.csv' match no input track; their rows are not used: "
                      r"'M2\.mid', 'm9'"):
        extract_to_store(src, tmp_path / "s", modality="symbolic", metadata=meta)
    assert FeatureStore.open(tmp_path / "s").metadata["genre"].tolist()[:2] == ["jazz", "rock"]
    meta.write_text("track_id,genre\nm0.mid,jazz\nm1.mid,rock\n")
    with pytest.raises(DataError, match=r"none of the 2 track ids of the metadata table "
                       r"'.*meta\.csv' match an input track \(its: 'm0\.mid', 'm1\.mid'; the "
                       r"inputs': 'm0', 'm1', 'm2', \.\.\.\)"):
        extract_to_store(src, tmp_path / "s2", modality="symbolic", metadata=meta)
    assert not (tmp_path / "s2").exists()


def test_metadata_warning_is_one_cli_line_and_embed_names_it_too(tmp_path, capsys, toy):
    _, ckpt, audio = toy
    meta = tmp_path / "meta.csv"
    meta.write_text("track_id,genre\nt0,a\nt7,b\n")
    code, _, err = run(["embed", audio, "--encoder", "toy", "--weights", ckpt, "--out",
                        tmp_path / "emb", "--metadata", meta], capsys)
    lines = [ln for ln in err.splitlines() if "warning:" in ln]
    assert code == 0 and len(lines) == 1 and "1 of the 2 track ids" in lines[0]
    assert "'t7'" in lines[0] and "meta.csv" in lines[0]


@pytest.mark.parametrize(("text", "match"), [
    ("track_id,genre\nm0,jazz\n,rock\nm1,pop\n", r"a blank track_id on line 3"),
    ("track_id,genre\nm0,jazz\n  ,rock\n,pop\n", r"a blank track_id on lines 3, 4"),
    ("track_id,genre\nm0,jazz\nm1,rock\nm0,pop\n",
     r"two rows for track id 'm0' \(lines 2 and 4\)"),
])
def test_metadata_rows_without_a_usable_id_are_errors(tmp_path, text, match):
    src = corpus(tmp_path / "in")
    meta = tmp_path / "meta.csv"
    meta.write_text(text)
    with pytest.raises(DataError, match=r"metadata: the metadata table '.*meta\.csv' has "
                       + match):
        extract_to_store(src, tmp_path / "s", modality="symbolic", metadata=meta)
    assert not (tmp_path / "s").exists()


def test_a_blank_path_in_a_tracks_list_names_the_file_and_line(tmp_path, capsys):
    src = corpus(tmp_path / "in")
    (src / "list.csv").write_text("path,genre\nm0.mid,a\n,b\nm1.mid,c\n")
    with pytest.raises(DataError, match=r"the list '.*list\.csv' has a blank path on line 3"):
        collect_inputs(src / "list.csv", modality="symbolic")
    code, _, err = run(["features", "symbolic", src / "list.csv", "--out", tmp_path / "s"],
                       capsys)
    assert code == 2 and "blank path on line 3" in error_line(err)
    assert not (tmp_path / "s").exists()
    (src / "dups.csv").write_text("path,track_id\nm0.mid,x\nm1.mid,y\nm2.mid,x\n")
    with pytest.raises(DataError, match=r"dups\.csv': expected unique track ids, got 'x' twice "
                       r"\(line 2 and line 4\)"):
        collect_inputs(src / "dups.csv", modality="symbolic")


def test_a_part_whose_commit_fails_is_removed_and_the_writer_goes_on(tmp_path, monkeypatch):
    """A full disk while the manifest is rewritten: the part just written is not left beside
    the store unlisted, and the store (and the writer) stay as they were before."""
    import aria_tda.features.store as store_mod
    from aria_tda.errors import DiskFullError

    path = small_store(tmp_path)
    w = StoreWriter(path, modality="symbolic", params={"p": 1})
    real = store_mod.write_json

    def full(*args, **kwargs):
        raise DiskFullError("No space left on tmpfs: have 0 B, writing aria-manifest.json")

    monkeypatch.setattr(store_mod, "write_json", full)
    with pytest.raises(DiskFullError, match="No space left on"):
        w.append(["d"], {"pitch_range": np.array([[4.0]])})
    assert sorted(p.name for p in path.glob("part-*")) == ["part-00000.parquet",
                                                          "part-00001.parquet"]
    assert w.done == {"a", "b", "c"} and len(FeatureStore.open(path)) == 3
    monkeypatch.setattr(store_mod, "write_json", real)
    w.append(["d"], {"pitch_range": np.array([[4.0]])})
    w.close()
    assert FeatureStore.open(path).track_ids.tolist() == ["a", "b", "c", "d"]
