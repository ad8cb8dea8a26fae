"""Names of our own: ``aria-tda`` (import ``aria_tda``) installs beside PyPI's ``aria``.

PyPI's ``aria`` (0.4.5 when this was written: "MBT utils", import package ``aria``, no console
script) is another project. In a fresh virtual environment this test installs this checkout's
core (no extras; its dependencies come from PyPI or pip's cache) and checks that it brings no
``aria`` import package and no ``aria`` console script; then installs PyPI's ``aria`` and
imports both packages in one interpreter and runs both projects' console commands, neither
shadowing the other. Without access to PyPI (``pip download aria`` fails) it is skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: pip's complaint about this machine's configured local wheel folders, when they are absent
_PIP_NOISE = "is ignored: it is neither a file nor a directory"
#: what pip says when it cannot reach an index
_OFFLINE = ("Could not find a version", "No matching distribution", "Failed to establish",
            "Temporary failure in name resolution", "Network is unreachable", "ConnectionError",
            "Read timed out", "ProxyError", "SSLError")

pytestmark = pytest.mark.slow


def _run(argv: list[str | Path], **kwargs) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "ARIA_PROGRESS": "0"}
    env.pop("PYTHONPATH", None)
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, env=env,
                          timeout=900, check=False, **kwargs)


def _stderr(proc: subprocess.CompletedProcess[str]) -> str:
    return "\n".join(line for line in proc.stderr.splitlines() if _PIP_NOISE not in line)


def _one_line(text: str) -> str:
    return " ".join(text.split())[-300:]


def _core_copy(dest: Path) -> Path:
    """The files a core install builds from (no build/ or egg-info of the checkout)."""
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, dest / name)
    shutil.copytree(REPO / "src", dest / "src", ignore=skip)
    return dest


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh venv with PyPI's ``aria`` downloaded and this checkout's core installed."""
    root = tmp_path_factory.mktemp("names")
    made = _run([sys.executable, "-m", "venv", root / "venv"])
    if made.returncode != 0:
        pytest.skip(f"cannot create a virtual environment: {_one_line(_stderr(made))}")
    bindir = root / "venv" / "bin"
    py = bindir / "python"
    got = _run([py, "-m", "pip", "download", "--no-deps", "aria", "-d", root / "dl"])
    if got.returncode != 0:
        pytest.skip(f"PyPI unreachable (pip download aria failed): {_one_line(_stderr(got))}")
    wheel = next((root / "dl").iterdir())
    src = root / "aria-tda"
    src.mkdir()
    core = _run([py, "-m", "pip", "install", "--quiet", "--no-compile", _core_copy(src)])
    if core.returncode != 0:
        err = _stderr(core)
        if any(s in err for s in _OFFLINE):
            pytest.skip(f"PyPI unreachable (the core's dependencies): {_one_line(err)}")
        pytest.fail(f"pip install of the core failed:\n{err[-2000:]}")
    return {"py": py, "bin": bindir, "wheel": wheel, "core": _probe(py, _SITE)}


def _probe(py: Path, code: str) -> dict:
    proc = _run([py, "-c", code])
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


_SITE = """
import importlib.metadata as md, importlib.util, json, sysconfig
dist = md.distribution("aria-tda")
print(json.dumps({
    "site": sysconfig.get_paths()["purelib"],
    "aria_spec": importlib.util.find_spec("aria") is not None,
    "top_level": (dist.read_text("top_level.txt") or "").split(),
    "files": [str(f) for f in dist.files or ()],
    "scripts": sorted(e.name for e in dist.entry_points if e.group == "console_scripts"),
    "extras": [m for m in ("librosa", "torch", "matplotlib", "dask", "aria_tda_experiments")
               if importlib.util.find_spec(m) is not None],
}))
"""


def test_core_installs_no_aria_package_or_script(venv):
    info = venv["core"]  # before PyPI's aria goes in
    assert not info["aria_spec"], "installing aria-tda made `import aria` work"
    assert info["top_level"] == ["aria_tda"]
    roots = {Path(f).parts[0] for f in info["files"]}
    assert not roots & {"aria", "aria.py"}, sorted(roots)
    assert info["scripts"] == ["aria-tda"]
    assert not (venv["bin"] / "aria").exists()
    assert (venv["bin"] / "aria-tda").is_file()
    assert not (Path(info["site"]) / "aria").exists()
    assert info["extras"] == [], "the core install brought optional packages"


_BOTH = """
import importlib.metadata as md, json, os
import aria
import aria_tda
print(json.dumps({
    "aria": os.path.realpath(aria.__file__),
    "aria_files": sorted(os.path.realpath(f.locate()) for f in md.files("aria")
                         if str(f).endswith(".py")),
    "aria_names": sorted(n for n in vars(aria) if not n.startswith("_")),
    "aria_tda": os.path.realpath(aria_tda.__file__),
    "aria_tda_version": aria_tda.__version__,
    "dist_version": md.version("aria-tda"),
    "diagnose": aria_tda.diagnose.__module__,
    "aria_scripts": sorted(e.name for e in md.distribution("aria").entry_points
                           if e.group == "console_scripts"),
}))
"""


def test_pypi_aria_and_aria_tda_side_by_side(venv):
    py, bindir, before = venv["py"], venv["bin"], venv["core"]
    got = _run([py, "-m", "pip", "install", "--quiet", "--no-compile", venv["wheel"]])
    assert got.returncode == 0, _stderr(got)[-2000:]

    both = _probe(py, _BOTH)
    site = Path(before["site"]).resolve()
    assert Path(both["aria"]) == site / "aria" / "__init__.py"  # PyPI's package, not ours
    assert both["aria"] in both["aria_files"]
    assert not any(n in both["aria_names"] for n in ("diagnose", "run_study", "__version__"))
    assert Path(both["aria_tda"]) == site / "aria_tda" / "__init__.py"
    assert both["aria_tda_version"] == both["dist_version"]
    assert both["diagnose"].startswith("aria_tda.")

    version = _run([bindir / "aria-tda", "--version"])
    assert version.returncode == 0 and version.stdout.strip() == f"aria-tda {both['dist_version']}"
    helped = _run([bindir / "aria-tda", "--help"])
    assert helped.returncode == 0 and "diagnose" in helped.stdout
    for script in both["aria_scripts"]:  # PyPI's aria declares none today; if it ever does:
        assert script != "aria-tda"
        assert (bindir / script).is_file()
        assert "aria_tda" not in (bindir / script).read_text()
    if "aria" not in both["aria_scripts"]:
        assert not (bindir / "aria").exists()
    # aria-tda's files are untouched by the other install, and pip sees no conflict
    assert _probe(py, _SITE)["files"] == before["files"]
    checked = _run([py, "-m", "pip", "check"])
    assert checked.returncode == 0, checked.stdout + _stderr(checked)
