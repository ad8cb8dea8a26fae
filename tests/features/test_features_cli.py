"""``aria-tda features symbolic|audio``: resumable, parallel, errors recorded, clear failures."""

from __future__ import annotations

import importlib.util
import json
import sys
import types

import numpy as np
import pytest

from aria_tda.cli import main
from aria_tda.features.extract import collect_inputs, extract_to_store
from aria_tda.features.store import FeatureStore
from aria_tda.features.symbolic import extract_file

from ._midifiles import make_midi, note, save, tempo


def corpus(root):
    save(
        make_midi([[*note(0, 96, 60), *note(0, 96, 64), *note(96, 192, 67)]]),
        root / "a" / "one.mid",
    )
    save(
        make_midi([[*note(0, 48, 62), *note(48, 96, 65), *note(96, 384, 69, vel=50)]], tpq=480),
        root / "a" / "two.MID",
    )
    save(
        make_midi([[*note(0, 960, 48), *note(0, 960, 55, ch=1), *note(0, 240, 38, ch=9)]], tpq=480),
        root / "b" / "three.midi",
    )
    (root / "b" / "corrupt.mid").write_bytes(
        b"MThd\x00\x00\x00\x06\x00\x01\x00\x01\x00`MTrk\x00\x00\x10\x00\x90"
    )
    (root / "b" / "empty.mid").write_bytes(b"")
    save(make_midi([[tempo(0, 500_000)]], end=[960]), root / "silent.mid")
    (root / "notes.txt").write_text("not a midi file, ignored by the directory scan")
    return root


def run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_symbolic_end_to_end_and_resume(tmp_path, capsys):
    src = corpus(tmp_path / "in")
    out = tmp_path / "store"
    code, stdout, _ = run(["features", "symbolic", str(src), "--out", str(out), "--json"], capsys)
    assert code == 0
    summary = json.loads(stdout)
    assert summary == {
        "n_inputs": 6,
        "n_skipped": 0,
        "n_extracted": 3,
        "n_errors": 3,
        "store": str(out),
    }
    st = FeatureStore.open(out)
    assert st.modality == "symbolic"
    assert st.track_ids.tolist() == ["a/one", "a/two", "b/three"]
    assert sorted(st.errors["track_id"]) == ["b/corrupt", "b/empty", "silent"]
    errs = dict(zip(st.errors["track_id"], st.errors["error"], strict=True))
    assert (
        "empty file" in errs["b/empty"]
        and "no notes" in errs["silent"]
        and "FileFormatError" in errs["b/corrupt"]
    )
    assert st.params["form"] == "paper" and st.params["fps"] == 50.0 and st.versions["mido"]
    one = extract_file(src / "a" / "one.mid")
    for name in st.feature_names:
        np.testing.assert_allclose(st.vectors(name)[0], one[name])
    assert st.metadata.loc["b/three", "n_notes"] == 3 and st.metadata.loc[
        "b/three", "duration"
    ] == pytest.approx(1.0)

    # resume: nothing new is extracted, failed files are retried (and fail again)
    code, stdout, _ = run(["features", "symbolic", str(src), "--out", str(out)], capsys)
    assert (
        code == 0
        and "0 symbolic rows written, 3 files already in the store, 3 files failed" in stdout
    )
    # a new file is picked up; a repaired one leaves the errors table
    save(make_midi([[*note(0, 96, 70)]]), src / "c.mid")
    save(make_midi([[*note(0, 96, 71)]]), src / "silent.mid")
    summary = extract_to_store(src, out, modality="symbolic")
    assert summary["n_extracted"] == 2 and summary["n_skipped"] == 3 and summary["n_errors"] == 2
    st = FeatureStore.open(out)
    assert st.track_ids.tolist() == ["a/one", "a/two", "b/three", "c", "silent"]
    assert sorted(st.errors["track_id"]) == ["b/corrupt", "b/empty"]


def test_other_parameters_refused_then_overwrite(tmp_path, capsys):
    src = corpus(tmp_path / "in")
    out = tmp_path / "store"
    assert run(["features", "symbolic", str(src), "--out", str(out)], capsys)[0] == 0
    code, _, err = run(
        ["features", "symbolic", str(src), "--out", str(out), "--form", "jsymbolic"], capsys
    )
    assert code == 2 and "refusing to mix" in err and "params.form" in err
    code, _, _ = run(
        ["features", "symbolic", str(src), "--out", str(out), "--form", "jsymbolic", "--overwrite"],
        capsys,
    )
    assert code == 0
    st = FeatureStore.open(out)
    assert st.params["form"] == "jsymbolic" and st.vectors("melodic_interval").shape == (3, 128)


