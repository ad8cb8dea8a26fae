"""The attributors on the benchmark's MusicTransformer, LDS against retraining, the TRAK grid."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from aria_tda.attribution import lds, lds_reference, model_outputs, run_methods  # noqa: E402
from aria_tda_experiments.model import ModelConfig  # noqa: E402
from aria_tda_experiments.train import TrainConfig, retrain_subsets, train_ensemble, train_model  # noqa: E402

CFG = ModelConfig(vocab_size=40, d_model=16, n_layers=1, n_heads=2, d_ff=32, max_len=12)
TRAIN = TrainConfig(epochs=2, batch_size=8, lr=3e-3, n_checkpoints=2)


def _windows(rng, n):
    """Windows with learnable structure: arithmetic token runs with a random start and step."""
    start = rng.integers(0, 40, size=(n, 1))
    step = rng.integers(1, 4, size=(n, 1))
    return ((start + step * np.arange(12)) % 40).astype(np.int64)


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    rng = np.random.default_rng(0)
    train, queries = _windows(rng, 40), _windows(rng, 6)
    root = tmp_path_factory.mktemp("bench")
    main = train_model(train, model_config=CFG, train_config=TRAIN, seed=0, out_dir=root / "main")
    ens = train_ensemble(
        train, n_models=2, model_config=CFG, train_config=TRAIN, seed=10, out_dir=root / "ens"
    )
    return {"train": train, "queries": queries, "main": main, "ensemble": ens, "root": root}


@pytest.mark.slow
def test_all_methods_and_lds_on_the_bench_model(bench):
    main = bench["main"]
    res = run_methods(
        ["TRAK", "TracIn", "GradDot", "GradCos", "LoGra", "FactGraSS"],
        main.model,
        bench["train"],
        bench["queries"],
        ensemble=[m.model.state_dict() for m in bench["ensemble"]],
        trajectory=[c.state_dict for c in main.checkpoints],
        learning_rates=main.checkpoint_lrs,
        final=main.checkpoints[-1].state_dict,
        options={
            "TRAK": {"proj_dim": 32},
            "LoGra": {"proj_dim": 16},
            "FactGraSS": {"proj_dim": 16},
        },
        common={"batch_size": 16},
        out_dir=bench["root"] / "scores",
    )
    retrains = retrain_subsets(
        bench["train"], n_subsets=6, model_config=CFG, train_config=TRAIN, seed=0
    )
    outputs = model_outputs(retrains.models, bench["queries"], target="last_token")
    assert outputs.shape == (6, 6) and np.all(outputs < 0)
    for name, r in res.items():
        assert r.scores.shape == (40, 6) and np.isfinite(r.scores).all(), name
        assert (bench["root"] / "scores" / f"{name}.npy").is_file()
        val = lds(r.scores, retrains.indices, outputs)
        ref = lds_reference(r.scores, retrains.indices, outputs)
        np.testing.assert_allclose(val.per_query, ref.per_query, rtol=1e-12, atol=1e-12)
        assert np.isfinite(val.mean)


@pytest.mark.slow
def test_aria_sweep_cli_end_to_end(bench, tmp_path, capsys):
    from aria_tda.cli import main as cli
    from aria_tda.features.registry import channels
    from aria_tda.features.store import write_store
    from aria_tda.results import read_table

    rng = np.random.default_rng(1)
    np.save(tmp_path / "train.npy", bench["train"])
    np.save(tmp_path / "queries.npy", bench["queries"])
    feats = {
        s.name: rng.random(size=(40, s.dim))
        for specs in channels("symbolic").values()
        for s in specs
    }
    write_store(
        tmp_path / "store",
        modality="symbolic",
        track_ids=[f"s{i}" for i in range(40)],
        features=feats,
    )
    status = cli(
        [
            "sensitivity",
            "--ensemble",
            str(bench["root"] / "ens"),
            "--train",
            str(tmp_path / "train.npy"),
            "--queries",
            str(tmp_path / "queries.npy"),
            "--features",
            str(tmp_path / "store"),
            "--out",
            str(tmp_path / "res"),
            "--proj-dims",
            "8",
            "16",
            "--lams",
            "0",
            "0.1",
            "--k",
            "5",
            "--B",
            "20",
            "--batch-size",
            "20",
            "--no-progress",
            "--save-scores",
        ]
    )
    assert status == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["n_models"] == 2 and printed["K"] == 5
    table = read_table(tmp_path / "res", "sensitivity")
    assert len(table) == 2 * 2 * 5 and set(table.channel) == set(channels("symbolic"))
    assert np.isfinite(table.zbar).all()
    assert (tmp_path / "res" / "sensitivity" / "TRAK_k16_lam0.1.npy").is_file()
    status = cli(
        [
            "sensitivity",
            "--ensemble",
            str(tmp_path),
            "--train",
            str(tmp_path / "train.npy"),
            "--queries",
            str(tmp_path / "queries.npy"),
            "--features",
            str(tmp_path / "store"),
            "--out",
            str(tmp_path / "res2"),
        ]
    )
    assert status == 2  # not a model folder: one-line error, no traceback
    assert "ensemble" in capsys.readouterr().err
