"""MERT-v1-95M from a local folder: ``transformers.HubertModel`` built with MERT's configuration.

MERT (Li et al. 2023, ``m-a-p/MERT-v1-95M`` on the Hugging Face hub) is a HuBERT-architecture
music encoder: a 7-layer convolutional front end (strides 5·2⁶ = 320 → 75 frames/s at 24 kHz),
a feature projection with layer norm, a grouped convolutional position embedding and 12
post-norm transformer layers of width 768. Its hub folder ships ``config.json`` naming a custom
class (``"architectures": ["MERTModel"]``, ``"model_type": "mert_model"``, an ``auto_map`` to its
own ``modeling_MERT.py``) with a few keys HuBERT does not know (``feature_extractor_cqt``,
``deepnorm``, ``attention_relax``, ``sample_rate``). ``MERTModel`` subclasses ``HubertModel``
and, with ``feature_extractor_cqt`` and ``deepnorm`` off (as in MERT-v1-95M), builds exactly the
HuBERT modules with the same parameter names — so ARIA maps the config onto
``transformers.HubertConfig`` itself (:func:`hubert_config`) and never runs the folder's code
(no ``trust_remote_code``; nothing is downloaded). The state dict loads strictly: every
parameter of the model must be in the checkpoint (missing ones are refused, naming them);
checkpoint entries the inference model has no use for (``masked_spec_embed``, used only to mask
frames in pre-training; CQT or pre-training heads) are ignored and listed in :meth:`info`;
anything else unexpected is refused. The positional convolution's weight norm may be stored
old-style (``weight_g``/``weight_v``, as in MERT's published checkpoint) or as a torch
parametrization (``parametrizations.weight.original0/1``); both load.

**Preprocessing** is MERT's: ``transformers.Wav2Vec2FeatureExtractor`` at the model's rate
(``sample_rate`` of config.json, 24 kHz), ``do_normalize`` from ``preprocessor_config.json`` when
the folder has one, else ``False`` — MERT's pre-training config sets ``normalize: false`` for the
group-norm front end (option ``normalize`` overrides either). Normalisation, when on, is over
the whole signal before chunking. It matters little for this model: the first convolution has
no bias and is followed by a per-channel group norm over time, so gain and DC offset of the
input cancel up to the norm's epsilon (MARBLE, the authors' benchmark, runs it with
``do_normalize=True``; the tests check both give the same embedding to cosine > 0.999).

**Layer.** ``layer`` indexes the 13 hidden states (0 = the transformer's input after the
position embedding, *k* = output of transformer layer *k*). MERT's model card says each layer
suits different tasks and to choose empirically; the paper's embedding baseline uses "the
encoder's output embedding", i.e. ``last_hidden_state`` — so the default is the last layer
(12), which reproduces Table 3's setting; pass ``layer`` to probe others. Layers above the one
asked for are not computed.

**Long audio.** MERT was pre-trained on 5 s crops (model card, "Pre-train Context: 5 s"); a
signal longer than ``chunk_seconds`` (default 5) is cut into the fewest equal chunks no longer
than that (so no chunk is shorter than half of it), each chunk is encoded on its own, and the
frames of all chunks are returned in order; :meth:`Encoder.embed` averages them. Attention cost
grows with the square of the chunk length, and each chunk stays in the regime MERT was trained
in.

Sources read: MERT's model card and ``configuration_MERT.py``/``modeling_MERT.py`` on the hub
(m-a-p/MERT-v1-95M), its pre-training config (``sample_rate: 24000``, 5 s crops,
``normalize: false``), MARBLE's MERT wrapper, and the paper's appendix "Embedding baselines".
"""

from __future__ import annotations

import itertools
import json
import math
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from aria_tda._io import atomic_path
from aria_tda._optional import require
from aria_tda._options import Options, option
from aria_tda.embed.encoders.base import Encoder, file_sha256
from aria_tda.errors import AriaWarning, DataError, FileFormatError, ParameterError, expected

