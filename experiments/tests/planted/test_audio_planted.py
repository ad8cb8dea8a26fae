"""The audio plants carry their aspect (in every plant family), unmarked items stay as the
corpus has them, and the audio side of the planted experiment hands the analysis a consistent
:class:`PlantedData`.

Fast tests build a small two-part work with mido, make a version of it as the audio corpus
does (:func:`make_version_midi`) and plant it; the rendering tests play it with FluidSynth and
look at the audio (onsets, chroma). The end-to-end test runs the ``tiny`` preset.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from aria_tda_experiments.audio.versions import INSTRUMENT_FAMILIES, make_version_midi
from aria_tda_experiments.planted import audio_plants as ap

SR = 16_000
SECONDS = 8.0


@pytest.fixture(params=ap.FAMILIES)
def family(request):
    """Every plant family (the invariants hold for each)."""
    return ap.FAMILIES[request.param]


def _work_bytes() -> bytes:
    """Two parts in C major: a stepwise melody in eighths and a bass in half notes."""
    mido = pytest.importorskip("mido")
    mid = mido.MidiFile(type=1, ticks_per_beat=480)
    for ch, (pitches, dur) in enumerate([((60, 62, 64, 65, 67, 69, 71, 72), 240),
                                         ((48, 43, 45, 41), 960)]):
        tr = mido.MidiTrack()
        tr.append(mido.MetaMessage("set_tempo", tempo=500_000, time=0))
        for k in range(64 if dur == 240 else 16):
            p = pitches[k % len(pitches)]
            tr.append(mido.Message("note_on", channel=ch, note=p, velocity=80, time=0))
            tr.append(mido.Message("note_off", channel=ch, note=p, velocity=0, time=dur))
        mid.tracks.append(tr)
    buf = io.BytesIO()
    mid.save(file=buf)
    return buf.getvalue()


@pytest.fixture(scope="module")
def version():
    return make_version_midi(_work_bytes(), program=0, tempo_scale=1.1, transpose=2,
                             seconds=SECONDS)


def _events(mid):
    """(seconds, message) of every message of a type-0 version MIDI."""
    tps = mid.ticks_per_beat * 2.0
    t, out = 0, []
    for msg in mid.tracks[0]:
        t += msg.time
        out.append((t / tps, msg))
    return out


def _notes(mid, channel_filter=lambda c: c != ap.DRUM_CHANNEL):
    return [(round(t, 4), m.channel, m.note, m.velocity) for t, m in _events(mid)
            if m.type == "note_on" and m.velocity > 0 and channel_filter(m.channel)]


# --------------------------------------------------------------------------------------------
# MIDI: each plant changes its aspect and nothing else
# --------------------------------------------------------------------------------------------


def test_unmarked_items_are_the_corpus_version_unchanged(version):
    assert ap.plant_midi(version, None) is version


def test_timbre_plant_uses_a_program_no_corpus_version_draws(version, family):
    planted = ap.plant_midi(version, "timbre", family=family.name)
    progs = {m.program for _, m in _events(planted) if m.type == "program_change"}
    assert progs == {family.program}
    assert all(family.program not in ps for ps in INSTRUMENT_FAMILIES.values())
    assert _notes(planted) == _notes(version)  # same notes, times, velocities


def test_timbre_program_is_never_drawn_for_a_corpus_version():
    from aria_tda_experiments.audio.versions import AudioCorpusConfig, plan_versions

    works = pd.DataFrame({"work_id": [f"w{i}" for i in range(60)],
                          "collection": [f"c{i % 5}" for i in range(60)]})
    plan = plan_versions(works, config=AudioCorpusConfig(versions_per_work=5, planted_works=5))
    for fam in ap.FAMILIES.values():
        assert fam.program not in set(plan["program"])


def test_rhythm_plant_adds_the_drum_pattern_and_keeps_the_music(version, family):
    planted = ap.plant_midi(version, "rhythm", seconds=SECONDS, family=family.name)
    assert _notes(planted) == _notes(version)
    drums = _notes(planted, lambda c: c == ap.DRUM_CHANNEL)
    assert not _notes(version, lambda c: c == ap.DRUM_CHANNEL)
    step, bar = 60.0 / family.drum_bpm / family.drum_steps_per_beat, family.drum_bar_steps
    assert {n for _, _, n, _ in drums} == set(family.drum_pattern)
    for note, steps in family.drum_pattern.items():
        times = np.array([t for t, _, n, _ in drums if n == note])
        pos = np.round(times / step).astype(int)
        assert np.allclose(times, pos * step, atol=2e-3)  # on the grid
        assert set(pos % bar) == set(steps)  # the pattern's steps, and only them
        n_bars = int(np.ceil(SECONDS / (bar * step)))
        assert len(times) >= (n_bars - 1) * len(steps)  # recurs over the whole track
        assert {v for _, _, n, v in drums if n == note} == {family.drum_velocity[note]}


def test_harmony_plant_moves_every_note_to_the_progression(version, family):
    planted = ap.plant_midi(version, "harmony", family=family.name)
    before, after = _notes(version), _notes(planted)
    assert [(t, c, v) for t, c, _, v in after] == [(t, c, v) for t, c, _, v in before]
    for (t, _, p_new, _), (_, _, p_old, _) in zip(after, before, strict=True):
        assert p_new % 12 in ap.chord_at(t, family=family.name)
        assert abs(p_new - p_old) <= 6  # the nearest chord tone: the line keeps its register
    # every note that starts also ends, as in the version (which cuts the notes sounding
    # at the track's end)
    assert _open_notes(planted) == _open_notes(version)


def _open_notes(mid):
    """Notes still sounding at the end, per channel (note-ons minus note-offs)."""
    sounding: dict = {}
    for _, m in _events(mid):
        if m.type == "note_on" and m.velocity > 0:
            sounding[m.channel] = sounding.get(m.channel, 0) + 1
        elif m.type in ("note_on", "note_off"):
            sounding[m.channel] = sounding.get(m.channel, 0) - 1
    return sounding


def test_chord_at_cycles_through_the_progression(family):
    n, secs = len(family.progression), family.chord_seconds
    got = [ap.chord_at(k * secs + 0.1, family=family) for k in range(2 * n)]
    assert got == list(family.progression) * 2


def test_family_a_is_the_module_constants():
    a = ap.FAMILIES["A"]
    assert (a.drum_pattern, a.drum_bpm, a.progression, a.chord_seconds, a.program) == (
        ap.DRUM_PATTERN, ap.DRUM_BPM, ap.PROGRESSION, ap.CHORD_SECONDS, ap.PLANT_PROGRAM)
    assert (a.drum_steps_per_beat, a.drum_bar_steps) == (4, 16)
    assert a.step_seconds() == 60.0 / ap.DRUM_BPM / 4.0
    assert all(f.name == n for n, f in ap.FAMILIES.items())


def test_family_b_differs_from_a_in_every_aspect_s_own_terms():
    a, b = ap.FAMILIES["A"], ap.FAMILIES["B"]
    # rhythm: other instruments, another subdivision (triplets), another tempo
    assert not set(b.drum_pattern) & set(a.drum_pattern)
    assert b.drum_steps_per_beat != a.drum_steps_per_beat and b.drum_bpm != a.drum_bpm
    # harmony: no chord of A's, minor and major triads, another chord length
    assert not set(map(frozenset, b.progression)) & set(map(frozenset, a.progression))
    assert {(c[1] - c[0]) % 12 for c in b.progression} == {3, 4}
    assert b.chord_seconds != a.chord_seconds
    # timbre: another program, one no corpus version draws (checked above)
    assert b.program != a.program


def test_a_bad_family_is_named(version):
    from aria_tda.errors import ParameterError

    with pytest.raises(ParameterError, match="family: expected one of 'A', 'B', got 'C'"):
        ap.plant_midi(version, "timbre", family="C")
    with pytest.raises(ParameterError, match="drum_pattern"):
        ap.AudioPlantFamily(name="X", drum_pattern={56: (12,)}, drum_velocity={56: 90},
                            drum_bpm=100.0, drum_steps_per_beat=3, drum_bar_steps=12,
                            progression=((0, 4, 7),), chord_seconds=2.0, program=104)


# --------------------------------------------------------------------------------------------
# marked sets and items
# --------------------------------------------------------------------------------------------


def _tracks(n_works=12, versions=3):
    rows = []
    for w in range(n_works):
        for v in range(versions):
            rows.append({"track_id": f"c{w % 4}/w{w}~v{v}", "work_id": f"c{w % 4}/w{w}",
                         "version": v, "split": "test" if w >= n_works - 2 else "train",
                         "genre": f"g{w % 4}", "collection": f"c{w % 4}",
                         "instrument_family": "piano", "program": 0, "tempo_scale": 1.0,
                         "transpose": 0, "path": f"audio/w{w}v{v}.wav", "duration": 30.0})
    return pd.DataFrame(rows)


def test_marked_sets_are_disjoint_spread_and_one_track_per_work():
    t = _tracks()
    train = t[t["split"] == "train"]
    m = ap.choose_marked(train, 3, seed=0)
    assert set(m) == set(ap.AUDIO_ASPECTS)
    ids = [x for v in m.values() for x in v]
    assert all(len(v) == 3 for v in m.values()) and len(set(ids)) == len(ids)
    works = train.set_index("track_id").loc[ids, "work_id"]
    assert works.is_unique  # a marked set is tied by its plant, not by a shared work
    assert ap.choose_marked(train, 3, seed=0) == m
    with pytest.raises(Exception, match="n_marked"):
        ap.choose_marked(train, len(train), seed=0)


def test_items_keep_unmarked_tracks_and_plant_every_held_out_track_three_ways(family):
    from aria_tda_experiments.planted.audio import plan_items

    t = _tracks()
    items = plan_items(t, 2, 0, "audio-corpus/corpus", family=family.name)
    tr = items[items["split"] == "train"]
    assert len(tr) == (t["split"] == "train").sum()
    plain = tr[tr["plant"] == "none"]
    assert (plain["path"] == "audio-corpus/corpus/" + t.set_index("track_id").loc[
        plain["track_id"], "path"].to_numpy()).all()
    assert (tr.loc[tr["plant"] != "none", "path"] == "").all()  # rendered anew
    assert tr["plant"].value_counts().drop("none").eq(2).all()
    held = items[items["split"] == "heldout"]
    per_track = held.groupby("track_id")["plant"].apply(sorted)
    assert all(v == sorted(["none", *ap.AUDIO_ASPECTS]) for v in per_track)
    assert (items.loc[items["plant"] == "timbre", "program"] == family.program).all()
    assert (items.loc[items["plant"] != "timbre", "program"] != family.program).all()
    # the marked sets do not depend on the family: A and B plant the same tracks
    again = plan_items(t, 2, 0, "audio-corpus/corpus", family="A")
    pd.testing.assert_series_equal(items["plant"], again["plant"])


# the audio-plants stage's key and the planted WAVs' digests of family A, as they were before
# plant families existed (so finished folders and rendered WAVs are reused)
_A_STAGE_DIGESTS = {"default": "5888047c99de6e2e", "quick": "af5f3d87154ae558",
                    "tiny": "1e778feff8a9fc41"}
_A_JOB_DIGESTS = {"rhythm": "366342314b", "harmony": "6ea58d86b8", "timbre": "aff34fbb27"}


def test_family_a_keeps_its_stage_key_and_family_b_gets_its_own():
    from aria_tda._steps import params_digest
    from aria_tda_experiments.planted.audio import AUDIO_PLANTED_PRESETS, plants_stage_params

    for name, p in AUDIO_PLANTED_PRESETS.items():
        a = plants_stage_params(p, 0)
        assert a == plants_stage_params(p, 0, "A") == {
            "n_marked": p.n_marked, "seed": 0, "heldout_plants": p.heldout_plants,
            "plants": {"drums": sorted(ap.DRUM_PATTERN.items()), "bpm": ap.DRUM_BPM,
                       "progression": ap.PROGRESSION, "chord_seconds": ap.CHORD_SECONDS,
                       "program": ap.PLANT_PROGRAM}}
        assert params_digest(a) == _A_STAGE_DIGESTS[name]
        b = plants_stage_params(p, 0, "B")
        assert b["family"] == "B" and params_digest(b) != params_digest(a)


def test_family_a_keeps_its_wav_digests_and_family_b_gets_its_own():
    job = {"midi": b"MThd-not-really", "program": 0, "tempo_scale": 1.1, "transpose": 2,
           "seconds": 30.0, "sr": 24000}
    for aspect, want in _A_JOB_DIGESTS.items():
        j = {**job, "aspect": aspect}
        sf_id = "FluidR3_GM.sf2:148398306"
        assert ap.job_digest(j, sf_id) == ap.job_digest({**j, "family": "A"}, sf_id) == want
        assert ap.job_digest({**j, "family": "B"}, sf_id) != want


# --------------------------------------------------------------------------------------------
# effects: control-adjusted, as the symbolic side
# --------------------------------------------------------------------------------------------


def _synthetic_losses(shift):
    """Held-out items / queries and per-model losses where leaving out aspect a's marked set
    raises its plant items' loss by ``shift[a]`` on top of a shift every item takes."""
    from aria_tda_experiments.planted.audio import AUDIO_PLANTED_PRESETS
    from aria_tda_experiments.planted.audio_stages import model_names

    p = AUDIO_PLANTED_PRESETS["tiny"]
    rng = np.random.default_rng(3)
    hplant = np.array(["none"] * 6 + [a for a in ap.AUDIO_ASPECTS for _ in range(4)])
    qplant = np.array(["control"] * 5 + [a for a in ap.AUDIO_ASPECTS for _ in range(3)])
    names = model_names(p, 0)
    out = {}
    for key, plants in (("heldout", hplant), ("queries", qplant)):
        base = rng.normal(3.0, 0.2, plants.size)
        rows = []
        for g, _s in names:
            a = g.removeprefix("without-")
            rows.append(base + (0.0 if g == "full" else 0.05 + rng.normal(0, 0.01, plants.size)
                                + np.where(plants == a, shift.get(a, 0.0), 0.0)))
        out[key] = np.asarray(rows)
    return p, out, pd.DataFrame({"plant": hplant}), pd.DataFrame({"plant": qplant}), names


