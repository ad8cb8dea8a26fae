"""What produced a score matrix: the model, its checkpoints and the data, as content digests.

:func:`provenance` is recorded in each score file's manifest under
``parameters["provenance"]`` by :func:`~aria_tda.attribution.run_method` and
:func:`~aria_tda.attribution.run_methods`, and the evidence dossier prints it, so an expert
can name exactly which model and data a figure came from:

- ``model``: the architecture's class (``module.QualName``) and its parameter count, and what
  an adapter's ``aria_provenance()`` adds (the Hugging Face config of
  :class:`aria_tda.integrations.huggingface.HFTokenModel`: model_type, parameters, digest);
- ``checkpoints``: one digest per checkpoint the method read (its state dict: every tensor's
  name, dtype, shape and bytes, in name order), in the order read;
- ``train_data``, ``query_data``: digests of the training and query windows (dtype, shape and
  bytes) with their shapes.

Digests are BLAKE2b-128 in hex (32 characters): equal digests mean equal content.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["array_digest", "provenance", "state_digest"]


def _hasher() -> Any:
    return hashlib.blake2b(digest_size=16)


def _bytes_of(x: Any) -> tuple[str, tuple[int, ...], bytes]:
    if hasattr(x, "detach"):  # a torch tensor (any dtype, bfloat16 included: its raw bytes)
        import torch

        t = x.detach().cpu().contiguous()
        raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        return str(t.dtype), tuple(int(s) for s in t.shape), raw
    a = np.ascontiguousarray(np.asarray(x))
    return str(a.dtype), tuple(int(s) for s in a.shape), a.tobytes()


def array_digest(x: Any) -> str:
    """Digest of one array or tensor: its dtype, shape and bytes.

    Parameters
    ----------
    x : array-like or torch.Tensor
        E.g. the training windows.
    """
    h = _hasher()
    dtype, shape, data = _bytes_of(x)
    h.update(f"{dtype}{shape}".encode())
    h.update(data)
    return h.hexdigest()


def state_digest(state: Mapping[str, Any]) -> str:
    """Digest of a state dict: every entry's name, dtype, shape and bytes, in name order.

    Parameters
    ----------
    state : mapping
        A model's ``state_dict()`` (tensors or arrays; other values by their ``repr``).
    """
    h = _hasher()
    for name in sorted(state):
        v = state[name]
        h.update(name.encode())
        if hasattr(v, "shape"):
            dtype, shape, data = _bytes_of(v)
            h.update(f"{dtype}{shape}".encode())
            h.update(data)
        else:
            h.update(repr(v).encode())
    return h.hexdigest()


def _checkpoint_list(checkpoints: Any) -> list[Any]:
    if checkpoints is None:
        return []
    if isinstance(checkpoints, Sequence) and not isinstance(checkpoints, (str, bytes)):
        return list(checkpoints)
    return [checkpoints]


def provenance(model: Any, checkpoints: Any, train: Any, queries: Any) -> dict[str, Any]:
    """The provenance record of one method's run (module docstring).

    Parameters
    ----------
    model : torch.nn.Module
        The architecture.
    checkpoints : checkpoint or sequence of checkpoints
        What the method read (state dicts or paths, as the methods take them).
    train, queries : array-like [shape=(N, L)]
        The training and query windows.

    Returns
    -------
    dict
        JSON-able.
    """
    from aria_tda.attribution.task import load_checkpoint

    cls = type(model)
    n_params = int(sum(int(p.numel()) for p in model.parameters())) \
        if hasattr(model, "parameters") else None
    digests = []
    for i, c in enumerate(_checkpoint_list(checkpoints)):
        state = c if isinstance(c, Mapping) else load_checkpoint(c, name=f"checkpoints[{i}]")
        digests.append(state_digest(state))
    record: dict[str, Any] = {"class": f"{cls.__module__}.{cls.__qualname__}",
                              "n_parameters": n_params}
    describe = getattr(model, "aria_provenance", None)
    if callable(describe):  # adapters (aria_tda.integrations.huggingface) name what they wrap
        record.update(describe())
    return {
        "model": record,
        "checkpoints": digests,
        "train_data": {"digest": array_digest(train), "shape": list(np.shape(train))},
        "query_data": {"digest": array_digest(queries), "shape": list(np.shape(queries))},
    }