if TYPE_CHECKING:  # pragma: no cover
    import torch
    from transformers import HubertConfig, HubertModel

__all__ = [
    "MERT_V1_95M_CONFIG",
    "MERT_V1_95M_PREPROCESSOR",
    "MertEncoder",
    "MertOptions",
    "hubert_config",
    "load_mert",
    "save_random_checkpoint",
]

CONFIG_FILE = "config.json"
PREPROCESSOR_FILE = "preprocessor_config.json"
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")

#: ``config.json`` of m-a-p/MERT-v1-95M as published (MERT's own format; the architecture
#: values are the ones ``MERTModel`` builds from; dropouts and masking matter only in training).
MERT_V1_95M_CONFIG: dict[str, Any] = {
    "_name_or_path": "m-a-p/MERT-v1-95M",
    "activation_dropout": 0.0,
    "apply_spec_augment": True,
    "architectures": ["MERTModel"],
    "attention_dropout": 0.1,
    "attention_relax": -1.0,
    "auto_map": {
        "AutoConfig": "configuration_MERT.MERTConfig",
        "AutoModel": "modeling_MERT.MERTModel",
    },
    "bos_token_id": 1,
    "classifier_proj_size": 256,
    "conv_bias": False,
    "conv_dim": [512, 512, 512, 512, 512, 512, 512],
    "conv_kernel": [10, 3, 3, 3, 3, 2, 2],
    "conv_stride": [5, 2, 2, 2, 2, 2, 2],
    "ctc_loss_reduction": "sum",
    "ctc_zero_infinity": False,
    "deepnorm": False,
    "do_stable_layer_norm": False,
    "eos_token_id": 2,
    "feat_extract_activation": "gelu",
    "feat_extract_dropout": 0.0,
    "feat_extract_norm": "group",
    "feat_proj_dropout": 0.1,
    "feat_proj_layer_norm": True,
    "feature_extractor_cqt": False,
    "feature_extractor_cqt_bins": 336,
    "final_dropout": 0.1,
    "gradient_checkpointing": False,
    "hidden_act": "gelu",
    "hidden_dropout": 0.1,
    "hidden_size": 768,
    "initializer_range": 0.02,
    "intermediate_size": 3072,
    "layer_norm_eps": 1e-05,
    "layerdrop": 0.1,
    "mask_feature_length": 10,
    "mask_feature_min_masks": 0,
    "mask_feature_prob": 0.0,
    "mask_time_length": 10,
    "mask_time_min_masks": 2,
    "mask_time_prob": 0.05,
    "model_type": "mert_model",
    "num_attention_heads": 12,
    "num_conv_pos_embedding_groups": 16,
    "num_conv_pos_embeddings": 128,
    "num_feat_extract_layers": 7,
    "num_hidden_layers": 12,
    "pad_token_id": 0,
    "sample_rate": 24000,
    "torch_dtype": "float32",
    "transformers_version": "4.25.1",
    "use_weighted_layer_sum": False,
    "vocab_size": 32,
}

#: ``preprocessor_config.json`` of m-a-p/MERT-v1-95M (a ``Wav2Vec2FeatureExtractor`` at 24 kHz).
MERT_V1_95M_PREPROCESSOR: dict[str, Any] = {
    "do_normalize": False,
    "feature_extractor_type": "Wav2Vec2FeatureExtractor",
    "feature_size": 1,
    "padding_side": "right",
    "padding_value": 0,
    "return_attention_mask": True,
    "sampling_rate": 24000,
}

# the 2-layer narrow variant of save_random_checkpoint(small=True), for fast tests
_SMALL = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 64,
    "conv_dim": [32] * 7,
    "num_conv_pos_embeddings": 16,
    "num_conv_pos_embedding_groups": 4,
}