def test_effects_are_plant_items_minus_control_items_under_the_same_models():
    from aria_tda_experiments.planted.audio_stages import effect_tables
    from aria_tda_experiments.planted.data import COUNTERFACTUAL_COLUMNS, LEARNED_COLUMNS

    shift = {"rhythm": 0.3, "harmony": 0.0, "timbre": 0.1}
    p, eff, held, queries, names = _synthetic_losses(shift)
    learned, cf = effect_tables(eff, held, queries, p, 0)
    assert list(learned.columns) == list(LEARNED_COLUMNS)
    assert list(cf.columns) == list(COUNTERFACTUAL_COLUMNS)
    row = {n: i for i, n in enumerate(names)}
    h, hp = eff["heldout"], held["plant"].to_numpy()
    for r in learned[learned["aspect"] != "control"].itertuples():
        d = h[row[(f"without-{r.aspect}", r.seed)]] - h[row[("full", r.seed)]]
        assert r.effect == pytest.approx(d[hp == r.aspect].mean() - d[hp == "none"].mean())
        assert r.ci_low <= r.effect <= r.ci_high and r.learned == (r.ci_low > 0)
    # the shift every removal causes is taken out: harmony (no planted shift) is not learned
    plant_rows = learned[learned["aspect"] != "control"].set_index(["aspect", "seed"])
    assert plant_rows.loc[("rhythm", 0), "learned"]
    assert not plant_rows.loc[("harmony", 0), "learned"]
    ctrl = learned[learned["aspect"] == "control"]
    assert len(ctrl) == p.n_seeds and ctrl["learned"].isna().all()
    for r in ctrl.itertuples():
        d = [h[row[(f"without-{a}", r.seed)]] - h[row[("full", r.seed)]]
             for a in ap.AUDIO_ASPECTS]
        assert r.effect == pytest.approx(np.mean(d, axis=0)[hp == "none"].mean())
    q, qp = eff["queries"], queries["plant"].to_numpy()
    for r in cf.itertuples():
        if r.aspect == "control":
            continue
        rise = np.mean([q[row[(f"without-{r.aspect}", s)]] - q[row[("full", s)]]
                        for s in range(p.n_seeds)], axis=0)
        assert r.effect == pytest.approx(rise[qp == r.aspect].mean()
                                         - rise[qp == "control"].mean())
        assert r.n_seeds == p.n_seeds and r.n_queries == (qp == r.aspect).sum()
    assert cf.set_index("aspect").loc["control", "n_queries"] == (qp == "control").sum()


