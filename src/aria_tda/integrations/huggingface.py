r"""Attribution of a Hugging Face causal language model through :mod:`aria_tda.attribution`.

A ``transformers`` causal LM (a :class:`~transformers.PreTrainedModel` whose forward returns a
``CausalLMOutput`` with ``.logits``) becomes ARIA's *token model* — int64 tokens ``(B, L)`` to
next-token logits ``(B, L, V)`` — by wrapping it in :class:`HFTokenModel`
(:func:`as_token_model`); every method of :func:`aria_tda.attribution.run_methods` then takes it::

    from aria_tda.attribution import run_methods
    from aria_tda.integrations.huggingface import as_token_model

    model = as_token_model(hf_model)                # eager attention, no cache, eval mode
    res = run_methods(["GradDot", "TRAK"], model, train, queries,
                      final=hf_model.state_dict(), ensemble=[hf_model.state_dict()],
                      out_dir="scores")

Conventions
-----------
- **Forward**: ``hf_model(input_ids=tokens, use_cache=False).logits`` — no attention mask
  (windows are full, never padded), no key/value cache, so every call is a pure function of
  the parameters that ``torch.func`` (``functional_call`` + ``vmap`` + ``grad``) traces.
- **Attention**: the model is switched to ``attn_implementation="eager"`` (the default of
  :class:`HFTokenModel`; the model is shared, not copied, so this changes ``hf_model`` too).
  With transformers 5.x and torch 2.13 (CPU), GPT-2, Llama, Mistral, Qwen2 and GPT-NeoX
  configurations trace under dattri's ``vmap(grad(...))`` with both ``"eager"`` and
  ``"sdpa"``, and the per-sample gradients equal one-window-at-a-time gradients; with
  ``"sdpa"`` torch has no batching rule for the CPU attention kernel and loops over the
  windows (a "performance drop" warning, correct numbers). ``flash_attention_2`` and
  ``flex_attention`` are refused.
- **Checkpoints**: the adapter's own state-dict keys are the Hugging Face keys under
  ``hf.`` (``hf.transformer.wte.weight``); a state dict with the model's own keys
  (``hf_model.state_dict()``, a ``model.safetensors`` file read by :func:`hf_state_dict`)
  loads into the adapter as it is, and weights tied in the model (GPT-2's ``lm_head.weight``
  and ``transformer.wte.weight``) may be given once, as ``save_pretrained`` stores them.
- **Provenance**: :meth:`HFTokenModel.aria_provenance` is the Hugging Face part of the
  score files' provenance record: the model class, ``model_type``, parameter count (tied
  weights once), vocabulary size, context length, attention implementation, the
  ``transformers`` version and a digest of the full configuration.
- **LoGra / FactGraSS** hook :class:`torch.nn.Linear` layers only: they see every projection
  of Llama-style models, but of GPT-2 only ``lm_head`` (GPT-2's attention and MLP layers are
  ``transformers``' ``Conv1D``).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from aria_tda._optional import require
from aria_tda.errors import DataError, ParameterError, expected

torch = require("torch", "integrations", purpose="attribution of Hugging Face models")
transformers = require("transformers", "integrations", purpose="attribution of Hugging Face models")

from torch import nn  # noqa: E402

__all__ = ["ATTN_IMPLEMENTATIONS", "HFTokenModel", "as_token_model", "hf_state_dict"]

#: Attention implementations :class:`HFTokenModel` accepts (``None``: leave the model's own).
ATTN_IMPLEMENTATIONS = ("eager", "sdpa")

#: The prefix of the wrapped model's keys in the adapter's state dict.
PREFIX = "hf."


def _check_causal_lm(model: Any) -> Any:
    if not isinstance(model, transformers.PreTrainedModel):
        what = "a transformers.PreTrainedModel (a causal language model)"
        raise ParameterError(expected("model", what, type(model).__name__))
    return model


def _max_positions(config: Any) -> int | None:
    for key in ("max_position_embeddings", "n_positions", "n_ctx"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


class HFTokenModel(nn.Module):
    r"""A Hugging Face causal LM as ARIA's token model: tokens ``(B, L)`` → logits ``(B, L, V)``.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal language model whose forward takes ``input_ids`` and returns ``.logits``
        (``GPT2LMHeadModel``, ``LlamaForCausalLM``, ``AutoModelForCausalLM.from_config(...)``).
        Shared, not copied: the adapter's parameters are the model's.
    attn_implementation : {"eager", "sdpa"} or None
        Switch the model to this attention implementation (``None``: keep its own; see the
        module docstring for which trace under ``torch.func``).

    Attributes
    ----------
    hf : transformers.PreTrainedModel
        The wrapped model (in eval mode).
    max_positions : int or None
        The longest window the model takes (its position embeddings), if its config says.
    """

    def __init__(self, model: Any, *, attn_implementation: str | None = "eager") -> None:
        super().__init__()
        model = _check_causal_lm(model)
        if attn_implementation is not None:
            if attn_implementation not in ATTN_IMPLEMENTATIONS:
                raise ParameterError(expected(
                    "attn_implementation", f"one of {ATTN_IMPLEMENTATIONS} or None",
                    attn_implementation))
            model.set_attn_implementation(attn_implementation)
        self.hf = model
        self.max_positions = _max_positions(model.config)
        self.eval()
        self.register_load_state_dict_pre_hook(_accept_hf_keys)

    def forward(self, tokens: Any) -> Any:
        """Next-token logits of ``tokens``.

        Parameters
        ----------
        tokens : torch.Tensor [shape=(B, L)], int64
            Token windows; ``L`` at most :attr:`max_positions`.

        Returns
        -------
        torch.Tensor [shape=(B, L, V)]
            ``logits[:, t]`` predicts token ``t + 1``.
        """
        length = int(tokens.shape[-1])
        if self.max_positions is not None and length > self.max_positions:
            what = f"windows of at most {self.max_positions} tokens (the model's context)"
            raise ParameterError(expected("tokens", what, f"{length} tokens"))
        return self.hf(input_ids=tokens, use_cache=False).logits

    def aria_provenance(self) -> dict[str, Any]:
        """The Hugging Face part of a score file's provenance record (JSON-able).

        Returns
        -------
        dict
            ``{"huggingface": {"class", "model_type", "n_parameters", "vocab_size",
            "max_positions", "attn_implementation", "name_or_path", "transformers_version",
            "config_digest"}}``; ``config_digest`` is BLAKE2b-128 of the full configuration
            as sorted JSON.
        """
        cfg = self.hf.config
        cls = type(self.hf)
        text = json.dumps(cfg.to_dict(), sort_keys=True, default=str)
        return {"huggingface": {
            "class": f"{cls.__module__}.{cls.__qualname__}",
            "model_type": getattr(cfg, "model_type", None),
            "n_parameters": int(sum(p.numel() for p in self.hf.parameters())),
            "vocab_size": getattr(cfg, "vocab_size", None),
            "max_positions": self.max_positions,
            "attn_implementation": getattr(cfg, "_attn_implementation", None),
            "name_or_path": str(getattr(cfg, "_name_or_path", "") or "") or None,
            "transformers_version": transformers.__version__,
            "config_digest": hashlib.blake2b(text.encode(), digest_size=16).hexdigest(),
        }}


def _accept_hf_keys(module: nn.Module, state_dict: dict[str, Any], prefix: str, *_: Any) -> None:
    """Load-state-dict pre-hook: rename the wrapped model's own keys to the adapter's
    (``k`` → ``hf.k``) and fill weights tied in the model from the one given."""
    hf: Any = module.hf
    own = hf.state_dict(keep_vars=True)
    for key in [k for k in state_dict if k.startswith(prefix)]:
        rel = key[len(prefix):]
        if not rel.startswith(PREFIX) and rel in own:
            state_dict[prefix + PREFIX + rel] = state_dict.pop(key)
    groups: dict[int, list[str]] = {}
    for name, value in own.items():
        groups.setdefault(id(value), []).append(name)
    for names in groups.values():
        given = [n for n in names if prefix + PREFIX + n in state_dict]
        if given and len(given) < len(names):
            for n in names:
                state_dict.setdefault(prefix + PREFIX + n, state_dict[prefix + PREFIX + given[0]])


def as_token_model(model: Any, *, attn_implementation: str | None = "eager") -> HFTokenModel:
    """ARIA's token model of a Hugging Face causal LM (:class:`HFTokenModel`).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal language model (shared, not copied).
    attn_implementation : {"eager", "sdpa"} or None
        Attention implementation to switch the model to (``None``: keep its own).

    Returns
    -------
    HFTokenModel
        In eval mode; tokens ``(B, L)`` → logits ``(B, L, V)``.
    """
    return HFTokenModel(model, attn_implementation=attn_implementation)


def hf_state_dict(source: Any) -> dict[str, Any]:
    """A state dict with the Hugging Face model's own keys, from a model or from disk.

    Parameters
    ----------
    source : transformers.PreTrainedModel or path
        A model (its weights, detached copies); a ``.safetensors`` file; or a folder written
        by ``save_pretrained`` (``model.safetensors``, or the shards that
        ``model.safetensors.index.json`` lists).

    Returns
    -------
    dict
        Name → tensor; loads into :class:`HFTokenModel` (and into the model itself).
    """
    if isinstance(source, transformers.PreTrainedModel):
        return {k: v.detach().clone() for k, v in source.state_dict().items()}
    if not isinstance(source, (str, os.PathLike)):
        what = "a PreTrainedModel, a .safetensors file or a save_pretrained folder"
        raise ParameterError(expected("source", what, type(source).__name__))
    from safetensors.torch import load_file

    path = Path(source)
    if path.is_file() and path.suffix == ".safetensors":
        return dict(load_file(str(path)))
    if path.is_dir():
        single, index = path / "model.safetensors", path / "model.safetensors.index.json"
        if single.is_file():
            return dict(load_file(str(single)))
        if index.is_file():
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
            out: dict[str, Any] = {}
            for shard in shards:
                out.update(load_file(str(path / shard)))
            return out
    raise DataError(f"source: no model.safetensors (or index) found at {str(path)!r}")