# MERT-config keys that HubertConfig takes as they are (missing ones: MERTConfig's defaults,
# which are the MERT-v1-95M values above)
_HUBERT_KEYS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "hidden_dropout",
    "activation_dropout",
    "attention_dropout",
    "feat_proj_layer_norm",
    "feat_proj_dropout",
    "final_dropout",
    "layerdrop",
    "initializer_range",
    "layer_norm_eps",
    "feat_extract_norm",
    "feat_extract_activation",
    "conv_dim",
    "conv_stride",
    "conv_kernel",
    "conv_bias",
    "num_conv_pos_embeddings",
    "num_conv_pos_embedding_groups",
    "do_stable_layer_norm",
)
# checkpoint entries that an inference model does not use: ignored, and listed by info()
_IGNORABLE_PREFIXES = (
    "masked_spec_embed",
    "feature_extractor_cqt.",
    "final_proj.",
    "label_embs_concat",
    "label_embs",
)
_MODEL_TYPES = ("mert_model", "hubert")


@dataclass(frozen=True)
class MertOptions(Options):
    """Options of :func:`load_mert` beyond ``weights``, ``layer`` and ``device``."""

    chunk_seconds: float = option(
        5.0,
        help="longest piece of audio encoded at once, in seconds (MERT was pre-trained "
        "on 5 s crops); longer signals are cut into equal chunks no longer than this",
        min_value=1.0,
        max_value=600.0,
    )
    normalize: bool | None = option(
        None,
        kind="bool",
        help="zero-mean unit-variance normalisation of the signal "
        "(Wav2Vec2FeatureExtractor do_normalize); default: preprocessor_config.json, else false",
    )


def hubert_config(config: Mapping[str, Any]) -> HubertConfig:
    """A ``transformers.HubertConfig`` for a MERT ``config.json`` (inference only).

    Refuses the MERT variants HuBERT's modules cannot express (``feature_extractor_cqt`` or
    ``deepnorm`` on). ``attention_relax`` is read by MERT's code only with ``deepnorm`` on, so it
    is ignored. Masking is switched off (``mask_time_prob = mask_feature_prob = 0``): it acts
    only in training, and its vector ``masked_spec_embed`` is then no model parameter.

    Parameters
    ----------
    config : mapping
        The parsed ``config.json`` (MERT's format, or a plain HuBERT one).
    """
    transformers = require("transformers", "embed", purpose="the MERT encoder")
    model_type = config.get("model_type", "mert_model")
    if model_type not in _MODEL_TYPES:
        raise FileFormatError(
            expected("config.json model_type", " or ".join(map(repr, _MODEL_TYPES)), model_type)
        )
    for key in ("feature_extractor_cqt", "deepnorm"):
        if bool(config.get(key, False)):
            raise FileFormatError(
                f"config.json: {key} is true; ARIA builds MERT as a HuBERT model, which has no "
                f"{'CQT input branch' if key == 'feature_extractor_cqt' else 'deepnorm residual'}"
                " (MERT-v1-95M has it off)"
            )
    values = {k: config.get(k, MERT_V1_95M_CONFIG[k]) for k in _HUBERT_KEYS}
    for k in ("conv_dim", "conv_stride", "conv_kernel"):
        values[k] = [int(v) for v in values[k]]
    if not len(values["conv_dim"]) == len(values["conv_stride"]) == len(values["conv_kernel"]):
        raise FileFormatError(
            expected(
                "config.json conv_dim/conv_stride/conv_kernel",
                "lists of equal length",
                [len(values[k]) for k in ("conv_dim", "conv_stride", "conv_kernel")],
            )
        )
    try:
        cfg = transformers.HubertConfig(
            **values,
            conv_pos_batch_norm=False,
            mask_time_prob=0.0,
            mask_feature_prob=0.0,
        )
    except (TypeError, ValueError) as exc:
        raise FileFormatError(f"config.json: not a valid MERT configuration ({exc})") from exc
    return cfg


