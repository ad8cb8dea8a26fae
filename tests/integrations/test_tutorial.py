"""The tutorial's script runs end to end (docs/tutorial/windowed_model.py), as the page shows it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("transformers")
pytest.importorskip("miditok")
pytest.importorskip("music21")
pytest.importorskip("dattri")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "tutorial" / "windowed_model.py"
PAGE = ROOT / "docs" / "tutorial" / "windowed-model.md"


def test_page_includes_only_sections_the_script_has():
    script = SCRIPT.read_text()
    sections = re.findall(r'--8<-- "docs/tutorial/windowed_model\.py:(\w+)"', PAGE.read_text())
    assert sections
    for name in sections:
        assert f"# --8<-- [start:{name}]" in script and f"# --8<-- [end:{name}]" in script


@pytest.mark.slow
def test_tutorial_runs_end_to_end(tmp_path):
    out = tmp_path / "run"
    # from another working folder, with a relative output folder
    proc = subprocess.run([sys.executable, str(SCRIPT), "run"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "results" / "report.html").is_file()
    segments = pd.read_csv(out / "corpus" / "segments.csv")
    windows = np.load(out / "corpus" / "windows.npy")
    assert len(segments) == len(windows) and segments["track_id"].nunique() == 8
    for method in ("GradDot", "TracIn", "TRAK"):
        scores = np.load(out / "scores" / f"{method}.npy")
        assert scores.shape == (len(windows), 6) and np.isfinite(scores).all()
        manifest = json.loads((out / "scores" / f"{method}.npy.manifest.json").read_text())
        assert "HFTokenModel" in json.dumps(manifest)
    verdicts = re.findall(r"^verdict (\w+): (collapsed|suspect|ok) — ", proc.stdout, re.M)
    assert [m for m, _ in verdicts] == ["GradDot", "TracIn", "TRAK"]


def test_a_folder_holding_a_users_files_is_refused_untouched(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "study.toml").write_text("my study\n")
    proc = subprocess.run([sys.executable, str(SCRIPT), "mine"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode != 0 and "did not write" in proc.stderr
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["study.toml"]
    assert (tmp_path / "mine" / "study.toml").read_text() == "my study\n"
