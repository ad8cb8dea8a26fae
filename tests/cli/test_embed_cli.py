"""``aria-tda embed`` and ``aria-tda retrieve`` end to end (in-process, the toy encoder)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "embed"))
import _toy_encoder as toy

from aria_tda.cli import main


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def setup(monkeypatch, tmp_path):
    from aria_tda.embed.encoders.registry import ENCODERS

    monkeypatch.setitem(ENCODERS, "toy", toy.SPEC)
    return toy.make_corpus(tmp_path / "audio"), toy.save_checkpoint(tmp_path / "toy.npy")


def test_embed_then_retrieve(tmp_path, setup, capsys):
    audio, ckpt = setup
    code, out, err = run(
        [
            "embed",
            audio,
            "--encoder",
            "toy",
            "--weights",
            ckpt,
            "--out",
            tmp_path / "train",
            "--no-progress",
        ],
        capsys,
    )
    assert code == 0, err
    assert "4 toy embeddings (8-d) written" in out and "1 files failed" in out
    code, out, _ = run(
        [
            "embed",
            audio,
            "--encoder",
            "toy",
            "--weights",
            ckpt,
            "--segment-seconds",
            "0.5",
            "--out",
            tmp_path / "q",
        ],
        capsys,
    )
    assert code == 0 and "12 toy embeddings" in out
    code, out, err = run(
        [
            "retrieve",
            tmp_path / "train",
            tmp_path / "q",
            "--out",
            tmp_path / "s.npy",
            "--block-rows",
            "2",
        ],
        capsys,
    )
    assert code == 0, err
    assert "4 training tracks x 12 queries" in out
    assert np.load(tmp_path / "s.npy").shape == (4, 12)


def test_missing_weights_is_one_line_with_the_hint(tmp_path, setup, capsys):
    audio, _ = setup
    code, out, err = run(["embed", audio, "--encoder", "toy", "--out", tmp_path / "x"], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(
        "aria-tda embed: error: ParameterError: weights:"
    )
    assert "obtain a toy projection written by _toy_encoder.save_checkpoint" in err
    assert not (tmp_path / "x").exists()
    code, _, err = run(["embed", audio, "--encoder", "mert", "--out", tmp_path / "x"], capsys)
    assert code == 2 and err.count("\n") == 1 and "m-a-p/MERT-v1-95M" in err


def test_errors_are_one_line(tmp_path, setup, capsys):
    audio, ckpt = setup
    code, _, err = run(
        ["embed", audio, "--encoder", "nope", "--weights", ckpt, "--out", tmp_path / "x"], capsys
    )
    assert code == 2 and err.count("\n") == 1 and "encoder: expected one of" in err
    run(["embed", audio, "--encoder", "toy", "--weights", ckpt, "--out", tmp_path / "a"], capsys)
    other = toy.save_checkpoint(tmp_path / "other.npy", seed=5)
    code, _, err = run(
        ["embed", audio, "--encoder", "toy", "--weights", other, "--out", tmp_path / "a"], capsys
    )
    assert code == 2 and err.count("\n") == 1 and "ManifestMismatchError" in err
    run(["embed", audio, "--encoder", "toy", "--weights", other, "--out", tmp_path / "b"], capsys)
    code, _, err = run(
        ["retrieve", tmp_path / "a", tmp_path / "b", "--out", tmp_path / "s.npy"], capsys
    )
    assert code == 2 and err.count("\n") == 1 and "different encoders" in err
    code, _, err = run(
        ["retrieve", tmp_path / "a", tmp_path / "nope", "--out", tmp_path / "s.npy"], capsys
    )
    assert code == 2 and err.count("\n") == 1 and "no such embedding store" in err


def test_help_explains(capsys):
    with pytest.raises(SystemExit):
        main(["embed", "--help"])
    out = capsys.readouterr().out
    assert "--segment-seconds" in out and "never downloads" in out and "clews-style" in out
    with pytest.raises(SystemExit):
        main(["retrieve", "--help"])
    assert "cosine similarity" in capsys.readouterr().out
