"""The embedded audio corpus: version plan, MIDI versions, rendering, cache and failures.

The plan tests use synthetic work tables (no music21); the build tests render a handful of
short (1-2 s) tracks of real music21 works; the slow test builds a small 30 s corpus with the
four-plus genres of the defaults.
"""

from __future__ import annotations

import io
import shutil
import time

import numpy as np
import pandas as pd
import pytest

from aria_tda.errors import DataError, ManifestMismatchError, ParameterError
from aria_tda_experiments.audio import corpus as ac
from aria_tda_experiments.audio.corpus import build_audio_corpus, load_audio_corpus
from aria_tda_experiments.audio.versions import (
    INSTRUMENT_FAMILIES,
    TRACK_COLUMNS,
    AudioCorpusConfig,
    make_version_midi,
    plan_versions,
)


def _works(n_per: dict[str, int]) -> pd.DataFrame:
    rows = [{"work_id": f"{c}/w{i:02d}.xml", "collection": c}
            for c, n in n_per.items() for i in range(n)]
    return pd.DataFrame(rows)


def _check_split(tracks: pd.DataFrame, versions: int) -> None:
    """Split by work; planted = the extra version of a training work; distinct families."""
    train_works = set(tracks.loc[tracks["split"] == "train", "work_id"])
    test_works = set(tracks.loc[tracks["split"] == "test", "work_id"])
    assert train_works and test_works and not train_works & test_works
    planted = tracks[tracks["split"] == "planted"]
    assert set(planted["work_id"]) <= train_works
    assert not set(planted["track_id"]) & set(tracks.loc[tracks["split"] == "train", "track_id"])
    assert (planted["version"] == versions).all()
    assert tracks["track_id"].is_unique
    assert (tracks["track_id"] == tracks["work_id"] + "~v" + tracks["version"].astype(str)).all()
    for _, g in tracks.groupby("work_id"):
        assert g["instrument_family"].is_unique
    for fam, prog in zip(tracks["instrument_family"], tracks["program"], strict=True):
        assert prog in INSTRUMENT_FAMILIES[fam]


# --------------------------------------------------------------------------------------------
# config and plan (no rendering)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("field", "value"), [
    ("works_per_collection", 0),
    ("versions_per_work", 1),
    ("versions_per_work", len(INSTRUMENT_FAMILIES)),  # with planted works
    ("versions_per_work", len(INSTRUMENT_FAMILIES) + 1),
    ("planted_works", -1),
    ("test_fraction", 0.0),
    ("test_fraction", 1.0),
    ("collections", "bach"),
    ("collections", ()),
    ("collections", ("bach", "bach")),
    ("sr", 24000.5),
    ("track_seconds", 0.0),
    ("track_seconds", 1 / 7),
    ("tempo_max", 0.5),
    ("max_transpose", 13),
    ("seed", -1),
])
def test_bad_config_names_the_field(field, value):
    with pytest.raises(ParameterError, match=field):
        AudioCorpusConfig(**{field: value})


def test_every_family_is_a_version_without_planted_works():
    n = len(INSTRUMENT_FAMILIES)
    cfg = AudioCorpusConfig(versions_per_work=n, planted_works=0)
    works = pd.DataFrame({"work_id": ["a", "b", "c"], "collection": ["x", "x", "x"]})
    plan = plan_versions(works, config=cfg)
    assert len(plan) == 3 * n
    for _, rows in plan.groupby("work_id"):
        assert sorted(rows["instrument_family"]) == sorted(INSTRUMENT_FAMILIES)


def test_config_round_trips_through_its_dict():
    cfg = AudioCorpusConfig(collections=["bach", "palestrina"], works_per_collection=3)
    assert cfg.collections == ("bach", "palestrina")
    assert AudioCorpusConfig.from_mapping(cfg.to_dict()) == cfg
    assert cfg.n_samples == 30 * 24000
    assert cfg.digest() != cfg.replace(seed=1).digest()