@pytest.mark.parametrize(("n", "keep", "want"), [(4, 2, [1, 3]), (4, 0, [0, 1, 2, 3]),
                                                 (3, 5, [0, 1, 2]), (5, 1, [4])])
def test_tracin_trajectory_is_evenly_spaced_and_ends_at_the_last_checkpoint(n, keep, want):
    from aria_tda_experiments.planted.audio_stages import tracin_trajectory

    assert tracin_trajectory(n, keep) == want


# --------------------------------------------------------------------------------------------
# rendered audio: the plant is heard
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def render():
    pytest.importorskip("soundfile")
    from aria_tda.errors import MissingDependencyError
    from aria_tda.features.audio.render import find_soundfont, import_fluidsynth, render_midi

    try:
        import_fluidsynth()
        sf = find_soundfont()
    except MissingDependencyError as exc:
        pytest.skip(str(exc))

    def _render(mid):
        return render_midi(mid, sr=SR, duration=SECONDS, soundfont=sf, reverb=False,
                           chorus=False)

    return _render


def _power(y, n_fft=2048, hop=256):
    frames = np.lib.stride_tricks.sliding_window_view(y, n_fft)[::hop]
    return np.abs(np.fft.rfft(frames * np.hanning(n_fft), axis=1)) ** 2