class MertEncoder(Encoder):
    """MERT frame embeddings of one hidden layer (75 frames/s at 24 kHz for MERT-v1-95M).

    Built by :func:`load_mert`; see the module docstring for preprocessing, layer and chunks.
    """

    name = "mert"

    def __init__(
        self,
        model: HubertModel,
        *,
        folder: Path,
        weights_file: Path,
        layer: int,
        n_layers: int,
        sample_rate: int,
        normalize: bool,
        chunk_seconds: float,
        device: torch.device,
        ignored_keys: tuple[str, ...],
        receptive_field: int,
        config_name: str = "",
    ) -> None:
        transformers = require("transformers", "embed", purpose="the MERT encoder")
        self.model = model
        self.folder = folder
        self.weights_file = weights_file
        self.layer = layer
        self.n_layers = n_layers
        self.sample_rate = int(sample_rate)
        self.dim = int(model.config.hidden_size)
        self.normalize = bool(normalize)
        self.chunk_seconds = float(chunk_seconds)
        self.device = device
        self.ignored_keys = ignored_keys
        self.receptive_field = int(receptive_field)
        self.config_name = config_name
        self.feature_extractor = transformers.Wav2Vec2FeatureExtractor(
            feature_size=1,
            sampling_rate=self.sample_rate,
            padding_value=0.0,
            do_normalize=self.normalize,
            return_attention_mask=False,
        )
        self._info: dict[str, Any] | None = None

    def chunk_bounds(self, n_samples: int) -> list[tuple[int, int]]:
        """Sample ranges of the chunks a signal of ``n_samples`` is encoded in.

        The fewest equal chunks no longer than ``chunk_seconds`` (lengths differ by at most one
        sample).

        Parameters
        ----------
        n_samples : int
            Length of the signal.
        """
        limit = round(self.chunk_seconds * self.sample_rate)
        n = max(1, math.ceil(n_samples / limit))
        edges = np.linspace(0, n_samples, n + 1).round().astype(int)
        return [(int(a), int(b)) for a, b in itertools.pairwise(edges)]

    def embed_frames(self, y: np.ndarray) -> np.ndarray:
        """Hidden state ``layer`` of every frame of every chunk, ``(n_frames, dim)`` float32.

        Parameters
        ----------
        y : numpy.ndarray
            Mono audio at :attr:`sample_rate`, shape ``(n_samples,)``; at least one frame's
            receptive field long (400 samples for MERT-v1-95M).
        """
        import torch

        x = np.asarray(y)
        if x.ndim != 1:
            raise DataError(expected("y", "a mono signal of shape (n_samples,)", x.shape))
        if x.shape[0] < self.receptive_field:
            raise DataError(
                expected(
                    "y",
                    f"at least {self.receptive_field} samples (one MERT frame at "
                    f"{self.sample_rate} Hz)",
                    f"{x.shape[0]} samples",
                )
            )
        if not np.all(np.isfinite(x)):
            raise DataError(expected("y", "finite samples", "NaN or inf"))
        values = self.feature_extractor(
            x.astype(np.float32, copy=False), sampling_rate=self.sample_rate, return_tensors="np"
        )["input_values"][0].astype(np.float32, copy=False)
        frames = []
        with torch.inference_mode():
            for a, b in self.chunk_bounds(values.shape[0]):
                chunk = torch.from_numpy(np.ascontiguousarray(values[a:b]))[None].to(self.device)
                out = self.model(chunk, output_hidden_states=True, return_dict=True)
                frames.append(out.hidden_states[self.layer][0].float().cpu().numpy())
        return np.ascontiguousarray(np.concatenate(frames, axis=0), dtype=np.float32)

    def info(self) -> dict[str, Any]:
        """What a manifest records about this encoder (checkpoint digest computed once)."""
        if self._info is None:
            import safetensors
            import torch
            import transformers

            self._info = {
                "encoder": self.name,
                "config_name": self.config_name,
                "weights": str(self.folder),
                "weights_file": self.weights_file.name,
                "weights_sha256": file_sha256(self.weights_file),
                "config_sha256": file_sha256(self.folder / CONFIG_FILE),
                "layer": self.layer,
                "n_layers": self.n_layers,
                "sample_rate": self.sample_rate,
                "window_seconds": self.chunk_seconds,
                "frame_rate_hz": self.sample_rate / float(np.prod(self.model.config.conv_stride)),
                "dim": self.dim,
                "normalize": self.normalize,
                "pooling": "mean over frames of all chunks",
                "ignored_keys": list(self.ignored_keys),
                "versions": {
                    "torch": torch.__version__,
                    "transformers": transformers.__version__,
                    "safetensors": safetensors.__version__,
                },
            }
        return dict(self._info)


