"""The ``aria-tda`` command itself: ``--version`` and ``--help``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from aria_tda.cli import main


def test_cli_help_and_version():
    out = subprocess.run(
        [sys.executable, "-m", "aria_tda.cli", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.startswith("aria-tda ")
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