def test_rendered_rhythm_plant_has_its_onsets_on_the_pattern_steps(version, render, family):
    drums = (render(ap.plant_midi(version, "rhythm", seconds=SECONDS, family=family.name))
             - render(version))
    hop = 128
    env = np.sqrt(np.convolve(drums**2, np.ones(hop) / hop, mode="same"))[::hop]
    rise = np.maximum(np.diff(env, prepend=env[0]), 0)
    step = family.step_seconds()
    used = set().union(*map(set, family.drum_pattern.values()))
    on, off = [], []
    # off the pattern: its unused steps and the half-steps between steps (family B uses
    # every step of its bar)
    for k in np.arange(0, int(SECONDS / step) - 1, 0.5):
        f = round(k * step * SR / hop)
        hit = k == int(k) and int(k) % family.drum_bar_steps in used
        (on if hit else off).append(rise[max(f - 2, 0): f + 6].max())
    assert np.median(on) > 5 * np.median(off)


def test_rendered_harmony_plant_chroma_follows_the_progression(version, render, family):
    secs = family.chord_seconds
    y = render(ap.plant_midi(version, "harmony", family=family.name))
    power = _power(y)
    freqs = np.fft.rfftfreq(2048, 1 / SR)
    ok = (freqs > 60) & (freqs < 2000)
    pc = (np.round(12 * np.log2(freqs[ok] / 440.0)).astype(int) + 9) % 12
    times = (np.arange(power.shape[0]) * 256 + 1024) / SR
    hits = []
    for k in range(int(SECONDS / secs)):
        sel = (times > k * secs + 0.3) & (times < (k + 1) * secs - 0.1)
        chroma = np.bincount(pc, weights=power[sel][:, ok].sum(axis=0), minlength=12)
        top = set(np.argsort(chroma)[-3:].tolist())
        hits.append(len(top & set(ap.chord_at(k * secs + 0.5, family=family))) >= 2)
    assert all(hits)


