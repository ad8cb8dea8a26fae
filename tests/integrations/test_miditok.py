"""Tokenised corpora from miditok: windows, segment map, excerpts (music21's chorales)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

miditok = pytest.importorskip("miditok")
symusic = pytest.importorskip("symusic")
music21 = pytest.importorskip("music21")

from aria_tda.errors import DataError, ParameterError  # noqa: E402
from aria_tda.integrations.miditok import (  # noqa: E402
    SEGMENT_COLUMNS,
    default_tokenizer,
    tick_seconds,
    tokenize_corpus,
    write_corpus,
    write_excerpts,
)

L = 24


@pytest.fixture(scope="module")
def midi_files(tmp_path_factory):
    """Four Bach chorales from music21's corpus, written as MIDI."""
    folder = tmp_path_factory.mktemp("midi")
    out = []
    for path in sorted(music21.corpus.getComposer("bach"))[:4]:
        target = folder / f"{path.stem}.mid"
        music21.corpus.parse(path).write("midi", fp=target)
        out.append(target)
    return out


def test_windows_are_the_tokenizers_ids(midi_files):
    tok = default_tokenizer()
    corpus = tokenize_corpus(midi_files, tok, length=L, stride=L // 2)
    assert corpus.windows.dtype == np.int64 and corpus.windows.shape[1] == L
    assert list(corpus.segments.columns) == list(SEGMENT_COLUMNS)
    assert corpus.segments["row"].tolist() == list(range(len(corpus.windows)))
    assert corpus.tracks["track_id"].tolist() == [p.stem for p in midi_files]
    assert corpus.skipped.empty
    for path in midi_files:
        ids = np.asarray(tok.encode(symusic.Score(str(path))).ids)
        seg = corpus.segments[corpus.segments["track_id"] == path.stem]
        assert len(seg) == (ids.size - L) // (L // 2) + 1
        for r in seg.itertuples():
            np.testing.assert_array_equal(corpus.windows[r.row], ids[r.token_start : r.token_end])
        # times run forward; a window ends where the one L tokens later starts
        assert (np.diff(seg["start_beats"]) >= 0).all()
        assert (seg["end_beats"] >= seg["start_beats"]).all()
        assert (seg["end_seconds"] >= seg["start_seconds"]).all()
        ends, starts = seg["end_beats"].to_numpy(), seg["start_beats"].to_numpy()
        np.testing.assert_array_equal(ends[:-2], starts[2:])
        assert seg["start_beats"].iloc[0] == 0.0


def test_tick_seconds_equals_symusic_with_tempo_changes():
    score = symusic.Score(480)
    score.tempos.append(symusic.Tempo(0, 100.0))
    score.tempos.append(symusic.Tempo(960, 60.0))
    score.tempos.append(symusic.Tempo(2000, 150.0))
    track = symusic.Track()
    for t in (0, 100, 959, 960, 1500, 2000, 2600, 5000):
        track.notes.append(symusic.Note(t, 10, 60, 80))
    score.tracks.append(track)
    ticks = [n.time for n in score.tracks[0].notes]
    tempos = [(t.time, t.mspq) for t in score.tempos]
    want = [n.time for n in score.to("second").tracks[0].notes]
    np.testing.assert_allclose(tick_seconds(ticks, tempos, 480), want, rtol=1e-6)


def test_a_bad_file_is_recorded_and_skipped(midi_files, tmp_path):
    bad = tmp_path / "broken.mid"
    bad.write_bytes(b"MThd not really")
    tok = default_tokenizer()
    sizes = [len(tok.encode(symusic.Score(str(p))).ids) for p in midi_files]
    short = midi_files[int(np.argmin(sizes))]
    corpus = tokenize_corpus([*midi_files[:2], bad], length=L, root=tmp_path.parent)
    assert corpus.skipped["path"].tolist() == [str(bad)]
    assert "Error" in corpus.skipped["reason"].iloc[0]
    assert len(corpus.tracks) == 2
    with pytest.raises(DataError, match="all 1 MIDI files gave no window"):
        tokenize_corpus([bad], length=L)
    # a piece shorter than one window is recorded too
    n = min(sizes)
    longer = tokenize_corpus(midi_files, length=n + 1)
    assert short.stem in longer.skipped["track_id"].tolist()
    assert "no full window" in longer.skipped.set_index("track_id").loc[short.stem, "reason"]
    with pytest.raises(DataError, match="no full window"):
        tokenize_corpus([short], length=n + 1)


def test_written_corpus_feeds_aria(midi_files, tmp_path, rng):
    import aria_tda
    from aria_tda.features.extract import extract_to_store

    corpus = tokenize_corpus(midi_files[:3], length=L)
    paths = write_corpus(corpus, tmp_path / "corpus")
    np.testing.assert_array_equal(np.load(paths["windows"]), corpus.windows)
    seg = pd.read_csv(paths["segments"])
    assert seg["segment_id"].tolist() == corpus.segment_ids.tolist()
    # the segment map aggregates a score matrix to one row per piece
    scores = rng.normal(size=(len(corpus.windows), 4)).astype(np.float32)
    s_track = aria_tda.aggregate(scores, segments=paths["segments"], normalize="zscore")
    assert s_track.shape == (3, 4)
    assert list(s_track.row_ids) == [p.stem for p in midi_files[:3]]
    # tracks.csv is an input list of `aria-tda features symbolic`, with the same track ids
    stats = extract_to_store(paths["tracks"], tmp_path / "features", modality="symbolic",
                             progress=False)
    assert stats["n_errors"] == 0
    store = aria_tda.FeatureStore.open(tmp_path / "features")
    assert sorted(store.track_ids) == sorted(seg["track_id"].unique())


def test_excerpts_hold_each_windows_time_span(midi_files, tmp_path):
    corpus = tokenize_corpus(midi_files[:1], length=4 * L)
    listing = pd.read_csv(write_excerpts(corpus, tmp_path / "excerpts"))
    assert listing["track_id"].tolist() == corpus.segment_ids.tolist()
    for row, seg in zip(listing.itertuples(), corpus.segments.itertuples(), strict=True):
        excerpt = symusic.Score(str(tmp_path / "excerpts" / row.path))
        span = (seg.end_beats - seg.start_beats) * excerpt.ticks_per_quarter
        assert excerpt.note_num() > 0
        assert excerpt.start() >= 0 and excerpt.end() <= span + 1


def test_trained_tokenizer_windows_in_merged_ids(midi_files):
    tok = default_tokenizer()
    tok.train(vocab_size=len(tok) + 60, files_paths=[str(p) for p in midi_files])
    plain = tokenize_corpus(midi_files[:1], length=L)
    merged = tokenize_corpus(midi_files[:1], tok, length=L)
    assert merged.windows.max() >= len(default_tokenizer())  # merged ids are used
    assert len(merged.windows) < len(plain.windows)  # fewer, longer-reaching tokens
    # windows tile the stream: each ends where the next starts, on the base events' times
    s = merged.segments
    np.testing.assert_array_equal(s["end_beats"].to_numpy()[:-1], s["start_beats"].to_numpy()[1:])
    assert (s["end_beats"] > s["start_beats"]).all()


def test_bad_parameters_are_named(midi_files, tmp_path):
    with pytest.raises(ParameterError, match="length"):
        tokenize_corpus(midi_files, length=1)
    with pytest.raises(ParameterError, match="stride"):
        tokenize_corpus(midi_files, length=L, stride=0)
    with pytest.raises(ParameterError, match="paths"):
        tokenize_corpus([], length=L)
    with pytest.raises(ParameterError, match="tokenizer"):
        tokenize_corpus(midi_files, object(), length=L)
    with pytest.raises(ParameterError, match="distinct track ids"):
        tokenize_corpus([midi_files[0], midi_files[0]], length=L)
    with pytest.raises(ParameterError, match="root"):
        tokenize_corpus(midi_files, length=L, root=tmp_path)
    with pytest.raises(ParameterError, match="corpus"):
        write_corpus("nope", tmp_path / "c")  # type: ignore[arg-type]


def test_written_folders_never_write_over_what_aria_did_not_write(midi_files, tmp_path):
    corpus = tokenize_corpus(midi_files[:2], length=16)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "segments.csv").write_text("my own table\n")
    for writer in (write_corpus, write_excerpts):
        with pytest.raises(ParameterError, match="holds files ARIA did not write"):
            writer(corpus, mine)
    assert (mine / "segments.csv").read_text() == "my own table\n"
    assert sorted(p.name for p in mine.iterdir()) == ["segments.csv"]
    (tmp_path / "link").symlink_to(mine, target_is_directory=True)
    with pytest.raises(ParameterError, match="symbolic link"):
        write_corpus(corpus, tmp_path / "link")
    # ARIA's own folder is rewritten, and a note a user leaves in it is kept
    out = tmp_path / "corpus"
    write_corpus(corpus, out)
    (out / "notes.txt").write_text("keep me")
    paths = write_corpus(tokenize_corpus(midi_files[:3], length=16), out)
    assert (out / "notes.txt").read_text() == "keep me"
    assert pd.read_csv(paths["tracks"]).shape[0] == 3
    with pytest.raises(ParameterError, match="token corpus folder"):
        write_excerpts(corpus, out)  # an ARIA folder of another kind