def test_plan_splits_by_work_and_plants_versions_of_training_works():
    cfg = AudioCorpusConfig(versions_per_work=3, planted_works=4, test_fraction=0.25)
    works = _works({"bach": 8, "palestrina": 8, "ryansMammoth": 4, "joplin": 1})
    plan = plan_versions(works, config=cfg)
    assert list(plan.columns) == list(TRACK_COLUMNS[:-2])
    _check_split(plan, 3)
    assert plan["work_id"].nunique() == len(works)
    split_of = plan[plan["split"] != "planted"].groupby("work_id")["split"].agg(set)
    assert all(len(s) == 1 for s in split_of)  # every version of a work on one side
    n_test = plan[plan["split"] == "test"].groupby("collection")["work_id"].nunique()
    assert n_test.to_dict() == {"bach": 2, "palestrina": 2, "ryansMammoth": 1}  # joplin: 1 work
    planted = plan[plan["split"] == "planted"]
    assert len(planted) == 4 and planted["collection"].nunique() >= 3  # round-robin
    per_work = plan[plan["split"] != "planted"].groupby("work_id").size()
    assert (per_work == 3).all()
    assert plan["tempo_scale"].between(cfg.tempo_min, cfg.tempo_max).all()
    assert plan["transpose"].abs().max() <= cfg.max_transpose
    genre = dict(zip(plan["collection"], plan["genre"], strict=True))
    assert genre == {"bach": "chorale", "palestrina": "renaissance mass",
                     "ryansMammoth": "fiddle tune", "joplin": "ragtime"}


def test_version_plan_is_deterministic_and_stable():
    works = _works({"bach": 6, "monteverdi": 6})
    cfg = AudioCorpusConfig(planted_works=2, seed=3)
    a = plan_versions(works, config=cfg)
    pd.testing.assert_frame_equal(a, plan_versions(works.iloc[::-1], config=cfg))
    other = plan_versions(works, config=cfg.replace(seed=4))
    assert not a[["program", "tempo_scale"]].equals(other[["program", "tempo_scale"]])
    # a work's versions do not depend on the other works or on the number of versions
    cols = ["track_id", "instrument_family", "program", "tempo_scale", "transpose"]
    more = plan_versions(_works({"bach": 9, "monteverdi": 6}), config=cfg.replace(
        versions_per_work=4))
    merged = a[cols].merge(more[cols], on="track_id", suffixes=("", "_more"))
    assert len(merged) == len(a)
    for c in cols[1:]:
        assert (merged[c] == merged[c + "_more"]).all()


def test_plan_clips_planted_and_refuses_an_unsplittable_set():
    plan = plan_versions(_works({"bach": 3}), config=AudioCorpusConfig(planted_works=10))
    train = set(plan.loc[plan["split"] == "train", "work_id"])
    assert set(plan.loc[plan["split"] == "planted", "work_id"]) == train
    with pytest.raises(DataError, match="no test"):
        plan_versions(_works({"bach": 1, "joplin": 1}), config=AudioCorpusConfig())


# --------------------------------------------------------------------------------------------
# MIDI versions (no rendering)
# --------------------------------------------------------------------------------------------


def _two_part_midi() -> bytes:
    mido = pytest.importorskip("mido")
    from aria_tda.features.audio.render import midi_from_notes

    mid = midi_from_notes([(0, 1, 60), (1, 1, 64, 90, 1), (1, 1, 64)], bpm=120)  # 1 s long
    for tr in mid.tracks:  # music21 style: every part on channel 0
        for i, msg in enumerate(tr):
            if not msg.is_meta:
                tr[i] = msg.copy(channel=0)
    buf = io.BytesIO()
    mid.save(file=buf)
    assert mido.MidiFile(file=io.BytesIO(buf.getvalue())).length == pytest.approx(1.0)
    return buf.getvalue()


def _notes(mid) -> list[tuple[float, int, int]]:
    t, out = 0.0, []
    for msg in mid:
        t += msg.time
        if msg.type == "note_on" and msg.velocity > 0:
            out.append((round(t, 3), msg.note, msg.channel))
    return out


