"""The method registry: every method through run_method / run_methods, typed arguments."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from aria_tda.attribution import (  # noqa: E402
    METHODS,
    GradientArgs,
    graddot,
    run_method,
    run_methods,
    tracin,
)
from aria_tda.errors import DataError, ParameterError  # noqa: E402


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_returns_finite_train_by_test(tiny, method):
    kw = {"proj_dim": 16} if method in ("LoGra", "FactGraSS") else {"proj_dim": 32}
    res = run_method(
        method,
        tiny["model"],
        tiny["train"],
        tiny["queries"],
        ensemble=tiny["ensemble"],
        trajectory=tiny["trajectory"],
        learning_rates=tiny["lrs"],
        final=tiny["final"],
        batch_size=5,
        **kw,
    )
    assert res.scores.shape == (12, 5)
    assert res.scores.dtype == np.float32
    assert np.isfinite(res.scores).all()
    assert res.method == method
    assert np.abs(res.scores).max() > 0


def test_bad_inputs_raise_typed_errors(tiny):
    m, f, tr, q = tiny["model"], tiny["final"], tiny["train"], tiny["queries"]
    with pytest.raises(ParameterError, match="model"):
        graddot("not a model", f, tr, q)
    with pytest.raises(DataError, match="train"):
        graddot(m, f, tr[:, :1], q)
    with pytest.raises(ParameterError, match="queries"):
        graddot(m, f, tr, q.astype(float))
    with pytest.raises(ParameterError, match="learning_rates"):
        tracin(m, tiny["trajectory"], tr, q, learning_rates=[0.1])
    with pytest.raises(ParameterError, match="loss"):
        graddot(m, f, tr, q, args=GradientArgs(loss="bogus"))
    with pytest.raises(ParameterError, match="method"):
        run_method("Bogus", m, tr, q)
    with pytest.raises(ParameterError, match="ensemble"):
        run_method("TRAK", m, tr, q)


def test_run_methods_saves_every_matrix(tiny, tmp_path):
    from aria_tda.attribution import load_attribution, run_methods

    res = run_methods(
        ["GradCos", "TRAK", "GradDot"],
        tiny["model"],
        tiny["train"],
        tiny["queries"],
        ensemble=tiny["ensemble"],
        final=tiny["final"],
        options={"TRAK": {"proj_dim": 8}},
        common={"proj_dim": 16, "batch_size": 6},
        out_dir=tmp_path,
        row_ids=[f"seg{i}" for i in range(12)],
    )
    assert list(res) == ["GradCos", "TRAK", "GradDot"]
    assert res["TRAK"].parameters["proj_dim"] == 8 and res["GradDot"].parameters["proj_dim"] == 16
    for name, r in res.items():
        back, manifest = load_attribution(tmp_path / f"{name}.npy", method=name)
        np.testing.assert_array_equal(back, r.scores)
        assert manifest["parameters"]["proj_dim"] == r.parameters["proj_dim"]
    with pytest.raises(ParameterError, match="options"):
        run_methods(["TRAK"], tiny["model"], tiny["train"], tiny["queries"], options={"Trak": {}})


# ---------------------------------------------------------------- typed arguments


@pytest.mark.parametrize("method", ["LoGra", "FactGraSS"])
@pytest.mark.parametrize(
    ("option", "value"), [("engine", "aria"), ("proj_type", "normal"), ("max_projection_bytes", 0)]
)
def test_an_option_the_method_does_not_take_is_an_error(tiny, method, option, value):
    """Before the registry these were silently dropped for LoGra / FactGraSS."""
    args = (tiny["model"], tiny["train"], tiny["queries"])
    with pytest.raises(ParameterError, match=rf"{method}.*'{option}'"):
        run_method(method, *args, final=tiny["final"], proj_dim=16, **{option: value})
    with pytest.raises(ParameterError, match=rf"{method}.*'{option}'"):
        run_methods(["GradDot", method], *args, final=tiny["final"], common={option: value})
    with pytest.raises(ParameterError, match=rf"{method}.*'{option}'"):
        run_methods([method], *args, final=tiny["final"], options={method: {option: value}})


def test_unknown_options_fail_before_any_work(tiny, monkeypatch):
    from aria_tda.attribution import registry

    def boom(*a, **k):
        raise AssertionError("a method ran")

    monkeypatch.setattr(registry, "grad_similarities", boom)
    with pytest.raises(ParameterError, match=r"TRAK.*'damping'"):
        run_methods(
            ["GradDot", "GradCos", "TRAK"],
            tiny["model"],
            tiny["train"],
            tiny["queries"],
            final=tiny["final"],
            ensemble=tiny["ensemble"],
            options={"TRAK": {"damping": 0.1}},
        )


def test_registry_says_which_checkpoints_and_arguments():
    from aria_tda.attribution import (
        REGISTRY,
        FactGraSSArgs,
        GradientArgs,
        LoGraArgs,
        TrakArgs,
    )

    kinds = {name: spec.checkpoints for name, spec in REGISTRY.items()}
    assert kinds == {
        "TRAK": "ensemble",
        "TracIn": "trajectory",
        "GradDot": "final",
        "GradCos": "final",
        "LoGra": "final",
        "FactGraSS": "final",
    }
    assert REGISTRY["TRAK"].args is TrakArgs and REGISTRY["LoGra"].args is LoGraArgs
    assert REGISTRY["FactGraSS"].args is FactGraSSArgs
    assert {REGISTRY[m].args for m in ("TracIn", "GradDot", "GradCos")} == {GradientArgs}
    assert list(METHODS) == list(REGISTRY)
    assert all(METHODS[m] is REGISTRY[m].function for m in METHODS)


def test_defaults_and_signatures_come_from_the_arguments():
    import inspect

    from aria_tda.attribution import DEFAULTS, REGISTRY

    assert DEFAULTS == {
        "TRAK": {"proj_dim": 512, "lam": 0.01},
        "TracIn": {"proj_dim": None},
        "GradDot": {"proj_dim": None},
        "GradCos": {"proj_dim": None},
        "LoGra": {"proj_dim": 256, "damping": 0.1},
        "FactGraSS": {"proj_dim": 256, "blowup": 4, "damping": 0.01},
    }
    option_names = {f for spec in REGISTRY.values() for f in spec.args().to_dict()}
    for name, spec in REGISTRY.items():
        # the options are declared once, in the dataclass: the function takes it as `args`
        params = inspect.signature(spec.function, eval_str=True).parameters
        assert params["args"].annotation == (spec.args | None), name
        assert params["args"].default is None and params["args"].kind is params["args"].KEYWORD_ONLY
        assert not option_names & set(params), (name, option_names & set(params))


def test_method_functions_take_their_own_arguments_dataclass(tiny):
    from aria_tda.attribution import LoGraArgs, grad_similarities, trak

    m, tr, q = tiny["model"], tiny["train"], tiny["queries"]
    with pytest.raises(ParameterError, match=r"args: expected a TrakArgs for TRAK"):
        trak(m, tiny["ensemble"], tr, q, args=LoGraArgs())
    with pytest.raises(ParameterError, match=r"args: expected a GradientArgs"):
        grad_similarities(m, tiny["final"], tr, q, args={"proj_dim": 8})
    with pytest.raises(TypeError):
        graddot(m, tiny["final"], tr, q, proj_dim=8)  # options are not keywords any more


def test_result_parameters_record_the_arguments(tiny, tmp_path):
    from aria_tda.attribution import GradientArgs, load_attribution

    res = run_method(
        "GradDot",
        tiny["model"],
        tiny["train"],
        tiny["queries"],
        final=tiny["final"],
        proj_dim=16,
        batch_size=6,
        out=tmp_path / "g.npy",
    )
    from aria_tda.attribution.provenance import array_digest, state_digest

    args = GradientArgs(proj_dim=16, batch_size=6)
    prov = res.parameters.pop("provenance")
    assert res.parameters == {
        **args.to_dict(),
        "n_checkpoints": 1,
        "weights": [1.0],
        "normalized_grad": False,
    }
    # what produced it: the model, the checkpoint it read and the data, by content
    model = tiny["model"]
    assert prov["model"] == {"class": f"{type(model).__module__}.{type(model).__qualname__}",
                             "n_parameters": sum(p.numel() for p in model.parameters())}
    assert prov["checkpoints"] == [state_digest(tiny["final"])]
    assert prov["train_data"] == {"digest": array_digest(tiny["train"]),
                                  "shape": list(np.shape(tiny["train"]))}
    assert prov["query_data"]["digest"] == array_digest(tiny["queries"])
    assert array_digest(np.asarray(tiny["train"])[::-1]) != prov["train_data"]["digest"]
    _, manifest = load_attribution(tmp_path / "g.npy", method="GradDot")
    stored = {k: v for k, v in manifest["parameters"].items() if k != "run"}
    assert stored == {**res.parameters, "provenance": prov}


def test_arguments_are_frozen_and_checked():
    import dataclasses

    from aria_tda.attribution import FactGraSSArgs, LoGraArgs, TrakArgs

    a = TrakArgs()
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.lam = 1.0  # type: ignore[misc]
    assert TrakArgs(lam=1).lam == 1.0 and isinstance(TrakArgs(lam=1).lam, float)
    for bad, match in [
        ({"proj_dim": 0}, "proj_dim"),
        ({"lam": -1.0}, "lam"),
        ({"engine": "fast"}, "engine"),
        ({"loss": "bogus"}, "loss"),
        ({"num_threads": 0}, "num_threads"),
        ({"proj_type": "sjlt"}, "proj_type"),
    ]:
        with pytest.raises(ParameterError, match=match):
            TrakArgs(**bad)
    with pytest.raises(ParameterError, match="perfect square"):
        LoGraArgs(proj_dim=15)
    with pytest.raises(ParameterError, match="damping"):
        FactGraSSArgs(damping=0.0)
    assert LoGraArgs(layer_names=["inner.head"]).layer_names == ("inner.head",)
    assert TrakArgs(loss=_custom_loss).to_dict()["loss"] == "_custom_loss"
    with pytest.raises(ParameterError, match="unknown option"):
        TrakArgs.from_mapping({"lam": 0.1, "blowup": 4})


def _custom_loss(model, tokens):
    from aria_tda.attribution.losses import sequence_loss

    return sequence_loss(model, tokens)
