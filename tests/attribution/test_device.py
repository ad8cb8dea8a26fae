"""Device names: checked with the parameter's name, usable here or refused before any work."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from aria_tda.attribution.device import check_device, device_of
from aria_tda.errors import DataError, ParameterError


def test_check_device_accepts_cpu_and_names_the_parameter_when_refusing():
    assert check_device("device", "cpu") == "cpu"
    assert check_device("device", torch.device("cpu")) == "cpu"
    for bad in ("tpu", "", 3, None):
        with pytest.raises(ParameterError, match=r"^dev: expected a torch device name"):
            check_device("dev", bad)
    if not torch.cuda.is_available():
        with pytest.raises(ParameterError, match=r"^device: .*'cuda'.*no CUDA GPU"):
            check_device("device", "cuda")
    else:  # pragma: no cover - only on a machine with a GPU
        with pytest.raises(ParameterError, match="GPU index"):
            check_device("device", f"cuda:{torch.cuda.device_count()}")


def test_device_of_a_module():
    assert device_of(torch.nn.Linear(2, 2)) == torch.device("cpu")
    assert device_of(torch.nn.ReLU()) == torch.device("cpu")


def test_attribution_options_check_the_device(tiny):
    from aria_tda.attribution import run_method

    with pytest.raises(ParameterError, match="device"):
        run_method("GradDot", tiny["model"], tiny["train"], tiny["queries"],
                   final=tiny["final"], device="tpu")


def test_training_reports_the_first_diverged_step():
    from aria_tda_experiments.model import ModelConfig
    from aria_tda_experiments.train import TrainConfig, train_model

    seg = np.random.default_rng(0).integers(0, 40, size=(16, 8))
    mc = ModelConfig(vocab_size=40, d_model=8, n_layers=1, n_heads=2, d_ff=16, max_len=8)
    # step 8 is where the code before the device change (a float(loss) check every step)
    # stopped too, for this seed and learning rate
    tc = TrainConfig(epochs=3, batch_size=4, lr=1e3, grad_clip=0.0, n_checkpoints=1)
    with pytest.raises(DataError, match=r"training diverged at step 8 \(loss nan\)"):
        train_model(seg, model_config=mc, train_config=tc, progress_bar=False)