def test_lists_metadata_and_segments(tmp_path, capsys):
    src = corpus(tmp_path / "in")
    (src / "list.txt").write_text("# two files\na/one.mid\n\nb/three.midi\n")
    (src / "list.csv").write_text(
        "path,track_id,genre\na/one.mid,first,baroque\nb/three.midi,,jazz\n"
    )
    (tmp_path / "meta.csv").write_text("track_id,composer\na/one,Bach\n")
    code, _, _ = run(
        [
            "features",
            "symbolic",
            str(src / "list.txt"),
            "--out",
            str(tmp_path / "s1"),
            "--metadata",
            str(tmp_path / "meta.csv"),
        ],
        capsys,
    )
    assert code == 0
    st = FeatureStore.open(tmp_path / "s1")
    assert st.track_ids.tolist() == ["a/one", "b/three"]
    assert st.metadata.loc["a/one", "composer"] == "Bach"
    code, _, _ = run(
        ["features", "symbolic", str(src / "list.csv"), "--out", str(tmp_path / "s2")], capsys
    )
    st = FeatureStore.open(tmp_path / "s2")
    assert st.track_ids.tolist() == ["first", "b/three"]
    assert st.metadata["genre"].tolist() == ["baroque", "jazz"]
    code, _, _ = run(
        [
            "features",
            "symbolic",
            str(src / "a"),
            "--out",
            str(tmp_path / "s3"),
            "--segment-seconds",
            "0.5",
        ],
        capsys,
    )
    assert code == 0
    st = FeatureStore.open(tmp_path / "s3")
    assert st.track_ids.tolist() == ["one#0000", "one#0001", "two#0000"]  # 1.0 s and 0.4 s long
    assert st.metadata["source_track"].tolist() == ["one", "one", "two"]
    np.testing.assert_allclose(st.metadata["start"], [0.0, 0.5, 0.0])
    assert st.params["segments"] == {"seconds": 0.5, "hop": None}
    code, _, _ = run(
        [
            "features",
            "symbolic",
            str(src / "a"),
            "--out",
            str(tmp_path / "s3"),
            "--segment-seconds",
            "0.5",
        ],
        capsys,
    )
    assert code == 0 and len(FeatureStore.open(tmp_path / "s3")) == 3
    code, _, _ = run(
        [
            "features",
            "symbolic",
            str(src / "a" / "one.mid"),
            "--out",
            str(tmp_path / "s4"),
            "--segment-notes",
            "2",
        ],
        capsys,
    )
    assert FeatureStore.open(tmp_path / "s4").track_ids.tolist() == ["one#0000", "one#0001"]


def test_clear_errors(tmp_path, capsys):
    src = corpus(tmp_path / "in")
    code, _, err = run(
        ["features", "symbolic", str(tmp_path / "missing"), "--out", str(tmp_path / "s")], capsys
    )
    assert code == 2 and "no such file or directory" in err and "Traceback" not in err
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    code, _, err = run(["features", "symbolic", str(src), "--out", str(blocker / "store")], capsys)
    assert code == 2 and "expected a directory" in err and "got a file" in err
    code, _, err = run(["features", "symbolic", str(src), "--out", str(blocker)], capsys)
    assert code == 2 and "not a feature-store directory" in err
    (tmp_path / "nothing").mkdir()
    code, _, err = run(
        ["features", "symbolic", str(tmp_path / "nothing"), "--out", str(tmp_path / "s")], capsys
    )
    assert code == 2 and "no symbolic files" in err
    code, _, err = run(
        ["features", "symbolic", str(src), "--out", str(tmp_path / "s"), "--param", "frames=3"],
        capsys,
    )
    assert code == 2 and "keywords among" in err
    code, _, err = run(
        ["features", "symbolic", str(src), "--out", str(tmp_path / "s"), "--hop", "2"], capsys
    )
    assert code == 2 and "--hop" in err
    code, _, err = run(
        ["features", "symbolic", str(src), "--out", str(tmp_path / "s"), "--workers", "0"], capsys
    )
    assert code == 2 and "workers" in err