def test_version_midi_loops_transposes_scales_and_separates_parts():
    data = _two_part_midi()
    once = make_version_midi(data, program=40)
    assert sorted(_notes(once)) == [(0.0, 60, 0), (0.5, 64, 0), (0.5, 64, 1)]
    progs = {(m.channel, m.program) for m in once if m.type == "program_change"}
    assert progs == {(0, 40), (1, 40)}
    v = make_version_midi(data, program=0, tempo_scale=2.0, transpose=-3, seconds=2.5)
    # 0.5 s long at double speed; repeats every 0.5 + LOOP_GAP = 1.0 s; cut at 2.5 s
    starts = sorted({t for t, _, _ in _notes(v)})
    assert starts == [0.0, 0.25, 1.0, 1.25, 2.0, 2.25]
    assert {n for _, n, _ in _notes(v)} == {57, 61}
    assert v.length <= 2.5 + 1e-9
    with pytest.raises(DataError, match="no notes"):
        mido = pytest.importorskip("mido")
        empty = mido.MidiFile()
        empty.tracks.append(mido.MidiTrack())
        make_version_midi(empty, program=0)


# --------------------------------------------------------------------------------------------
# real builds (a handful of short tracks)
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def needs_render():
    pytest.importorskip("music21")
    pytest.importorskip("soundfile")
    from aria_tda.errors import MissingDependencyError
    from aria_tda.features.audio.render import find_soundfont, import_fluidsynth

    try:
        import_fluidsynth()
        find_soundfont()
    except MissingDependencyError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def work_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("audio-works")


TINY = {"collections": ("ryansMammoth",), "works_per_collection": 2, "versions_per_work": 2,
        "planted_works": 1, "test_fraction": 0.5, "track_seconds": 2.0}


@pytest.fixture(scope="module")
def tiny_build(needs_render, work_cache, tmp_path_factory):
    out = tmp_path_factory.mktemp("audio-corpus") / "corpus"
    return build_audio_corpus(out, work_cache=work_cache, progress_bar=False, **TINY)


def test_tiny_build_tracks_split_and_audio(tiny_build):
    import soundfile as sf

    c = tiny_build
    assert list(c.tracks.columns) == list(TRACK_COLUMNS)
    assert len(c.tracks) == 5 and c.n_failed == 0
    assert (len(c.train), len(c.test), len(c.planted)) == (2, 2, 1)
    _check_split(c.tracks, 2)
    assert (c.tracks["genre"] == "fiddle tune").all()
    assert (c.tracks["duration"] == 2.0).all()
    for tid in c.tracks["track_id"]:
        info = sf.info(str(c.path(tid)))
        assert (info.samplerate, info.channels, info.frames) == (24000, 1, 48000)
        y, _ = sf.read(str(c.path(tid)), dtype="float32")
        rms = float(np.sqrt(np.mean(y.astype(np.float64) ** 2)))
        assert 0.02 < rms <= ac.TARGET_RMS + 1e-3 and np.abs(y).max() <= ac.PEAK_LIMIT + 1e-4
    assert c.paths("train") == [c.root / p for p in c.train["path"]]
    assert c.stats["n_rendered"] == 5 and c.stats["render_seconds_per_track"] > 0
    with pytest.raises(ParameterError, match="track_id"):
        c.path("nope~v0")
    loaded = load_audio_corpus(c.root)
    pd.testing.assert_frame_equal(loaded.tracks, c.tracks)
    assert loaded.config == c.config and loaded.summary() == c.summary()


def test_rebuild_reuses_the_corpus_and_its_wavs(tiny_build, work_cache, monkeypatch):
    c = tiny_build
    mtimes = {p: p.stat().st_mtime_ns for p in c.paths()}
    calls = []
    monkeypatch.setattr(ac, "_render_track", lambda job: calls.append(job) or 0.0)
    time.sleep(0.01)
    again = build_audio_corpus(c.root, work_cache=work_cache, **TINY)
    assert {p: p.stat().st_mtime_ns for p in again.paths()} == mtimes and not calls
    pd.testing.assert_frame_equal(again.tracks, c.tracks)
    # another config in the same folder: no manifest match, but every WAV it needs is there
    copy = c.root.parent / "copy"
    shutil.copytree(c.root, copy)
    fewer = build_audio_corpus(copy, work_cache=work_cache, progress_bar=False,
                               **{**TINY, "planted_works": 0})
    assert not calls and fewer.stats["n_reused"] == 4 and len(fewer.planted) == 0
    assert len(list((copy / "audio").glob("*.wav"))) == 4  # the planted WAV was removed
    with pytest.raises(ManifestMismatchError, match="other settings"):
        load_audio_corpus(copy, config=AudioCorpusConfig(**TINY))


