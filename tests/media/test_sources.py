"""resolve_media: where each query's and training item's music lies, for a hand-built user study
(:mod:`media._userstudy`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aria_tda.errors import FileFormatError, ParameterError
from aria_tda.features.store import write_store
from aria_tda.media.sources import MediaIndex, MediaRef, media_kind, resolve_media
from aria_tda.results import write_results_meta
from media._userstudy import TPQ, make_user_study


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> dict[str, Path]:
    return make_user_study(tmp_path_factory.mktemp("user-study"))


@pytest.fixture
def index(study) -> MediaIndex:
    return resolve_media(study["results"])


# ----------------------------------------------------------------------------- queries


def test_a_query_by_index_or_id_names_its_file_resolved_against_the_queries_folder(index, study):
    by_index, by_text, by_id = index.query(0), index.query("0"), index.query("q0")
    assert by_index == by_text == by_id
    assert by_index.item_id == "q0" and by_index.role == "query"
    assert by_index.path == study["qdir"] / "gen" / "q0.mid"
    assert by_index.kind == "midi" and by_index.playable
    assert (by_index.start, by_index.end, by_index.unit) == (None, None, "s")


def test_a_query_window_comes_from_the_queries_file(index, study):
    ref = index.query("q1")
    assert ref.kind == "audio" and ref.path == study["qdir"] / "gen" / "q1.wav"
    assert (ref.start, ref.end, ref.unit) == (0.5, 2.0, "s")


def test_a_missing_query_file_is_named_not_raised(index, study):
    ref = index.query(2)
    assert not ref.playable and ref.path == study["qdir"] / "gen" / "q2-missing.mid"
    assert ref.missing == f"query file {study['qdir'] / 'gen' / 'q2-missing.mid'} does not exist"


def test_a_query_without_an_entry_or_unknown_is_named(index, study):
    blank = index.query("q3")
    assert blank.path is None and "'media' entry for query q3" in blank.missing
    assert str(study["queries"]) in blank.missing
    unknown = index.query("q99")
    assert unknown.item_id == "q99" and "'q99' is not in the queries file" in unknown.missing
    assert "is not in" in index.query(17).missing


def test_a_queries_file_without_a_media_column_says_so(tmp_path, study):
    qpath = tmp_path / "q.csv"
    pd.DataFrame({"query": [0], "genre": ["x"]}).to_csv(qpath, index=False)
    results = tmp_path / "r"
    results.mkdir()
    write_results_meta(results, {"study": {"queries": str(qpath)}, "settings": []})
    ref = resolve_media(results).query(0)
    assert ref.missing == (
        f"no media column (media, audio, midi, path or file) in the queries file {qpath}"
    )


def test_without_a_queries_file_the_copy_in_the_results_folder_is_used(tmp_path, study):
    results = tmp_path / "r"
    results.mkdir()
    write_results_meta(results, {"study": {"queries": str(tmp_path / "moved.csv")},
                                 "settings": []})
    gone = resolve_media(results).query(0)
    assert str(tmp_path / "moved.csv") in gone.missing and "does not exist" in gone.missing
    (results / "clips").mkdir()
    (results / "clips" / "a.mid").write_bytes(study["plain"].read_bytes())
    pd.DataFrame({"query": [0], "midi": ["clips/a.mid"]}).to_csv(results / "queries.csv",
                                                                  index=False)
    ref = resolve_media(results).query(0)
    assert ref.playable and ref.path == results / "clips" / "a.mid" and ref.item_id == "0"


def test_no_queries_at_all_is_a_sentence(tmp_path):
    results = tmp_path / "r"
    results.mkdir()
    write_results_meta(results, {"study": {}, "settings": []})
    ref = resolve_media(results).query(0)
    assert ref.missing.startswith("results.json names no queries file")


# ----------------------------------------------------------------------------- training items


def test_a_track_names_its_source_and_metadata_window(index, study):
    tempo = index.train("t-tempo")
    assert tempo.path == study["tempo"] and tempo.kind == "midi" and tempo.role == "train"
    assert (tempo.start, tempo.end, tempo.unit) == (2 * TPQ, 6 * TPQ, "ticks")
    plain = index.train("t-plain")  # relative source: resolved against the store's folder
    assert plain.path == study["plain"] and (plain.start, plain.end, plain.unit) == (1, 3, "s")
    whole = index.train("t-wav")
    assert whole.kind == "audio" and (whole.start, whole.end) == (None, None)


def test_a_segment_id_gets_its_tracks_file_and_the_segment_maps_window(index, study):
    seg = index.train("t-wav#1")
    assert seg.item_id == "t-wav#1" and seg.path == study["wav"]
    assert (seg.start, seg.end, seg.unit) == (2.5, 5.0, "s")
    ticks = index.train("t-tempo#1")
    assert ticks.path == study["tempo"] and (ticks.start, ticks.end) == (5 * TPQ, 7 * TPQ)
    assert ticks.unit == "ticks"
    assert index.segments_of("t-wav") == ["t-wav#0", "t-wav#1"]
    assert index.segments_of("t-plain") == []


def test_missing_training_media_are_sentences_naming_what_is_missing(index, study):
    gone = index.train("t-gone")
    assert gone.missing == f"training file {study['corpus'] / 'gone.wav'} does not exist"
    blank = index.train("t-blank")
    assert "no 'source' entry for track 't-blank'" in blank.missing
    unknown = index.train("nobody")
    assert "'nobody' is not a track of the feature store" in unknown.missing
    assert str(study["segments"]) in unknown.missing
    orphan = index.train("t-zzz#0")
    assert "track 't-zzz' of segment 't-zzz#0'" in orphan.missing


def test_a_setting_limits_the_segment_maps_searched(study):
    only_plain = resolve_media(study["results"], setting="plain")
    assert only_plain.segment_maps == []
    assert "is not a track" in only_plain.train("t-wav#1").missing
    assert resolve_media(study["results"], setting="seg").train("t-wav#1").playable
    with pytest.raises(ParameterError, match="setting: expected one of 'seg', 'plain'"):
        resolve_media(study["results"], setting="nope")


def test_a_loaded_results_folder_gives_the_same_refs(study):
    from aria_tda.report.load import load_results

    data = load_results(study["results"])
    a, b = resolve_media(data), resolve_media(study["results"])
    for item in ("t-tempo", "t-wav#0", "t-gone"):
        assert a.train(item) == b.train(item)
    assert a.query("q1") == b.query("q1")


def test_a_store_without_a_source_column_or_no_store_says_so(tmp_path):
    store = write_store(tmp_path / "s", modality="symbolic", track_ids=["a"],
                        features={"f": np.zeros((1, 1))}, metadata=pd.DataFrame({"genre": ["x"]},
                                                                                index=["a"]))
    results = tmp_path / "r"
    results.mkdir()
    write_results_meta(results, {"study": {"feature_store": str(store)}, "settings": []})
    assert resolve_media(results).train("a").missing == (
        f"no source column (source, path, file or media) in the feature store metadata of {store}"
    )
    write_results_meta(results, {"study": {"feature_store": str(tmp_path / "x")},
                                 "settings": []})
    assert resolve_media(results).train("a").missing == (
        f"the feature store {tmp_path / 'x'} does not exist"
    )


@pytest.mark.parametrize(
    ("row", "fragment"),
    [
        ({"start": 3.0, "end": 1.0}, "gives an empty window (start 3, end 1)"),
        ({"start": "x", "end": 1.0}, "not a pair of numbers"),
        ({"start": 0.0, "end": 1.0, "unit": "beats"}, "window unit 'beats'"),
        ({"start": -1.0, "end": 1.0}, "starting before 0"),
        ({"start_tick": 0, "end_tick": 96, "kind": "audio"}, "is audio, but its window is given"),
    ],
)
def test_a_window_that_makes_no_sense_is_named(tmp_path, study, row, fragment):
    src = study["wav"] if row.pop("kind", None) == "audio" else study["plain"]
    store = write_store(tmp_path / "s", modality="symbolic", track_ids=["a"],
                        features={"f": np.zeros((1, 1))},
                        metadata=[{"source": str(src), **{k: str(v) for k, v in row.items()}}])
    results = tmp_path / "r"
    results.mkdir()
    write_results_meta(results, {"study": {"feature_store": str(store)}, "settings": []})
    ref = resolve_media(results).train("a")
    assert not ref.playable and fragment in ref.missing


def test_an_unknown_suffix_is_named(tmp_path, index):
    assert media_kind("x.FLAC") == "audio" and media_kind("x.Mid") == "midi"
    assert media_kind("x.txt") is None
    odd = tmp_path / "notes.txt"
    odd.write_text("x")
    store = write_store(tmp_path / "s", modality="symbolic", track_ids=["a"],
                        features={"f": np.zeros((1, 1))}, metadata=[{"source": str(odd)}])
    results = tmp_path / "r"
    results.mkdir()
    write_results_meta(results, {"study": {"feature_store": str(store)}, "settings": []})
    ref = resolve_media(results).train("a")
    assert not ref.playable and f"training file {odd} is neither audio" in ref.missing


def test_a_folder_that_is_not_a_results_folder_raises(tmp_path):
    with pytest.raises(FileFormatError, match="not an ARIA results folder"):
        resolve_media(tmp_path)
    with pytest.raises(ParameterError, match="results: expected a results folder"):
        resolve_media(3)


def test_a_ref_is_a_frozen_value():
    ref = MediaRef("a", "train", None, None, None, None, "s", "gone")
    with pytest.raises(AttributeError):
        ref.path = Path("x")  # type: ignore[misc]
    assert not ref.playable
