"""Where torch work runs: ``"cpu"`` (the default) or an accelerator such as ``"cuda"``.

The CPU path is the tested, bitwise-reproducible one. On an accelerator the same code runs with
the same data order, initialisation and TRAK/TracIn/GradDot/GradCos projections (drawn on the
CPU generator and moved), so those agree with the CPU run up to floating-point rounding, which
grows over training. LoGra and FactGraSS (and ``engine="dattri"``) hand the device to dattri,
whose compressors draw on the device's own generator: another random draw than the CPU's.
"""

from __future__ import annotations

from typing import Any

import torch

from aria_tda.errors import ParameterError, expected

__all__ = ["check_device", "device_of"]

_WHAT = "a torch device name: 'cpu', 'cuda', 'cuda:N' or 'mps'"


def check_device(name: str, value: Any) -> str:
    """Check that ``value`` names a torch device usable on this machine; return its name.

    Parameters
    ----------
    name : str
        The parameter's name, for the error message.
    value : str or torch.device
        ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``.

    Returns
    -------
    str
        The canonical name (``str(torch.device(value))``).
    """
    if isinstance(value, torch.device):
        value = str(value)
    if not isinstance(value, str):
        raise ParameterError(expected(name, _WHAT, value))
    try:
        dev = torch.device(value)
    except (RuntimeError, ValueError):
        raise ParameterError(expected(name, _WHAT, value)) from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ParameterError(
                f"{name}: expected a device this machine has, got {value!r}: torch "
                f"{torch.__version__} sees no CUDA GPU here (use 'cpu')")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ParameterError(expected(
                name, f"a GPU index below {torch.cuda.device_count()} (GPUs here)", value))
    elif dev.type == "mps":
        if not torch.backends.mps.is_available():
            raise ParameterError(f"{name}: expected a device this machine has, got {value!r}: "
                                 "torch sees no Apple GPU (MPS) here (use 'cpu')")
    elif dev.type == "cpu":
        return "cpu"  # one CPU device, whatever index was written
    else:
        raise ParameterError(expected(name, _WHAT, value))
    return str(dev)


def device_of(module: torch.nn.Module) -> torch.device:
    """The device of ``module``'s first parameter (CPU for a module without parameters).

    Parameters
    ----------
    module : nn.Module
        The model.
    """
    for p in module.parameters():
        return p.device
    return torch.device("cpu")