def test_failing_work_is_counted_recorded_and_skipped(needs_render, work_cache, tmp_path,
                                                      monkeypatch):
    real_render, real_convert = ac._render_track, ac._convert_file
    bad_work: list[str] = []

    def render(job):
        if not bad_work and job["split"] == "train":
            bad_work.append(job["work_id"])  # the first training work rendered fails
        if bad_work and job["work_id"] == bad_work[0]:
            raise RuntimeError("boom")
        return real_render(job)

    skipped: list[str] = []

    def convert(args):
        if not skipped:  # the first file converted fails
            skipped.append(args[0])
            return [{"index": 0, "status": "failed", "error": "ParseError: bad file"}]
        return real_convert(args)

    monkeypatch.setattr(ac, "_render_track", render)
    monkeypatch.setattr(ac, "_convert_file", convert)
    cfg = {**TINY, "works_per_collection": 3, "planted_works": 0, "test_fraction": 0.34,
           "track_seconds": 1.0}
    c = build_audio_corpus(tmp_path / "c", work_cache=work_cache, progress_bar=False, **cfg)
    f = c.failures
    assert c.n_failed == 3 and sorted(f["stage"]) == ["convert", "render", "render"]
    conv = f[f["stage"] == "convert"].iloc[0]
    assert conv["work_id"] == "ryansMammoth/" + skipped[0].rsplit("/", 1)[-1]
    assert "ParseError" in conv["error"] and conv["track_id"] == ""
    rend = f[f["stage"] == "render"]
    assert set(rend["work_id"]) == set(bad_work) and rend["error"].str.contains("boom").all()
    assert bad_work[0] not in set(c.tracks["work_id"])
    assert c.tracks["work_id"].nunique() == 2  # 3 converted (the failed file replaced) - 1
    assert all(p.is_file() for p in c.paths())
    loaded = load_audio_corpus(c.root)
    pd.testing.assert_frame_equal(loaded.failures, f.astype(str))


def test_refuses_bad_arguments_and_foreign_folders(needs_render, tmp_path):
    from aria_tda.errors import FileFormatError
    from aria_tda.manifest import make_manifest, write_manifest

    with pytest.raises(ParameterError, match="collections"):
        build_audio_corpus(tmp_path / "x", collections=("noSuchFolder",), progress_bar=False)
    with pytest.raises(ParameterError, match="n_jobs"):
        build_audio_corpus(tmp_path / "x", n_jobs=0)
    with pytest.raises(ParameterError, match="config"):
        build_audio_corpus(tmp_path / "x", config=AudioCorpusConfig(), seed=1)
    write_manifest(tmp_path / "other", make_manifest("aria_tda_experiments.corpus"))
    with pytest.raises(FileFormatError, match="another artefact"):
        build_audio_corpus(tmp_path / "other")
    assert (tmp_path / "other" / "aria-manifest.json").is_file()
    with pytest.raises(FileFormatError, match="not an audio corpus"):
        load_audio_corpus(tmp_path / "other")


@pytest.mark.slow
def test_small_real_build_has_four_genres_of_30s_tracks(needs_render, work_cache, tmp_path):
    cfg = AudioCorpusConfig(works_per_collection=2, versions_per_work=2, planted_works=2,
                            test_fraction=0.5)
    start = time.perf_counter()
    c = build_audio_corpus(tmp_path / "c", config=cfg, work_cache=work_cache, n_jobs=2,
                           progress_bar=False)
    wall = time.perf_counter() - start
    assert c.tracks["genre"].nunique() >= 4
    _check_split(c.tracks, 2)
    assert (c.tracks["duration"] == 30.0).all() and len(c.planted) == 2
    import soundfile as sf

    for p in c.paths():
        info = sf.info(str(p))
        assert (info.samplerate, info.frames) == (24000, 720000)
    print(f"\n{len(c.tracks)} tracks, {c.n_failed} failed, build {wall:.1f} s, render "
          f"{c.stats['render_seconds_per_track']:.2f} s/track (per worker), {c.stats}")