def _folder_files(weights: str | os.PathLike[str] | None) -> tuple[Path, Path]:
    wanted = (
        f"a MERT folder with {CONFIG_FILE} and {' or '.join(WEIGHT_FILES)} "
        f"({PREPROCESSOR_FILE} optional), e.g. the m-a-p/MERT-v1-95M hub folder"
    )
    if weights is None:
        from aria_tda.embed.encoders.registry import ENCODERS

        raise ParameterError(
            "weights: MERT needs its checkpoint and ARIA never downloads one; obtain "
            + ENCODERS["mert"].weights_hint
        )
    folder = Path(weights)
    if folder.is_file() and folder.name in (CONFIG_FILE, PREPROCESSOR_FILE, *WEIGHT_FILES):
        folder = folder.parent
    if not folder.is_dir():
        raise ParameterError(expected("weights", wanted, str(weights)))
    found = [folder / f for f in WEIGHT_FILES if (folder / f).is_file()]
    if not (folder / CONFIG_FILE).is_file() or not found:
        have = sorted(p.name for p in folder.iterdir())[:12]
        raise ParameterError(expected("weights", wanted, f"{str(folder)!r} holding {have}"))
    return folder, found[0]


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FileFormatError(f"{path}: not a readable JSON file ({exc})") from exc
    if not isinstance(data, dict):
        raise FileFormatError(expected(str(path), "a JSON object", type(data).__name__))
    return data


def _read_state_dict(path: Path) -> dict[str, torch.Tensor]:
    import torch

    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            sd = load_file(str(path), device="cpu")
        else:
            sd = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:  # any reader failure means an unreadable file
        raise FileFormatError(f"{path}: not a readable checkpoint ({exc})") from exc
    if isinstance(sd, Mapping) and "state_dict" in sd and isinstance(sd["state_dict"], Mapping):
        sd = sd["state_dict"]
    if not isinstance(sd, Mapping) or not all(isinstance(v, torch.Tensor) for v in sd.values()):
        raise FileFormatError(expected(str(path), "a state dict of tensors", type(sd).__name__))
    return dict(sd)


_NEW_G, _NEW_V = ".parametrizations.weight.original0", ".parametrizations.weight.original1"


def _rename(key: str, model_keys: set[str], prefix: str) -> str:
    if prefix and key.startswith(prefix):
        key = key[len(prefix) :]
    for old, new in ((".weight_g", _NEW_G), (".weight_v", _NEW_V)):
        if key.endswith(old) and key[: -len(old)] + new in model_keys:
            return key[: -len(old)] + new
        if key.endswith(new) and key[: -len(new)] + old in model_keys:
            return key[: -len(new)] + old
    return key


