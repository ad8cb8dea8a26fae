"""CLEWS checkpoints in their authors' format: read safely, write for tests.

The authors train and save with Lightning Fabric (``train.py``: ``fabric.save(path, state)``,
``state = {model, optim, sched, conf, epoch, lr, cost_best}``), so a checkpoint such as
``shs-clews/checkpoint_best.ckpt`` is a ``torch.save`` zip holding a plain dict: ``"model"`` —
the network's state dict with the plain module names (Fabric's DDP strategy unwraps the model,
so no ``module.`` prefix), ``"optim"``/``"sched"`` — Adam and ReduceLROnPlateau state dicts,
``"conf"`` — the OmegaConf ``DictConfig`` of the run, and three numbers. Their ``inference.py``
builds the model from ``configuration.yaml`` in the checkpoint's folder and then loads the
state strictly.

Reading (:func:`read_checkpoint`) never runs code from the file and does not need OmegaConf or
Lightning: the pickle is read with an allow-list (the tensor-rebuild functions and
``OrderedDict``); every other class in it (``DictConfig`` and its nodes, optimiser odds and ends)
becomes an inert placeholder that only keeps its pickled state, from which the ``conf`` mapping
is recovered (:func:`plain`). The configuration is taken, in order, from an explicit YAML file,
``configuration.yaml`` beside the checkpoint (what the authors' scripts use), the ``conf``
stored in the checkpoint, or else ``config/shs-clews.yaml``'s values.
"""

from __future__ import annotations

import os
import pickle
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from aria_tda._inert_pickle import Inert, inert_class
from aria_tda._io import atomic_path, write_text
from aria_tda._optional import require
from aria_tda.embed.encoders.clews.model import ClewsConfig, ClewsNet
from aria_tda.errors import FileFormatError, ParameterError, expected

__all__ = ["plain", "read_checkpoint", "resolve_config", "write_checkpoint"]

#: globals a state-dict pickle may name; anything else becomes an inert placeholder
_ALLOWED = {
    ("torch._utils", "_rebuild_tensor_v2"),
    ("torch._utils", "_rebuild_parameter"),
    ("torch._utils", "_rebuild_parameter_with_state"),
    ("collections", "OrderedDict"),
    ("torch", "Size"),
}


class _InertUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        return inert_class(module, name)


class _InertPickle:
    """A ``pickle_module`` for :func:`torch.load` whose unpickler is :class:`_InertUnpickler`."""

    __name__ = "aria_inert_pickle"
    Unpickler = _InertUnpickler
    UnpicklingError = pickle.UnpicklingError

    @staticmethod
    def load(file: Any, **kwargs: Any) -> Any:
        return _InertUnpickler(file, **kwargs).load()


def plain(obj: Any) -> Any:
    """Plain Python values from an unpickled OmegaConf config (or anything already plain).

    ``DictConfig``/``ListConfig`` keep their children in ``_content``, value nodes their value
    in ``_val``; placeholders without either become ``None``.

    Parameters
    ----------
    obj : Any
        A value read by :func:`read_checkpoint`.
    """
    if isinstance(obj, Inert):
        d = obj.__dict__
        if "_content" in d:
            return plain(d["_content"])
        if "_val" in d:
            return plain(d["_val"])
        return None
    if isinstance(obj, Mapping):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [plain(v) for v in obj]
    return obj


