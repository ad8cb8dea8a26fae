"""ruff's rules (pyproject.toml, E501 line length included) hold over the whole tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _ruff() -> str | None:
    beside = Path(sys.executable).with_name("ruff")
    return str(beside) if beside.exists() else shutil.which("ruff")


def test_ruff_is_clean():
    ruff = _ruff()
    if ruff is None:
        pytest.skip("ruff is not installed (it comes with the [dev] extra)")
    out = subprocess.run(
        [
            ruff,
            "check",
            "--output-format",
            "concise",
            "--no-cache",
            "src",
            "tests",
            "benchmarks",
            "scripts",
            "experiments",
            "conftest.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
