"""The ``aria-tda`` dispatcher: one-line errors, Ctrl-C, visible bugs, each warning printed once."""

from __future__ import annotations

import warnings

import pytest

import aria_tda.cli
import aria_tda.cli.run
from aria_tda.cli import main
from aria_tda.cli.common import WarningPrinter
from aria_tda.errors import AriaWarning, DataError


@pytest.fixture
def command(monkeypatch):
    """Make ``aria-tda run`` call the given body instead (only ``run`` is registered)."""

    def install(body):
        monkeypatch.setattr(aria_tda.cli, "_command_modules", lambda: {"run": "aria_tda.cli.run"})
        monkeypatch.setattr(aria_tda.cli.run, "run", lambda args: body())

    return install


def _err_lines(capsys):
    return capsys.readouterr().err.strip().splitlines()


def test_aria_error_is_one_line(command, capsys):
    def body():
        raise DataError("queries: index 9000 out of range for 7148 queries\n  see the file")

    command(body)
    assert main(["run", "s.toml"]) == 2
    assert _err_lines(capsys) == [
        "aria-tda run: error: DataError: queries: index 9000 out of range for 7148 queries "
        "see the file"
    ]


def test_keyboard_interrupt_is_one_line_and_130(command, capsys):
    def body():
        raise KeyboardInterrupt

    command(body)
    assert main(["run", "s.toml"]) == 130
    err = _err_lines(capsys)
    assert len(err) == 1 and err[0].startswith("aria-tda run: error: interrupted")


def test_a_bug_keeps_its_traceback(command):
    def body():
        raise ZeroDivisionError("a bug")

    command(body)
    with pytest.raises(ZeroDivisionError, match="a bug"):
        main(["run", "s.toml"])


def _warn_twice_from_two_places():
    warnings.warn("the same message", AriaWarning, stacklevel=1)
    warnings.warn("the same message", AriaWarning, stacklevel=1)


def test_duplicate_warnings_print_once(command, capsys):
    def body():
        for _ in range(3):
            _warn_twice_from_two_places()
        for k in (20, 50, 100, 50):
            warnings.warn(f"null K={k}: feature 'ioi' has the same g_d in every random group "
                          f"(sigma_d = 0); it is left out of channel 'rhythm' at this K",
                          AriaWarning, stacklevel=1)
        warnings.warn("K=300: channel 'dynamic' has no informative feature; z_c is NaN",
                      AriaWarning, stacklevel=1)
        return 0

    command(body)
    assert main(["run", "s.toml"]) == 0
    assert _err_lines(capsys) == [
        "aria-tda run: warning: the same message",
        "aria-tda run: warning: null K=20, 50, 100: feature 'ioi' has the same g_d in every random "
        "group (sigma_d = 0); it is left out of channel 'rhythm' at this K",
        "aria-tda run: warning: K=300: channel 'dynamic' has no informative feature; z_c is NaN",
    ]


def test_warnings_are_flushed_when_the_command_fails(command, capsys):
    def body():
        warnings.warn("K=5: channel 'x' has no informative feature", AriaWarning, stacklevel=1)
        warnings.warn("K=10: channel 'x' has no informative feature", AriaWarning, stacklevel=1)
        raise DataError("bad input")

    command(body)
    assert main(["run", "s.toml"]) == 2
    assert _err_lines(capsys) == [
        "aria-tda run: error: DataError: bad input",
        "aria-tda run: warning: K=5, 10: channel 'x' has no informative feature",
    ]


def test_other_libraries_warnings_keep_their_format(capsys):
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = lambda message, category, *rest: seen.append(category)
        printer = WarningPrinter("run")
        warnings.showwarning = printer.show
        warnings.warn("not ours", UserWarning, stacklevel=1)
        warnings.warn("ours", AriaWarning, stacklevel=1)
    assert seen == [UserWarning]  # passed on to the hook that was there before
    assert capsys.readouterr().err == "aria-tda run: warning: ours\n"
