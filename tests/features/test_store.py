"""Feature store: round trips, missing values, metadata, errors, resumable appends, atomicity."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aria_tda.errors import DataError, FileFormatError, ManifestMismatchError, ParameterError
from aria_tda.features.store import FeatureStore, StoreWriter, write_store


def sample(rng, n=5):
    x = rng.normal(size=(n, 3))
    x[1] = np.nan
    seqs = [rng.integers(0, 12, int(k)) for k in rng.integers(0, 9, n)]
    seqs[2] = None
    seqs[3] = np.array([], dtype=np.int64)
    return [f"t{i}" for i in range(n)], {
        "mfcc": x,
        "chord_progression": seqs,
        "tempo": rng.normal(size=n),
    }


@pytest.mark.parametrize("name", ["store", "store.parquet"])
def test_round_trip(tmp_path, rng, name):
    ids, feats = sample(rng)
    meta = pd.DataFrame(
        {
            "track_id": ids,
            "genre": ["a", "b", None, "a", "c"],
            "duration": [1.0, 2.0, 3.0, 4.0, 5.0],
        }
    )
    path = write_store(
        tmp_path / name,
        modality="audio",
        track_ids=ids,
        features=feats,
        metadata=meta,
        params={"sr": 48000, "hop": 512},
        errors=[("bad.wav", "silent"), {"path": "x.wav", "error": "corrupt", "track_id": "x"}],
        versions={"librosa": "0.11"},
    )
    st = FeatureStore.open(path)
    assert st.modality == "audio" and len(st) == 5
    assert st.track_ids.tolist() == ids
    assert st.feature_names == ["mfcc", "chord_progression", "tempo"]
    assert st.feature_specs["mfcc"] == {"kind": "vector", "dim": 3}
    assert st.feature_specs["chord_progression"] == {"kind": "sequence"}
    np.testing.assert_array_equal(st.vectors("mfcc"), feats["mfcc"])  # NaN row kept as NaN
    np.testing.assert_array_equal(st.vectors("tempo")[:, 0], feats["tempo"])
    got = st.sequences("chord_progression")
    assert got[2] is None and got[3].size == 0 and got[3].dtype == np.int64
    for a, b in zip(got, feats["chord_progression"], strict=True):
        if b is not None:
            np.testing.assert_array_equal(a, b)
    assert st.metadata.loc["t1", "genre"] == "b" and pd.isna(st.metadata.loc["t2", "genre"])
    assert st.metadata.index.name == "track_id"
    assert st.params == {"sr": 48000, "hop": 512}
    assert st.versions["librosa"] == "0.11" and "aria" in st.versions
    assert st.errors[["path", "error"]].values.tolist() == [
        ["bad.wav", "silent"],
        ["x.wav", "corrupt"],
    ]
    assert "t3" in st and "zz" not in st


def test_metadata_forms(tmp_path):
    ids = ["a", "b"]
    f = {"x": np.ones((2, 1))}
    for meta in (
        {"genre": ["g1", "g2"]},
        [{"genre": "g1"}, {"genre": "g2"}],
        pd.DataFrame({"genre": ["g2", "g1"]}, index=pd.Index(["b", "a"], name="track_id")),
    ):
        st = FeatureStore.open(
            write_store(
                tmp_path / "s", modality="symbolic", track_ids=ids, features=f, metadata=meta
            )
        )
        assert st.metadata["genre"].tolist() == ["g1", "g2"]


def test_write_errors(tmp_path):
    f = {"x": np.ones((2, 1))}
    with pytest.raises(DataError, match="unique"):
        write_store(tmp_path / "s", modality="symbolic", track_ids=["a", "a"], features=f)
    with pytest.raises(DataError, match="shape"):
        write_store(tmp_path / "s", modality="symbolic", track_ids=["a", "b", "c"], features=f)
    with pytest.raises(ParameterError, match="modality"):
        write_store(tmp_path / "s", modality="video", track_ids=["a", "b"], features=f)
    with pytest.raises(ParameterError, match="feature names"):
        write_store(
            tmp_path / "s",
            modality="symbolic",
            track_ids=["a", "b"],
            features={"track_id": np.ones((2, 1))},
        )
    with pytest.raises(DataError, match="widths"):
        write_store(
            tmp_path / "s",
            modality="symbolic",
            track_ids=["a", "b"],
            features={"x": [np.ones(2), np.ones(3)]},
        )
    with pytest.raises(DataError, match="metadata"):
        write_store(
            tmp_path / "s",
            modality="symbolic",
            track_ids=["a", "b"],
            features=f,
            metadata={"g": [1]},
        )
    assert not (tmp_path / "s").exists()


def test_open_errors(tmp_path):
    with pytest.raises(FileFormatError, match="no such feature store"):
        FeatureStore.open(tmp_path / "none")
    (tmp_path / "d").mkdir()
    with pytest.raises(FileFormatError, match="no manifest"):
        FeatureStore.open(tmp_path / "d")
    (tmp_path / "d" / "aria-manifest.json").write_text('{"kind": "aria-results"}')
    with pytest.raises(ManifestMismatchError, match="not an ARIA feature store"):
        FeatureStore.open(tmp_path / "d")
    st = FeatureStore.open(
        write_store(
            tmp_path / "s",
            modality="symbolic",
            track_ids=["a"],
            features={"x": np.ones((1, 2)), "s": [np.array([1])]},
        )
    )
    with pytest.raises(ParameterError, match="one of"):
        st.vectors("nope")
    with pytest.raises(ParameterError, match="a vector feature"):
        st.vectors("s")


def test_write_is_atomic(tmp_path, monkeypatch):
    path = write_store(
        tmp_path / "s", modality="symbolic", track_ids=["a"], features={"x": np.ones((1, 2))}
    )
    import pyarrow.parquet as pq

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", boom)
    with pytest.raises(OSError, match="disk full"):
        write_store(path, modality="symbolic", track_ids=["b"], features={"x": np.zeros((1, 2))})
    monkeypatch.undo()
    st = FeatureStore.open(path)
    assert st.track_ids.tolist() == ["a"]
    assert [p.name for p in tmp_path.iterdir()] == ["s"]  # no temporaries left behind


def test_writer_appends_and_resumes(tmp_path):
    w = StoreWriter(tmp_path / "s", modality="symbolic", params={"form": "paper", "fps": 50.0})
    w.append(
        ["a", "b"], {"x": np.array([[1.0, 2.0], [3.0, 4.0]])}, [{"genre": "g"}, {"genre": "h"}]
    )
    w.set_errors([{"path": "c.mid", "track_id": "c", "error": "FileFormatError: bad"}])
    st = FeatureStore.open(tmp_path / "s")
    assert st.track_ids.tolist() == ["a", "b"] and len(st.errors) == 1
    assert st.manifest["n_tracks"] == 2 and st.manifest["n_errors"] == 1

    w.close()  # one open writer per store
    w2 = StoreWriter(tmp_path / "s", modality="symbolic", params={"form": "paper", "fps": 50.0})
    assert w2.done == {"a", "b"} and w2.error_paths == {"c.mid"}
    w2.append(["c", "a"], {"x": np.array([[5.0, 6.0], [7.0, 8.0]])})  # c recovered, a rewritten
    st = FeatureStore.open(tmp_path / "s")
    assert st.track_ids.tolist() == ["a", "b", "c"]
    np.testing.assert_array_equal(st.vectors("x"), [[7, 8], [3, 4], [5, 6]])
    assert len(st.errors) == 0
    with pytest.raises(DataError, match="as stored"):
        w2.append(["d"], {"x": np.ones((1, 3))})


def test_writer_refuses_other_settings(tmp_path):
    StoreWriter(tmp_path / "s", modality="symbolic", params={"form": "paper"}).append(
        ["a"], {"x": np.ones((1, 1))}
    )
    with pytest.raises(ManifestMismatchError, match=r"params\.form"):
        StoreWriter(tmp_path / "s", modality="symbolic", params={"form": "jsymbolic"})
    with pytest.raises(ManifestMismatchError, match="params"):
        StoreWriter(tmp_path / "s", modality="symbolic", params={"form": "paper", "fps": 25})
    with pytest.raises(ManifestMismatchError, match="modality"):
        StoreWriter(tmp_path / "s", modality="audio", params={"form": "paper"})
    w = StoreWriter(tmp_path / "s", modality="audio", params={}, overwrite=True)
    assert w.done == set()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "file.txt").write_text("x")
    with pytest.raises(FileFormatError, match="non-empty directory"):
        StoreWriter(tmp_path / "other", modality="audio")


def test_large_vectors_fast_path(tmp_path, rng):
    x = rng.normal(size=(2000, 168))
    x[::7] = np.nan
    ids = [f"id{i:05d}" for i in range(2000)]
    st = FeatureStore.open(
        write_store(tmp_path / "s", modality="audio", track_ids=ids, features={"cqt": x})
    )
    np.testing.assert_array_equal(st.vectors("cqt"), x)


def test_registry_kinds_decide_sequences(tmp_path):
    # all-empty / all-missing chord progressions are still a sequence feature
    st = FeatureStore.open(
        write_store(
            tmp_path / "s",
            modality="audio",
            track_ids=["a", "b"],
            features={"chord_progression": [[], None]},
        )
    )
    assert st.feature_specs["chord_progression"] == {"kind": "sequence"}
    got = st.sequences("chord_progression")
    assert got[0].size == 0 and got[1] is None


# --------------------------------------------------------------------------- store vs manifest


def _two_part_store(tmp_path):
    w = StoreWriter(tmp_path / "s", modality="symbolic", params={"p": 1})
    w.append(["a", "b"], {"pitch_range": np.array([[1.0], [2.0]])})
    w.append(["c"], {"pitch_range": np.array([[3.0]])})
    return tmp_path / "s"


def _manifest(path):
    import json

    return json.loads((path / "aria-manifest.json").read_text())


def _write_manifest(path, man):
    import json

    (path / "aria-manifest.json").write_text(json.dumps(man))


def test_manifest_lists_its_parts(tmp_path):
    path = _two_part_store(tmp_path)
    man = _manifest(path)
    from aria_tda._fingerprint import hash_bytes

    assert man["parts"] == [
        {"file": "part-00000.parquet", "rows": 2,
         "digest": hash_bytes(path / "part-00000.parquet")},
        {"file": "part-00001.parquet", "rows": 1,
         "digest": hash_bytes(path / "part-00001.parquet")},
    ]
    assert FeatureStore.open(path).track_ids.tolist() == ["a", "b", "c"]


def test_missing_part_file_is_an_error(tmp_path):
    path = _two_part_store(tmp_path)
    (path / "part-00001.parquet").unlink()
    with pytest.raises(FileFormatError, match=r"incomplete: part-00001.parquet .*missing"):
        FeatureStore.open(path)


def test_part_with_other_rows_is_an_error(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = _two_part_store(tmp_path)
    t = pq.read_table(path / "part-00001.parquet")
    extra = pa.table(
        {"track_id": ["c", "d"], "pitch_range": t.column("pitch_range").chunk(0).take([0, 0])}
    )
    pq.write_table(extra, path / "part-00001.parquet")
    with pytest.raises(FileFormatError, match="holds 2 rows, the manifest says 1"):
        FeatureStore.open(path)


def test_wrong_track_count_or_columns_is_an_error(tmp_path):
    import pyarrow.parquet as pq

    path = _two_part_store(tmp_path)
    man = _manifest(path)
    _write_manifest(path, {**man, "n_tracks": 7})
    with pytest.raises(FileFormatError, match="hold 3 tracks, the manifest says 7"):
        FeatureStore.open(path)
    _write_manifest(path, {**man, "features": {}})
    with pytest.raises(FileFormatError, match="'pitch_range' are not among its features"):
        FeatureStore.open(path)
    # a one-file store whose manifest counts other tracks
    single = write_store(
        tmp_path / "x.parquet", modality="audio", track_ids=["a"], features={"tempo": np.ones(1)}
    )
    pq.write_table(pq.read_table(single).slice(0, 0), single)
    with pytest.raises(FileFormatError, match="hold 0 tracks, the manifest says 1"):
        FeatureStore.open(single)


def test_unlisted_part_is_an_interrupted_write(tmp_path):
    """A part written but not committed to the manifest (kill -9 between the two) is ignored by
    readers and removed by a resumed writer."""
    import shutil

    path = _two_part_store(tmp_path)
    man = _manifest(path)
    shutil.copy(path / "part-00001.parquet", path / "part-00002.parquet")
    (path / ".part-00003.parquet.tmp-deadbeef").write_bytes(b"half")
    assert FeatureStore.open(path).track_ids.tolist() == ["a", "b", "c"]
    w = StoreWriter(path, modality="symbolic", params={"p": 1})
    assert w.done == {"a", "b", "c"}
    assert not (path / "part-00002.parquet").exists()
    assert not (path / ".part-00003.parquet.tmp-deadbeef").exists()
    w.append(["d"], {"pitch_range": np.array([[4.0]])})
    assert FeatureStore.open(path).track_ids.tolist() == ["a", "b", "c", "d"]
    assert _manifest(path)["parts"][:2] == man["parts"]


def test_store_written_before_parts_were_listed_still_opens(tmp_path):
    path = _two_part_store(tmp_path)
    man = _manifest(path)
    del man["parts"]
    _write_manifest(path, man)
    assert FeatureStore.open(path).track_ids.tolist() == ["a", "b", "c"]
    (path / "part-00001.parquet").unlink()  # the count still catches a lost part
    with pytest.raises(FileFormatError, match="hold 2 tracks, the manifest says 3"):
        FeatureStore.open(path)


def test_wrong_modality_names_it_with_the_right_article(tmp_path):
    path = _two_part_store(tmp_path)
    with pytest.raises(DataError, match="expected an audio feature store, got a symbolic store"):
        FeatureStore.open(path).check_modality("audio")
    FeatureStore.open(path).check_modality("symbolic")
    from aria_tda.features.registry import feature_spec

    with pytest.raises(ParameterError, match="expected an audio feature name"):
        feature_spec("audio", "nope")