def test_render_planted_writes_a_normalised_wav(tmp_path):
    sf = pytest.importorskip("soundfile")
    from aria_tda.errors import MissingDependencyError
    from aria_tda.features.audio.render import find_soundfont

    try:
        font = find_soundfont()
    except MissingDependencyError as exc:
        pytest.skip(str(exc))
    job = {"midi": _work_bytes(), "program": 0, "tempo_scale": 1.0, "transpose": 0,
           "seconds": 3.0, "sr": SR, "aspect": "timbre", "soundfont": str(font),
           "out": str(tmp_path / "x.wav")}
    ap.render_planted(job)
    y, sr = sf.read(job["out"])
    assert sr == SR and y.shape == (3 * SR,)
    assert np.sqrt(np.mean(y**2)) == pytest.approx(0.1, rel=0.05)
    assert ap.job_digest(job, "f") != ap.job_digest({**job, "aspect": "rhythm"}, "f")
    # family B's timbre plant renders too (its own instrument), to the same loudness
    job_b = {**job, "family": "B", "out": str(tmp_path / "b.wav")}
    ap.render_planted(job_b)
    y_b, _ = sf.read(job_b["out"])
    assert np.sqrt(np.mean(y_b**2)) == pytest.approx(0.1, rel=0.05)
    assert not np.allclose(y_b, y, atol=1e-3)