def _match_state_dict(
    sd: Mapping[str, torch.Tensor], model_sd: Mapping[str, torch.Tensor], path: Path
) -> tuple[dict[str, torch.Tensor], tuple[str, ...]]:
    """Checkpoint → model names; refuse missing, mismatched or unknown entries."""
    model_keys = set(model_sd)
    best: tuple[int, str] = (-1, "")
    for prefix in ("", "mert_model.", "hubert.", "model."):
        hits = sum(_rename(k, model_keys, prefix) in model_keys for k in sd)
        best = max(best, (hits, prefix), key=lambda t: t[0])
    prefix = best[1]
    renamed: dict[str, torch.Tensor] = {}
    ignored: list[str] = []
    unknown: list[str] = []
    for k, v in sd.items():
        new = _rename(k, model_keys, prefix)
        if new in model_keys:
            renamed[new] = v
        elif new.startswith(_IGNORABLE_PREFIXES):
            ignored.append(k)
        else:
            unknown.append(k)
    missing = sorted(model_keys - set(renamed))
    if missing:
        raise FileFormatError(
            f"{path}: {len(missing)} parameter(s) of the MERT model are missing from the "
            f"checkpoint (is config.json the one of these weights?): {', '.join(missing[:8])}"
            + (" ..." if len(missing) > 8 else "")
        )
    if unknown:
        raise FileFormatError(
            f"{path}: {len(unknown)} checkpoint entr(y/ies) match no MERT parameter (is "
            f"config.json the one of these weights?): {', '.join(sorted(unknown)[:8])}"
            + (" ..." if len(unknown) > 8 else "")
        )
    bad = [
        f"{k} {tuple(v.shape)} vs {tuple(model_sd[k].shape)}"
        for k, v in renamed.items()
        if tuple(v.shape) != tuple(model_sd[k].shape)
    ]
    if bad:
        raise FileFormatError(
            f"{path}: checkpoint shapes differ from config.json's model: {'; '.join(bad[:5])}"
        )
    return renamed, tuple(sorted(ignored))


def _receptive_field(kernels: Sequence[int], strides: Sequence[int]) -> int:
    field, jump = 1, 1
    for k, s in zip(kernels, strides, strict=True):
        field += (k - 1) * jump
        jump *= s
    return field


def load_mert(
    *,
    weights: str | os.PathLike[str] | None,
    layer: int | None = None,
    device: str = "cpu",
    **options: Any,
) -> MertEncoder:
    """Build MERT-v1-95M from a local hub folder (never downloads, never runs its code).

    Parameters
    ----------
    weights : path
        The folder of ``m-a-p/MERT-v1-95M`` (``config.json`` and ``model.safetensors`` or
        ``pytorch_model.bin``; ``preprocessor_config.json`` optional), or a file in it.
    layer : int, optional
        Hidden state to pool, 0..``num_hidden_layers`` (default: the last one, the model's
        output, as in the paper's baseline).
    device : str
        Torch device (``"cpu"``, ``"cuda"``, ...).
    **options : Any
        :class:`MertOptions`: ``chunk_seconds`` (default 5), ``normalize``.

    Returns
    -------
    MertEncoder
    """
    opts = MertOptions.from_mapping(options, what="mert options")
    torch = require("torch", "embed", purpose="the MERT encoder")
    transformers = require("transformers", "embed", purpose="the MERT encoder")
    folder, weights_file = _folder_files(weights)
    raw = _read_json(folder / CONFIG_FILE)
    cfg = hubert_config(raw)
    n_layers = int(cfg.num_hidden_layers)
    if layer is None:
        layer = n_layers
    if (
        isinstance(layer, bool)
        or not isinstance(layer, (int, np.integer))
        or not (0 <= int(layer) <= n_layers)
    ):
        raise ParameterError(expected("layer", f"an integer in 0..{n_layers}", layer))
    layer = int(layer)
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ParameterError(expected("device", "a torch device such as 'cpu'", device)) from exc

    sample_rate = int(raw.get("sample_rate", MERT_V1_95M_CONFIG["sample_rate"]))
    normalize = bool(MERT_V1_95M_PREPROCESSOR["do_normalize"])
    if (folder / PREPROCESSOR_FILE).is_file():
        pre = _read_json(folder / PREPROCESSOR_FILE)
        normalize = bool(pre.get("do_normalize", normalize))
        pre_rate = int(pre.get("sampling_rate", sample_rate))
        if pre_rate != sample_rate:
            raise FileFormatError(
                expected(
                    f"{PREPROCESSOR_FILE} sampling_rate",
                    f"{sample_rate} (the sample_rate of {CONFIG_FILE})",
                    pre_rate,
                )
            )
    if opts.normalize is not None:
        normalize = opts.normalize

    sd = _read_state_dict(weights_file)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.HubertModel(cfg)
    matched, ignored = _match_state_dict(sd, model.state_dict(), weights_file)
    model.load_state_dict(matched, strict=True)
    if layer < n_layers and not cfg.do_stable_layer_norm:
        # post-norm layers: hidden state k is the output of layer k, later ones are not needed
        model.encoder.layers = model.encoder.layers[: max(layer, 1)]
    model.to(dev).eval()
    notable = [k for k in ignored if not k.endswith("masked_spec_embed")]  # always there
    if notable:
        warnings.warn(
            f"MERT checkpoint {weights_file.name}: ignored {len(notable)} entr(y/ies) an "
            f"inference model does not use: {', '.join(notable[:5])}",
            AriaWarning,
            stacklevel=2,
        )
    return MertEncoder(
        model,
        folder=folder,
        weights_file=weights_file,
        layer=layer,
        n_layers=n_layers,
        sample_rate=sample_rate,
        normalize=normalize,
        chunk_seconds=opts.chunk_seconds,
        device=dev,
        ignored_keys=ignored,
        receptive_field=_receptive_field(cfg.conv_kernel, cfg.conv_stride),
        config_name=str(raw.get("_name_or_path", "")),
    )