def test_duplicate_ids_in_list(tmp_path):
    src = corpus(tmp_path / "in")
    (src / "dups.csv").write_text("path,track_id\na/one.mid,x\nb/three.midi,x\n")
    with pytest.raises(Exception, match="unique track ids"):
        collect_inputs(src / "dups.csv", modality="symbolic")


def test_audio_branch_without_extractor(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "aria_tda.features.audio", None)  # as if absent
    (tmp_path / "x.wav").write_bytes(b"RIFF")
    code, _, err = run(["features", "audio", str(tmp_path), "--out", str(tmp_path / "s")], capsys)
    assert code == 2 and "aria_tda.features.audio" in err


def test_audio_branch_plumbing(tmp_path, monkeypatch, capsys):
    """The audio branch with a stand-in extractor of the contracted shape (vectors + a sequence)."""
    fake = types.ModuleType("aria_tda.features.audio")

    def extract_file(path, *, n=3):
        data = open(path, "rb").read()
        if not data:
            raise ValueError("silent")
        return {"chroma": np.full(12, len(data) / 100.0), "chord_progression": [len(data) % 12, n]}

    fake.extract_file = extract_file
    monkeypatch.setitem(sys.modules, "aria_tda.features.audio", fake)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.wav").write_bytes(b"x" * 50)
    (tmp_path / "in" / "b.flac").write_bytes(b"")
    code, _, _ = run(
        ["features", "audio", str(tmp_path / "in"), "--out", str(tmp_path / "s"), "--param", "n=7"],
        capsys,
    )
    assert code == 0
    st = FeatureStore.open(tmp_path / "s")
    assert st.modality == "audio" and st.track_ids.tolist() == ["a"]
    np.testing.assert_allclose(st.vectors("chroma"), np.full((1, 12), 0.5))
    assert st.sequences("chord_progression")[0].tolist() == [50 % 12, 7]
    assert st.params == {"n": 7} and st.errors["track_id"].tolist() == ["b"]


@pytest.mark.slow
def test_parallel_workers_give_the_same_store(tmp_path, capsys):
    src = corpus(tmp_path / "in")
    for i in range(6):
        save(
            make_midi([[*note(0, 96, 60 + i), *note(96, 192, 64 + i)]]), src / "more" / f"m{i}.mid"
        )
    assert run(["features", "symbolic", str(src), "--out", str(tmp_path / "s1")], capsys)[0] == 0
    assert (
        run(
            [
                "features",
                "symbolic",
                str(src),
                "--out",
                str(tmp_path / "s2"),
                "--workers",
                "2",
                "--flush-every",
                "4",
            ],
            capsys,
        )[0]
        == 0
    )
    a, b = FeatureStore.open(tmp_path / "s1"), FeatureStore.open(tmp_path / "s2")
    assert a.track_ids.tolist() == b.track_ids.tolist()
    for name in a.feature_names:
        np.testing.assert_array_equal(a.vectors(name), b.vectors(name))
    assert sorted(a.errors["path"]) == sorted(b.errors["path"])


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("aria_tda.features.audio") is None, reason="no audio extractor"
)
def test_audio_branch_with_the_real_extractor(tmp_path, capsys):
    sf = pytest.importorskip("soundfile")
    from aria_tda.features.registry import features as registry_features

    sr = 48000
    t = np.arange(4 * sr) / sr
    (tmp_path / "in").mkdir()
    sf.write(
        tmp_path / "in" / "tone.wav",
        0.3 * np.sin(2 * np.pi * 220 * t) * (np.sin(2 * np.pi * 2 * t) > 0),
        sr,
    )
    sf.write(tmp_path / "in" / "silent.wav", np.zeros(sr), sr)
    code, _, _ = run(
        ["features", "audio", str(tmp_path / "in"), "--out", str(tmp_path / "s")], capsys
    )
    assert code == 0
    st = FeatureStore.open(tmp_path / "s")
    assert st.track_ids.tolist() == ["tone"] and st.errors["track_id"].tolist() == ["silent"]
    for spec in registry_features("audio"):
        if spec.kind == "vector":
            assert st.vectors(spec.name).shape == (1, spec.dim)
        else:
            assert st.feature_specs[spec.name] == {"kind": "sequence"}
