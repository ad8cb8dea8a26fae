"""aria_tda._optional: lazy imports and up-front checks that name what to install."""

from __future__ import annotations

import sys

import pytest

from aria_tda._optional import (
    install_hint,
    is_installed,
    missing_message,
    require,
    require_all,
    require_scheduler,
)
from aria_tda.errors import AriaError, MissingDependencyError

ABSENT = "aria_tda_no_such_module_xyz"


def test_is_installed_finds_without_importing(monkeypatch):
    monkeypatch.delitem(sys.modules, "json.tool", raising=False)
    assert is_installed("json") and is_installed("json.tool")
    assert "json.tool" not in sys.modules  # found, not imported
    assert not is_installed(ABSENT) and not is_installed(f"{ABSENT}.sub")
    monkeypatch.setitem(sys.modules, "colorsys", None)  # how tests (and Python) block an import
    assert not is_installed("colorsys")


def test_require_imports_or_names_the_extra():
    assert require("json", "report").dumps([1]) == "[1]"
    with pytest.raises(MissingDependencyError, match=r"needed for plots\): pip install "
                       r"'aria-tda\[report\]'"):
        require(ABSENT, "report", purpose="plots")


def test_require_all_is_one_error_naming_every_missing_module():
    require_all(["json", "os"], "audio", purpose="nothing")  # all there: no error
    with pytest.raises(MissingDependencyError) as info:
        require_all(["json", ABSENT, "x_" + ABSENT], "audio", purpose="audio features")
    msg = str(info.value)
    assert msg == (f"{ABSENT} and x_{ABSENT} are not installed (needed for audio features): "
                   "pip install 'aria-tda[audio]'")
    assert "\n" not in msg and isinstance(info.value, AriaError | ImportError)
    with pytest.raises(MissingDependencyError, match=rf"^{ABSENT} is not installed \(needed for "
                       r"x\): pip install torch$"):
        require_all([ABSENT, ABSENT], purpose="x", install="pip install torch")


def test_missing_message_and_hint():
    assert missing_message(["json"], "scale", purpose="p") is None
    assert missing_message([ABSENT], "scale", purpose="p").endswith(install_hint("scale"))
    assert install_hint("embed") == "pip install 'aria-tda[embed]'"
    with pytest.raises(TypeError, match="extra or install"):
        missing_message([ABSENT], purpose="p")


def test_require_scheduler_needs_dask_only_for_a_cluster(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    for value in (None, "", "  ", object()):  # no cluster, or a client (Dask is there)
        require_scheduler(value)
    with pytest.raises(MissingDependencyError, match=r"distributed is not installed \(needed "
                       r"for --scheduler local:2\): pip install 'aria-tda\[scale\]'"):
        require_scheduler("local:2")
