"""The README's layout, run from folders other than the study's: every path a study names is
found by the report and the dossiers (issue 39, item 6)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from aria_tda.features.extract import extract_to_store
from aria_tda.media.sources import resolve_media
from aria_tda.results import read_results_meta
from aria_tda.scores import save_scores
from aria_tda.study import run_study
from aria_tda.study.studyfile import load_study


def _midi(path: Path, pitch: int) -> None:
    import mido

    mid = mido.MidiFile(ticks_per_beat=480)
    track = mido.MidiTrack()
    mid.tracks.append(track)
    for i in range(8):
        track.append(mido.Message("note_on", note=pitch + (i % 3), velocity=60 + 5 * i, time=0))
        track.append(mido.Message("note_off", note=pitch + (i % 3), velocity=0, time=240))
    mid.save(str(path))


def test_readme_layout_run_from_other_folders_finds_its_media(tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / "midi").mkdir(parents=True)
    for i in range(6):
        _midi(project / "midi" / f"piece{i}.mid", 55 + 2 * i)
    save_scores(np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32),
                project / "scores.npy")
    (project / "study.toml").write_text(
        'name = "paths"\nmodality = "symbolic"\nfeature_store = "features"\n'
        'output = "results"\nK = [2]\nK_report = 2\nB = 20\nreport = false\n\n'
        '[[setting]]\nmethod = "TRAK"\nscores = "scores.npy"\n')
    # the features are extracted from the parent folder, the study runs from its own folder
    monkeypatch.chdir(tmp_path)
    extract_to_store("project/midi", "project/features", modality="symbolic", progress=False)
    monkeypatch.chdir(project)
    spec = load_study("study.toml")
    assert spec.feature_store.is_absolute() and spec.feature_store == project / "features"
    out = run_study("study.toml", quiet=True, progress=False)
    recorded = read_results_meta(out)["study"]["feature_store"]
    assert recorded == "../features"  # relative to the results folder: moves with the project
    # read from yet another folder: every training track's file is found
    monkeypatch.chdir(tmp_path)
    index = resolve_media(project / "results")
    for i in range(6):
        ref = index.train(f"piece{i}")
        assert ref.missing is None, ref.missing
        assert ref.path == project / "midi" / f"piece{i}.mid"
    # a project copied whole reads its own files, not the original's
    import shutil

    shutil.copytree(project, tmp_path / "copy")
    shutil.rmtree(project / "features")
    index = resolve_media(tmp_path / "copy" / "results")
    assert index.store_path.resolve() == (tmp_path / "copy" / "features").resolve()
    assert index.train("piece0").missing is None