def save_random_checkpoint(
    path: str | os.PathLike[str],
    *,
    seed: int = 0,
    small: bool = False,
    weights_format: str = "safetensors",
) -> Path:
    """Write a MERT folder in MERT's published format with random weights (for tests, benchmarks).

    ``config.json`` carries MERT-v1-95M's fields (``"architectures": ["MERTModel"]``,
    ``model_type "mert_model"``, the MERT-only keys); ``preprocessor_config.json`` MERT's feature
    extractor; the weights are a randomly initialised ``transformers.HubertModel`` of that
    configuration saved under MERT's parameter names (weight norm as ``weight_g``/``weight_v``,
    with ``masked_spec_embed``, as the published checkpoint has them).

    Parameters
    ----------
    path : path
        Folder to write (replaced atomically if it exists).
    seed : int
        Torch seed of the random initialisation (same seed, same weights).
    small : bool
        A 2-layer, 32-wide variant (same front-end strides, 75 frames/s) for fast tests.
    weights_format : {"safetensors", "bin"}
        ``model.safetensors`` or ``pytorch_model.bin``.
    """
    if weights_format not in ("safetensors", "bin"):
        raise ParameterError(expected("weights_format", "'safetensors' or 'bin'", weights_format))
    torch = require("torch", "embed", purpose="the MERT encoder")
    transformers = require("transformers", "embed", purpose="the MERT encoder")
    config = dict(MERT_V1_95M_CONFIG)
    if small:
        config.update(_SMALL)
        config["_name_or_path"] = "aria/MERT-random-small"
    cfg = hubert_config(config)
    cfg.mask_time_prob = float(config["mask_time_prob"])  # keep masked_spec_embed, as MERT's
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = transformers.HubertModel(cfg)
    sd: dict[str, Any] = {}
    for k, v in model.state_dict().items():
        if k.endswith(_NEW_G):
            k = k[: -len(_NEW_G)] + ".weight_g"
        elif k.endswith(_NEW_V):
            k = k[: -len(_NEW_V)] + ".weight_v"
        sd[k] = v.detach().clone().contiguous()
    out = Path(path)
    with atomic_path(out) as tmp:
        tmp.mkdir()
        (tmp / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        (tmp / PREPROCESSOR_FILE).write_text(
            json.dumps(MERT_V1_95M_PREPROCESSOR, indent=2) + "\n", encoding="utf-8"
        )
        if weights_format == "safetensors":
            from safetensors.torch import save_file

            save_file(sd, str(tmp / WEIGHT_FILES[0]), metadata={"format": "pt"})
        else:
            torch.save(sd, str(tmp / WEIGHT_FILES[1]))
    return out