def read_checkpoint(path: str | os.PathLike[str]) -> tuple[dict[str, torch.Tensor], Any]:
    """The model state dict and the stored ``conf`` of a CLEWS checkpoint.

    Accepts the authors' Fabric dict (``{"model": state_dict, "conf": ..., ...}``) and, for
    convenience, a bare state dict; a ``module.`` or ``_orig_mod.`` prefix shared by every key
    (DDP / ``torch.compile`` wrappers) is removed.

    Parameters
    ----------
    path : path
        The checkpoint file.

    Returns
    -------
    state : dict
        Parameter/buffer name → tensor (on the CPU).
    conf : Any
        The stored configuration as plain values (``None`` when absent).
    """
    p = Path(path)
    if not p.is_file():
        raise ParameterError(expected("weights", "an existing CLEWS checkpoint file", str(p)))
    # memory-mapped: the optimiser state a training checkpoint also holds (twice the model's
    # size for Adam) is never read; the model's tensors are copied out below
    kwargs: dict[str, Any] = {"map_location": "cpu", "weights_only": False}
    try:
        obj = torch.load(p, mmap=True, pickle_module=_InertPickle, **kwargs)
    except Exception:  # e.g. a legacy (non-zip) file, which cannot be memory-mapped
        try:
            obj = torch.load(p, pickle_module=_InertPickle, **kwargs)
        except Exception as exc:  # any failure means "not a torch checkpoint"
            raise FileFormatError(
                expected("weights", "a torch checkpoint (torch.save zip)", f"{p} ({exc})")
            ) from exc
    conf = None
    if isinstance(obj, Mapping) and isinstance(obj.get("model"), Mapping):
        conf = plain(obj.get("conf"))
        obj = obj["model"]
    if not isinstance(obj, Mapping) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in obj.items()
    ):
        raise FileFormatError(
            expected("weights", "a Fabric checkpoint dict with a 'model' state dict", str(p))
        )
    state = {k: v.clone() for k, v in obj.items()}
    for prefix in ("module.", "_orig_mod."):
        if state and all(k.startswith(prefix) for k in state):
            state = {k[len(prefix) :]: v for k, v in state.items()}
    return state, conf if isinstance(conf, dict) else None


def resolve_config(
    weights: str | os.PathLike[str], conf: Any, config: str | os.PathLike[str] | None = None
) -> tuple[ClewsConfig, str]:
    """The architecture of a checkpoint and where it was read from.

    Parameters
    ----------
    weights : path
        The checkpoint (its folder is searched for ``configuration.yaml``).
    conf : Any
        The configuration stored in the checkpoint (:func:`read_checkpoint`), or ``None``.
    config : path, optional
        An explicit ``configuration.yaml``.

    Returns
    -------
    config : ClewsConfig
    source : str
        The YAML path, ``"checkpoint"`` or ``"default (config/shs-clews.yaml)"``.
    """
    beside = Path(weights).parent / "configuration.yaml"
    path = Path(config) if config is not None else (beside if beside.is_file() else None)
    if path is not None:
        if not path.is_file():
            raise ParameterError(expected("config", "an existing configuration.yaml", str(path)))
        yaml = require("yaml", "embed", purpose="reading CLEWS's configuration.yaml")
        try:
            data = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise FileFormatError(expected(str(path), "valid YAML", str(exc))) from exc
        return ClewsConfig.from_conf(data if isinstance(data, dict) else {}, source=str(path)), str(
            path
        )
    if isinstance(conf, dict) and "model" in conf:
        return ClewsConfig.from_conf(conf, source=f"{weights} (stored conf)"), "checkpoint"
    return ClewsConfig(), "default (config/shs-clews.yaml)"


def write_checkpoint(
    path: str | os.PathLike[str], net: ClewsNet, *, write_config: bool = True
) -> Path:
    """Write ``net`` as the authors' Fabric checkpoint (and ``configuration.yaml`` beside it).

    The stored ``conf`` is a plain dict here (theirs is an OmegaConf ``DictConfig`` of the same
    layout; both load).

    Parameters
    ----------
    path : path
        Checkpoint file to write (atomically).
    net : ClewsNet
        The model.
    write_config : bool
        Also write ``configuration.yaml`` in the same folder, as the authors' run folders have.

    Returns
    -------
    pathlib.Path
    """
    conf = net.config.to_conf()
    optim = torch.optim.Adam(net.parameters(), lr=2e-4)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(optim, mode="max", patience=9)
    state = {
        "model": OrderedDict((k, v.detach().cpu()) for k, v in net.state_dict().items()),
        "optim": optim.state_dict(),
        "sched": sched.state_dict(),
        "conf": conf,
        "epoch": 0,
        "lr": 2e-4,
        "cost_best": 0.0,
    }
    out = Path(path)
    with atomic_path(out) as tmp:
        torch.save(state, tmp)
    if write_config:
        yaml = require("yaml", "embed", purpose="writing CLEWS's configuration.yaml")
        write_text(out.parent / "configuration.yaml", yaml.safe_dump(conf, sort_keys=False))
    return out