# --------------------------------------------------------------------------------------------
# end to end, tiny
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("plants", ["A", "B"])
def test_tiny_audio_planted_run_gives_consistent_planted_data(tmp_path, plants):
    pytest.importorskip("music21")
    from aria_tda.scores import open_scores
    from aria_tda_experiments.planted.audio import AUDIO_PLANTED_METHODS, run_audio_planted
    from aria_tda_experiments.planted.data import COUNTERFACTUAL_COLUMNS, LEARNED_COLUMNS
    from aria_tda_experiments.stage_runner import StageRunner

    runner = StageRunner(tmp_path, True, "test")
    data = run_audio_planted(tmp_path, runner, quick=False, seed=0, threads=1, progress=False,
                             quiet=True, preset="tiny", plants=plants)
    assert data.modality == "audio" and data.aspects == ap.AUDIO_ASPECTS
    n, t = len(data.track_ids), len(data.queries)
    assert set(data.scores) == set(AUDIO_PLANTED_METHODS)
    for path in data.scores.values():
        src = open_scores(path)
        assert src.to_numpy().shape == (n, t)
        assert [str(x) for x in src.row_ids] == [str(x) for x in data.track_ids]
        assert np.isfinite(src.to_numpy()).all()
    # the raw segment matrices the study diagnoses aggregate (z-score, track mean) to exactly
    # the track matrices that are scored
    import pandas as pd

    from aria_tda.scores import aggregate

    assert set(data.segment_scores) == set(data.scores)
    seg_map = pd.read_csv(data.segment_map, dtype={"track_id": str})
    assert list(seg_map["segment"]) == list(range(len(seg_map)))
    assert (seg_map["start"] < seg_map["end"]).all()
    for m, seg in data.segment_scores.items():
        again = aggregate(seg, segments=seg_map["track_id"].to_numpy(),
                          tracks=[str(x) for x in data.track_ids], normalize="zscore",
                          out=tmp_path / f"again-{m}.npy")
        np.testing.assert_array_equal(again.to_numpy(),
                                      open_scores(data.scores[m]).to_numpy())
    from aria_tda.features.store import FeatureStore

    assert list(FeatureStore.open(data.feature_store).track_ids) == list(data.track_ids)
    rows = np.concatenate(list(data.marked.values()))
    assert len(set(rows.tolist())) == rows.size and all(len(v) for v in data.marked.values())
    plant_col = FeatureStore.open(data.feature_store).metadata["plant"]  # indexed by track
    for a, idx in data.marked.items():
        assert (plant_col.loc[data.track_ids[idx]] == a).all()
    # the timbre plant's tracks carry the family's own instrument, and only they
    program = FeatureStore.open(data.feature_store).metadata["program"].astype(int)
    is_timbre = plant_col.loc[program.index] == "timbre"
    assert (program[is_timbre] == ap.FAMILIES[plants].program).all() and is_timbre.any()
    assert not program[~is_timbre].isin([f.program for f in ap.FAMILIES.values()]).any()
    assert set(data.queries["plant"]) == {*ap.AUDIO_ASPECTS, "control"}
    assert {"query_id", "plant", "label"} <= set(data.queries.columns)
    # media: each query's prompt, cut from its held-out item's rendering; each training track
    from pathlib import Path

    from demo_medialib import audio_seconds, check_store_sources

    for r in data.queries.itertuples():
        assert Path(r.media).is_absolute() and 0 == r.start < r.end <= audio_seconds(r.media)
    check_store_sources(data.feature_store, windows="none")
    assert list(data.learned.columns) == list(LEARNED_COLUMNS)
    assert set(data.learned["aspect"]) == {*ap.AUDIO_ASPECTS, "control"}
    assert len(data.learned) == 4 * data.info["preset"]["n_seeds"]
    plant_rows = data.learned[data.learned["aspect"] != "control"]
    assert (plant_rows["learned"] == (plant_rows["ci_low"] > 0)).all()
    assert data.learned.loc[data.learned["aspect"] == "control", "learned"].isna().all()
    assert list(data.counterfactual.columns) == list(COUNTERFACTUAL_COLUMNS)
    assert len(data.counterfactual) == 4 and np.isfinite(data.counterfactual["effect"]).all()
    assert all(k.startswith("audio-") for k in data.stage_seconds)
    # a rerun reuses every stage
    again = run_audio_planted(tmp_path, StageRunner(tmp_path, True, "test"), quick=False, seed=0,
                              threads=1, progress=False, quiet=True, preset="tiny",
                              plants=plants)
    pd.testing.assert_frame_equal(again.learned, data.learned)
