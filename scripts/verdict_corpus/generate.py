"""Calibration corpus for ARIA's collapse verdict (issue 37): peer-library score matrices.

Runs in the peer-library environment (``/work/peer-venv``, built by
``scripts/peer_fixtures/setup_env.sh``; plus scikit-learn for ``load_digits``), never in the
project's. Writes training x query attribution score matrices with the libraries themselves,
in their native file formats, over three model families, several seeds each, and labels every
file with a criterion OUTSIDE ARIA (``README.md`` in this folder: criteria, split rule,
runtimes).

Families (``FAMILIES``)
-----------------------
``digits_mlp``  MLP 64 -> 32 -> 10 (ELU) on scikit-learn's bundled ``load_digits``: 1,000
                training images x 100 queries (10 per digit), seeds 0-5.
``digits_cnn``  conv 1->4 3x3, conv 4->8 3x3, 2x2 max-pool, linear 128 -> 10 on the same data,
                seeds 0-3.
``music_lm``    causal transformer (1 block, d = 32, 2 heads, own ``nn.Linear`` q/k/v/o) on
                pitch/duration token sequences of four music21 corpus collections (the
                ``music_tokens.py`` helper exports them with the project's Python): 1,000
                training sequences x 100 queries (25 per collection), 33 tokens each, seeds 0-3.

Methods per family and seed
---------------------------
Attribution methods (label from LDS against retraining, see ``README.md``):

- traker 0.3.2   TRAK, an ensemble of 3 independently initialised models, ``proj_dim`` 256,
                 ``finalize_scores`` -> ``scores/queries.mmap`` (float32).
- kronfluence    EK-FAC (empirical Fisher), ``compute_pairwise_scores`` -> ``pairwise_scores
                 .safetensors`` (query x training; ARIA transposes it itself).
- dattri 0.3.0   TracIn over 3 checkpoints (``TracInAttributor``, weights = lr, no projection),
                 and IF, damping 0.1 (``IFAttributorExplicit`` on the MLP, ``IFAttributorCG``
                 with 20 iterations on the CNN, ``IFAttributorDataInf`` on the transformer):
                 ``torch.save`` of the training x query tensor.
- captum 0.8.0   ``TracInCPFast`` (last linear layer) over the same 3 checkpoints (classifiers
                 only; ``TracInCP`` over all layers would repeat dattri's TracIn exactly):
                 ``torch.save`` of the query x training tensor (read with ``--transpose``).
- bergson 2.5.1  ``Scorer`` + ``MemmapSequenceScoreWriter`` on per-module raw gradients (every
                 ``nn.Linear``/``nn.Conv2d``; GradDot) -> ``scores/scores.bin`` + ``info.json``.

Known failures (label from their construction):

- randomized  traker TRAK and kronfluence EK-FAC on a freshly initialised, untrained model of
              the same architecture ("randomized": a model-randomisation test, not a collapse).
- planted     (classifiers) dattri GradDot (``TracInAttributor``, 1 checkpoint, no projection)
              on a model trained with 1 % planted high-gradient rows: 5 far-out rays (a
              training image x 8) of 2 rows with conflicting labels. Collapse iff the planted
              rows hold the top-1 of >= 50 % of the queries (else "unlabelled"). Not done on
              the transformer: random-token sequences reach only ~1.7x the median gradient
              norm there (LayerNorm bounds the per-token gradients) and lead no query's top-1.
- qindep      a query-independent ranking: every column = dattri's GradDot self-influence
              (``TracInAttributor.self_attribute``) of the trained model + 5 % noise; ``.npy``.
- signflip    a sign-flipping dominant axis: dattri's TracIn matrix with 5 rows replaced by
              +/- (3.0, 2.8, ..., 2.2) x max|S|, the sign - for the queries of the "flipped"
              classes (2 of 10 digits, 1 of 4 collections) and + for all others; ``torch.save``.
- rank1       kronfluence's EK-FAC matrix (transposed to training x query) + a rank-1 term
              a u 1^T with constant query loading and u ~ N(0, 1), scaled to 95 % of the energy;
              ``.npy``.

Outputs: ``DIR/<family>/s<seed>/...`` and ``DIR/manifest.d/generate.json``; then every
``DIR/manifest.d/*.json`` (``similarity.py`` writes the other one) is merged into
``DIR/manifest.json``.

Deterministic: seeded, one thread, ``torch.use_deterministic_algorithms(True)``.

Usage::

    /work/peer-venv/bin/python scripts/verdict_corpus/generate.py [--out DIR]
        [--families digits_mlp,...] [--seeds 0,1] [--tokens PATH] [--project-python PY]
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import importlib.metadata
import json
import logging
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("TORCHDYNAMO_DISABLE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import torch
import torch.nn.functional as F
from corpus_manifest import merge_manifest
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DEFAULT_OUT = Path("/work/verdict-corpus")
DEFAULT_PROJECT_PY = ROOT / ".venv" / "bin" / "python"

N_TRAIN, N_QUERY = 1000, 100
N_CKPT_MODELS = 3  # TRAK ensemble size
TRAK_PROJ_DIM = 256
IF_DAMPING = 0.1
PLANT_FRACTION = 0.01
PLANT_SCALE = 8.0
PLANT_RAYS = 5
PLANT_MIN_TOP1 = 0.5
SIGNFLIP_ROWS = (3.0, 2.8, 2.6, 2.4, 2.2)
QINDEP_NOISE = 0.05
RANK1_ENERGY = 0.95
LDS_BOOT = 2000

FAMILIES = {
    "digits_mlp": {"seeds": (0, 1, 2, 3, 4, 5), "lds_subsets": 32},
    "digits_cnn": {"seeds": (0, 1, 2, 3), "lds_subsets": 32},
    "music_lm": {"seeds": (0, 1, 2, 3), "lds_subsets": 24},
}
#: how each library stores the matrix (kronfluence: ARIA transposes it itself; captum: the
#: manifest's reader says ``transpose``)
STORED = {"kronfluence": "query x train", "captum": "query x train"}

def say(msg: str, *args) -> None:
    print(time.strftime("%H:%M:%S ") + (msg % args if args else msg), flush=True)


# =========================================================================== problems
class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.elu(self.fc1(x)))


class CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 8, 3, padding=1)
        self.fc = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.conv1(x))
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)
        return self.fc(h.flatten(1))


class TinyLM(nn.Module):
    """One pre-LN transformer block; attention from plain ``nn.Linear`` q/k/v/o."""

    def __init__(self, vocab: int, t: int = 32, d: int = 32, heads: int = 2,
                 hidden: int = 64) -> None:
        super().__init__()
        self.vocab, self.d, self.heads = vocab, d, heads
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(t, d)
        self.ln1 = nn.LayerNorm(d)
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.o = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, hidden)
        self.fc2 = nn.Linear(hidden, d)
        self.lnf = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)
        self.register_buffer("mask", torch.triu(torch.full((t, t), float("-inf")), 1))
        self.register_buffer("positions", torch.arange(t))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t = x.shape
        h = self.tok(x) + self.pos(self.positions[:t])
        a = self.ln1(h)
        dh = self.d // self.heads

        def split(z):
            return z.reshape(b, t, self.heads, dh).transpose(1, 2)

        q, k, v = split(self.q(a)), split(self.k(a)), split(self.v(a))
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh) + self.mask[:t, :t], dim=-1)
        h = h + self.o((att @ v).transpose(1, 2).reshape(b, t, self.d))
        h = h + self.fc2(F.gelu(self.fc1(self.ln2(h))))
        return self.head(self.lnf(h))


class Problem:
    """One family at one seed: data, architecture, training recipe, loss and output."""

    def __init__(self, family: str, seed: int, tokens_path: Path | None) -> None:
        self.family, self.seed = family, seed
        self.kind = "lm" if family == "music_lm" else "clf"
        if self.kind == "clf":
            self._digits(seed)
            self.epochs, self.ckpt_epochs, self.lr, self.batch = 30, (10, 20, 30), 0.003, 32
        else:
            self._music(seed, tokens_path)
            self.epochs, self.ckpt_epochs, self.lr, self.batch = 30, (10, 20, 30), 0.003, 32

    # ------------------------------------------------------------------ data
    def _digits(self, seed: int) -> None:
        from sklearn.datasets import load_digits

        d = load_digits()
        x = d.data.astype(np.float32) / 16.0
        y = d.target.astype(np.int64)
        rng = np.random.default_rng(seed)
        perm = rng.permutation(len(y))
        q = np.concatenate([perm[y[perm] == c][:N_QUERY // 10] for c in range(10)])
        rest = perm[~np.isin(perm, q)][:N_TRAIN]
        shape = (-1, 64) if self.family == "digits_mlp" else (-1, 1, 8, 8)
        self.x_train = torch.tensor(x[rest]).reshape(shape)
        self.y_train = torch.tensor(y[rest])
        self.x_query = torch.tensor(x[q]).reshape(shape)
        self.y_query = torch.tensor(y[q])
        self.q_class = y[q]
        self.n_classes = 10
        self.dataset = "sklearn load_digits (8x8, /16)"
        self.model_name = "MLP 64-32-10 ELU" if self.family == "digits_mlp" else \
            "CNN conv4-conv8-pool-fc10"
        self.train_index = rest

    def _music(self, seed: int, tokens_path: Path | None) -> None:
        if tokens_path is not None and tokens_path.is_file():
            z = np.load(tokens_path)
            tok, cls = z["tokens"].astype(np.int64), z["cls"].astype(np.int64)
            self.vocab = int(z["vocab"])
            self.dataset = ("music21 corpus tokens: " + ", ".join(str(c) for c in z["classes"])
                            + " (first 16 notes, pitch/duration)")
        else:
            tok, cls, self.vocab = synthetic_tokens()
            self.dataset = "synthetic structured token sequences (music21 export unavailable)"
        n_cls = int(cls.max()) + 1
        rng = np.random.default_rng(seed)
        perm = rng.permutation(len(cls))
        per = N_QUERY // n_cls
        q = np.concatenate([perm[cls[perm] == c][:per] for c in range(n_cls)])
        rest = perm[~np.isin(perm, q)][:N_TRAIN]
        t = torch.tensor(tok)
        self.x_train, self.y_train = t[rest, :-1].contiguous(), t[rest, 1:].contiguous()
        self.x_query, self.y_query = t[q, :-1].contiguous(), t[q, 1:].contiguous()
        self.q_class = cls[q]
        self.n_classes = n_cls
        self.model_name = "causal transformer 1 block d32 2 heads"
        self.train_index = rest

    # ------------------------------------------------------------------ model
    def make_model(self, init_seed: int) -> nn.Module:
        torch.manual_seed(init_seed)
        if self.family == "digits_mlp":
            return MLP()
        if self.family == "digits_cnn":
            return CNN()
        return TinyLM(self.vocab, t=self.x_train.shape[1])

    def model_at(self, state: dict) -> nn.Module:
        m = self.make_model(0)
        m.load_state_dict(state)
        m.eval()
        return m

    def batch_loss(self, logits: torch.Tensor, y: torch.Tensor, reduction: str = "mean"):
        if self.kind == "clf":
            return F.cross_entropy(logits, y, reduction=reduction)
        if reduction == "none":
            return F.cross_entropy(logits.transpose(1, 2), y, reduction="none").mean(1)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1),
                               reduction=reduction)

    def per_example_dims(self) -> int:
        return self.x_train.dim() - 1

    def train(self, x: torch.Tensor, y: torch.Tensor, init_seed: int, order_seed: int
              ) -> list[dict]:
        """Adam, fixed epochs; the state dicts at ``ckpt_epochs``."""
        model = self.make_model(init_seed)
        model.train()
        opt = torch.optim.Adam(model.parameters(), lr=self.lr)
        gen = torch.Generator().manual_seed(order_seed)
        n = len(y)
        ckpts = []
        for epoch in range(1, self.epochs + 1):
            perm = torch.randperm(n, generator=gen)
            for s in range(0, n, self.batch):
                b = perm[s:s + self.batch]
                opt.zero_grad()
                self.batch_loss(model(x[b]), y[b]).backward()
                opt.step()
            if epoch in self.ckpt_epochs:
                ckpts.append(copy.deepcopy(model.state_dict()))
        return ckpts

    @torch.no_grad()
    def outputs(self, state: dict, x: torch.Tensor, y: torch.Tensor) -> np.ndarray:
        """The measured output per query: margin (classifiers), -mean token loss (LM)."""
        logits = self.model_at(state)(x)
        if self.kind == "clf":
            rows = torch.arange(len(y))
            correct = logits[rows, y]
            rest = logits.clone()
            rest[rows, y] = -torch.inf
            return (correct - rest.logsumexp(-1)).double().numpy()
        return (-self.batch_loss(logits, y, reduction="none")).double().numpy()

    @torch.no_grad()
    def accuracy(self, state: dict, x: torch.Tensor, y: torch.Tensor) -> float:
        logits = self.model_at(state)(x)
        return float((logits.argmax(-1) == y).float().mean())

    def loaders(self, x, y, batch: int = 100) -> DataLoader:
        return DataLoader(TensorDataset(x, y), batch_size=batch, shuffle=False)


def synthetic_tokens(n: int = 1400, vocab: int = 57, t: int = 33, n_cls: int = 4,
                     seed: int = 12345):
    """Fallback when music21 tokens cannot be exported: 4 classes of Markov-chain sequences."""
    rng = np.random.default_rng(seed)
    trans = rng.dirichlet(np.full(vocab - 1, 0.1), size=(n_cls, vocab - 1))
    cls = np.arange(n) % n_cls
    tok = np.zeros((n, t), dtype=np.int64)
    for i in range(n):
        s = rng.integers(vocab - 1)
        for j in range(1, t):
            tok[i, j] = 1 + s
            s = rng.choice(vocab - 1, p=trans[cls[i], s])
    return tok, cls, vocab


def plant(p: Problem) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """The planted training set (classifiers): 1 % rows with huge, persistent loss gradients.

    ``PLANT_RAYS`` groups of rows (10 rows in all, 1 %), each group on its own far-out ray -- a
    random training image x ``PLANT_SCALE`` x (1, 0.98) -- with conflicting labels (two classes
    other than the image's, one per row): no model fits both labels there, so these rows keep
    huge loss gradients to the end of training (as in ``scripts/peer_fixtures``, which used one
    ray). The sign of their GradDot score flips with the query's class.
    """
    rng = np.random.default_rng(p.seed + 7)
    n = round(PLANT_FRACTION * len(p.y_train))
    idx = np.sort(rng.choice(len(p.y_train), size=n, replace=False))
    x, y = p.x_train.clone(), p.y_train.clone()
    for grp in np.array_split(idx, PLANT_RAYS):
        src = int(rng.integers(len(p.y_train)))
        others = [c for c in range(p.n_classes) if c != int(p.y_train[src])]
        a, b = (int(c) for c in rng.choice(others, size=2, replace=False))
        for j, i in enumerate(grp):
            x[i] = p.x_train[src] * PLANT_SCALE * (1.0 - 0.02 * j)
            y[i] = a if j % 2 == 0 else b
    return x, y, idx


# =========================================================================== libraries
def dattri_task(p: Problem, model: nn.Module, ckpts):
    from dattri.task import AttributionTask

    nd = p.per_example_dims()

    def loss_func(params, batch):
        x, y = batch
        if x.dim() == nd:  # called on one example (vmapped)
            x, y = x.unsqueeze(0), y.unsqueeze(0)
        return p.batch_loss(torch.func.functional_call(model, params, x), y)

    return AttributionTask(loss_func=loss_func, model=model, checkpoints=ckpts)


def run_dattri_tracin(p, x, y, ckpts, *, weights) -> torch.Tensor:
    from dattri.algorithm.tracin import TracInAttributor

    model = p.model_at(ckpts[-1])
    task = dattri_task(p, model, list(ckpts) if len(ckpts) > 1 else ckpts[-1])
    att = TracInAttributor(task, weight_list=torch.tensor(weights, dtype=torch.float32),
                           normalized_grad=False)
    att.projector_kwargs = None
    return att.attribute(p.loaders(x, y), p.loaders(p.x_query, p.y_query)).detach().cpu()


def run_dattri_self(p, ckpts) -> torch.Tensor:
    from dattri.algorithm.tracin import TracInAttributor

    model = p.model_at(ckpts[-1])
    att = TracInAttributor(dattri_task(p, model, ckpts[-1]), weight_list=torch.ones(1),
                           normalized_grad=False)
    att.projector_kwargs = None
    return att.self_attribute(p.loaders(p.x_train, p.y_train)).detach().cpu()


def run_dattri_if(p, ckpts) -> tuple[torch.Tensor, str]:
    """dattri IF: explicit Hessian (MLP), CG (CNN: its explicit Hessian does not fit in memory),
    DataInf (transformer). One training batch everywhere: dattri recomputes the inverse-Hessian
    transform of the queries once per training batch, and sums it over the cached batches."""
    from dattri.algorithm.influence_function import (
        IFAttributorCG,
        IFAttributorDataInf,
        IFAttributorExplicit,
    )

    model = p.model_at(ckpts[-1])
    task = dattri_task(p, model, ckpts[-1])
    full = p.loaders(p.x_train, p.y_train, batch=len(p.y_train))
    if p.family == "digits_mlp":
        att = IFAttributorExplicit(task, regularization=IF_DAMPING)
        call, q_batch = f"IFAttributorExplicit(regularization={IF_DAMPING})", 100
    elif p.family == "digits_cnn":
        att = IFAttributorCG(task, regularization=IF_DAMPING, max_iter=20)
        call, q_batch = f"IFAttributorCG(regularization={IF_DAMPING}, max_iter=20)", 5
    else:
        att = IFAttributorDataInf(task, regularization=IF_DAMPING)
        call, q_batch = f"IFAttributorDataInf(regularization={IF_DAMPING})", 25
    att.cache(full)
    s = att.attribute(full, p.loaders(p.x_query, p.y_query, batch=q_batch))
    return s.detach().cpu(), call


def run_captum(p, ckpts, work: Path) -> torch.Tensor:
    """captum ``TracInCPFast`` (last linear layer, 3 checkpoints) -- queries x training."""
    from captum.influence import TracInCPFast

    paths = []
    for i, c in enumerate(ckpts):
        path = work / f"captum_ckpt{i}.pt"
        torch.save(c, path)
        paths.append(str(path))

    def load(model, path):
        model.load_state_dict(torch.load(path, weights_only=True))
        return p.lr

    model = p.model_at(ckpts[-1])
    last = model.fc2 if p.family == "digits_mlp" else model.fc
    cp = TracInCPFast(model, final_fc_layer=last, train_dataset=TensorDataset(p.x_train,
                                                                               p.y_train),
                      checkpoints=paths, checkpoints_load_func=load,
                      loss_fn=nn.CrossEntropyLoss(reduction="sum"), batch_size=100)
    return cp.influence((p.x_query, p.y_query)).detach().cpu()


def lm_model_output():
    from trak.modelout_functions import AbstractModelOutput

    class LMMarginOutput(AbstractModelOutput):
        """Sum over positions of the next-token margin log(p/(1-p)); Q = mean (1 - p)."""

        def __init__(self) -> None:
            super().__init__()

        def get_output(self, model, weights, buffers, x, y):
            logits = torch.func.functional_call(model, (weights, buffers), x.unsqueeze(0))[0]
            rows = torch.arange(logits.shape[0])
            correct = logits[rows, y]
            rest = logits.clone()
            rest[rows, y] = torch.tensor(-torch.inf, dtype=logits.dtype)
            return (correct - rest.logsumexp(dim=-1)).sum()

        def get_out_to_loss_grad(self, model, weights, buffers, batch):
            x, y = batch
            logits = torch.func.functional_call(model, (weights, buffers), x)
            ps = torch.softmax(logits, -1).gather(-1, y.unsqueeze(-1)).squeeze(-1)
            return (1 - ps).mean(1, keepdim=True).clone().detach()

    return LMMarginOutput()


def run_traker(p, states: list[dict], save_dir: Path) -> Path:
    """TRAK over ``states`` (one model per state, averaged by traker) -> queries.mmap."""
    from trak import TRAKer

    task = "image_classification" if p.kind == "clf" else lm_model_output()
    model = p.model_at(states[0])
    traker = TRAKer(model=model, task=task, train_set_size=len(p.y_train),
                    save_dir=str(save_dir), device="cpu", proj_dim=TRAK_PROJ_DIM,
                    use_half_precision=False, logging_level=logging.ERROR, projector_seed=0)
    for mid, st in enumerate(states):
        traker.load_checkpoint(st, model_id=mid)
        for x, y in p.loaders(p.x_train, p.y_train):
            traker.featurize(batch=(x, y), num_samples=len(x))
    traker.finalize_features()
    for mid, st in enumerate(states):
        traker.start_scoring_checkpoint(exp_name="queries", checkpoint=st, model_id=mid,
                                        num_targets=len(p.y_query))
        for x, y in p.loaders(p.x_query, p.y_query):
            traker.score(batch=(x, y), num_samples=len(x))
    traker.finalize_scores(exp_name="queries")
    return save_dir / "scores" / "queries.mmap"


def run_kronfluence(p, state: dict, out_dir: Path) -> Path:
    from kronfluence.analyzer import Analyzer, prepare_model
    from kronfluence.arguments import FactorArguments, ScoreArguments
    from kronfluence.task import Task

    prob = p

    class KTask(Task):
        def compute_train_loss(self, batch, model, sample=False):
            x, y = batch
            return prob.batch_loss(model(x), y, reduction="sum")

        def compute_measurement(self, batch, model):
            x, y = batch
            if prob.kind == "lm":  # the summed token loss (kronfluence's default)
                return prob.batch_loss(model(x), y, reduction="sum")
            logits = model(x)  # kronfluence's own classification example: -margin
            rows = torch.arange(logits.shape[0])
            correct = logits[rows, y]
            rest = logits.clone()
            rest[rows, y] = -torch.inf
            return -(correct - rest.logsumexp(dim=-1)).sum()

    task = KTask()
    model = prepare_model(p.model_at(state), task)
    train_ds = TensorDataset(p.x_train, p.y_train)
    query_ds = TensorDataset(p.x_query, p.y_query)
    an = Analyzer(analysis_name=p.family, model=model, task=task, cpu=True,
                  output_dir=str(out_dir), disable_tqdm=True, log_level=logging.WARNING)
    an.fit_all_factors(factors_name="ekfac", dataset=train_ds, per_device_batch_size=200,
                       factor_args=FactorArguments(strategy="ekfac", use_empirical_fisher=True))
    an.compute_pairwise_scores(scores_name="ekfac", factors_name="ekfac", query_dataset=query_ds,
                               train_dataset=train_ds, per_device_query_batch_size=N_QUERY,
                               per_device_train_batch_size=200, score_args=ScoreArguments())
    return out_dir / p.family / "scores_ekfac"


def grad_modules(model: nn.Module) -> list[str]:
    return [n for n, m in model.named_modules() if isinstance(m, (nn.Linear, nn.Conv2d))]


def per_module_grads(p, model, x, y) -> dict[str, torch.Tensor]:
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v for k, v in model.named_buffers()}

    def loss(pr, xi, yi):
        out = torch.func.functional_call(model, (pr, buffers), xi.unsqueeze(0))
        return p.batch_loss(out, yi.unsqueeze(0))

    g = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    return {m: torch.cat([g[f"{m}.weight"].flatten(1), g[f"{m}.bias"]], dim=1)
            for m in grad_modules(model)}


def run_bergson(p, x, y, state: dict, run: Path) -> Path:
    from bergson.score.score_writer import MemmapSequenceScoreWriter
    from bergson.score.scorer import Scorer

    model = p.model_at(state)
    mods = grad_modules(model)
    q = per_module_grads(p, model, p.x_query, p.y_query)
    writer = MemmapSequenceScoreWriter(run / "scores", len(y), len(p.y_query),
                                       dtype=torch.float32, overwrite=True, distributed=False)
    scorer = Scorer(query_grads=q, modules=mods, writer=writer, device=torch.device("cpu"),
                    dtype=torch.float32)
    for s in range(0, len(y), 100):
        idx = list(range(s, min(s + 100, len(y))))
        scorer(idx, per_module_grads(p, model, x[idx], y[idx]))
    writer.flush()
    return run / "scores"


def read_bergson(folder: Path) -> np.ndarray:
    info = json.loads((folder / "info.json").read_text(encoding="utf-8"))
    raw = np.memmap(folder / "scores.bin", dtype=np.dtype(info["dtype"]), mode="r",
                    shape=(info["num_rows"],))
    n_q = sum(1 for k in raw.dtype.names if k.startswith("score_"))
    return np.stack([np.asarray(raw[f"score_{j}"], dtype=np.float64) for j in range(n_q)], 1)


# =========================================================================== criteria
def spearman_cols(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman correlation of a[:, j] and b[:, j] for every column (nan when constant)."""
    from scipy.stats import rankdata

    ra = rankdata(a, axis=0)
    rb = rankdata(b, axis=0)
    ra -= ra.mean(0)
    rb -= rb.mean(0)
    den = np.sqrt((ra ** 2).sum(0) * (rb ** 2).sum(0))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (ra * rb).sum(0) / den, np.nan)


class LDS:
    """Linear datamodeling score against retraining on random 50 % subsets."""

    def __init__(self, p: Problem, n_subsets: int) -> None:
        t0 = time.time()
        rng = np.random.default_rng(10_000 + p.seed)
        n = len(p.y_train)
        self.masks = np.zeros((n_subsets, n), dtype=bool)
        actual = []
        for k in range(n_subsets):
            idx = np.sort(rng.choice(n, size=n // 2, replace=False))
            self.masks[k, idx] = True
            st = p.train(p.x_train[idx], p.y_train[idx], init_seed=p.seed,
                         order_seed=20_000 + 100 * p.seed + k)[-1]
            actual.append(p.outputs(st, p.x_query, p.y_query))
        self.actual = np.stack(actual)  # subsets x queries
        self.seconds = time.time() - t0
        self.seed = p.seed

    def __call__(self, s_train_first: np.ndarray) -> dict:
        s = np.asarray(s_train_first, dtype=np.float64)
        pred = self.masks.astype(np.float64) @ s  # subsets x queries
        per_q = spearman_cols(pred, self.actual)
        ok = np.isfinite(per_q)
        vals = per_q[ok]
        rng = np.random.default_rng(30_000 + self.seed)
        boot = vals[rng.integers(0, len(vals), size=(LDS_BOOT, len(vals)))].mean(1)
        lo, hi = np.percentile(boot, [2.5, 97.5])
        return {"mean": float(vals.mean()), "ci95": [float(lo), float(hi)],
                "n_queries": int(ok.sum()), "n_subsets": int(self.masks.shape[0]),
                "pass": bool(vals.mean() > 0 and lo > 0)}


def topk_sets(s: np.ndarray, k: int) -> np.ndarray:
    return np.argsort(-s, axis=0, kind="stable")[:k]


def planted_check(s: np.ndarray, rows: np.ndarray) -> dict:
    """Share of queries whose top-1 is a planted row; mean planted share of the top-10."""
    rows = set(int(r) for r in rows)
    top1 = np.argmax(s, axis=0)
    top10 = topk_sets(s, 10)
    return {"planted_top1_share": float(np.mean([int(t) in rows for t in top1])),
            "planted_top10_share": float(np.mean([[int(i) in rows for i in c]
                                                  for c in top10.T]))}


def component_check(s: np.ndarray, component: np.ndarray, k: int = 10) -> dict:
    """Mean overlap of each query's top-k with the top-k of the query-independent component."""
    ref = set(int(i) for i in np.argsort(-component, kind="stable")[:k])
    tops = topk_sets(s, k)
    ov = [len(ref & set(int(i) for i in c)) / k for c in tops.T]
    return {f"top{k}_overlap_with_component_mean": float(np.mean(ov)),
            f"top{k}_overlap_with_component_min": float(np.min(ov))}


# =========================================================================== main
def sha256(path: Path) -> str:
    h = hashlib.sha256()
    files = [path] if path.is_file() else sorted(f for f in path.rglob("*") if f.is_file())
    for f in files:
        h.update(f.read_bytes())
    return h.hexdigest()


def ensure_tokens(out: Path, tokens: Path | None, project_py: Path) -> Path | None:
    """The music token export (``music_tokens.py`` in the project's Python), cached."""
    path = tokens or out / "inputs" / "music_tokens.npz"
    if path.is_file():
        return path
    if tokens is not None:
        raise SystemExit(f"--tokens {tokens} does not exist")
    if not project_py.is_file():
        say("no project Python at %s: synthetic token sequences", project_py)
        return None
    cmd = [str(project_py), str(HERE / "music_tokens.py"), "--out", str(path)]
    say("exporting music tokens: %s", " ".join(cmd))
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0 or not path.is_file():
        say("music token export failed (%s): synthetic token sequences",
                    r.stderr.strip().splitlines()[-1:] or r.returncode)
        return None
    say(r.stdout.strip())
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--seeds", default=None, help="comma-separated; default: each family's")
    ap.add_argument("--tokens", type=Path, default=None, help="music_tokens.npz to use")
    ap.add_argument("--project-python", type=Path, default=DEFAULT_PROJECT_PY)
    ap.add_argument("--keep-work", action="store_true")
    args = ap.parse_args(argv)
    for name in ("kronfluence", "trak", "dattri", "bergson", "captum"):
        logging.getLogger(name).setLevel(logging.ERROR)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    warnings.filterwarnings("ignore")
    t_start = time.time()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    families = [f for f in args.families.split(",") if f]
    versions = {n: importlib.metadata.version(n) for n in
                ("torch", "numpy", "scikit-learn", "traker", "kronfluence", "dattri", "captum",
                 "bergson")}
    tokens = ensure_tokens(out, args.tokens, args.project_python) \
        if "music_lm" in families else None
    work = Path(tempfile.mkdtemp(prefix="verdict_corpus_"))
    entries: list[dict] = []
    runtimes: dict[str, float] = {}
    models: dict[str, dict] = {}

    for family in families:
        seeds = FAMILIES[family]["seeds"] if args.seeds is None else \
            tuple(int(s) for s in args.seeds.split(","))
        fam_dir = out / family
        for seed in seeds:
            t_cfg = time.time()
            sdir = fam_dir / f"s{seed}"
            if sdir.exists():
                shutil.rmtree(sdir)
            sdir.mkdir(parents=True)
            p = Problem(family, seed, tokens)
            say("== %s seed %d: train %s, queries %s", family, seed,
                     tuple(p.x_train.shape), tuple(p.x_query.shape))
            split = "calibration" if seed % 2 == 0 else "heldout"
            base = {"model": p.model_name, "dataset": p.dataset, "seed": seed,
                    "family": family, "split": split}
            timings: dict[str, float] = {}

            def add(path: Path, *, library, writer_call, method, s_train_first, reader,
                    label, failure, criterion, configuration, extra=None):
                s = np.asarray(s_train_first)
                e = dict(base)  # noqa: B023 (called within this iteration)
                e.update({"file": path.relative_to(out).as_posix(), "library": library,
                          "version": versions.get(library.split("+")[0]),
                          "writer_call": writer_call, "method": method,
                          "configuration": configuration,
                          "shape": [int(s.shape[0]), int(s.shape[1])], "reader": reader,
                          "stored": STORED.get(library.split("+")[0], "train x query"),
                          "label": label, "failure": failure, "criterion": criterion,
                          "finite": bool(np.isfinite(s).all()), "sha256": sha256(path)})
                e.update(extra or {})
                entries.append(e)
                say("   %-62s %-8s %s", e["file"], label, failure or "")

            # ---------------------------------------------------------------- training
            t0 = time.time()
            ens = [p.train(p.x_train, p.y_train, init_seed=seed + 1000 * m,
                           order_seed=seed + 1000 * m + 1) for m in range(N_CKPT_MODELS)]
            ckpts = ens[0]  # the main model: init seed = seed (its checkpoints for TracIn)
            if p.kind == "clf":
                x_pl, y_pl, planted_rows = plant(p)
                pl_ckpts = p.train(x_pl, y_pl, init_seed=seed, order_seed=seed + 1)
            rand_state = p.make_model(seed + 999).state_dict()
            timings["train"] = time.time() - t0
            models[f"{family}/s{seed}"] = {
                "train_accuracy": p.accuracy(ckpts[-1], p.x_train, p.y_train),
                "query_accuracy": p.accuracy(ckpts[-1], p.x_query, p.y_query),
                "ensemble_query_accuracy": [p.accuracy(e[-1], p.x_query, p.y_query)
                                            for e in ens],
}
            if p.kind == "clf":
                models[f"{family}/s{seed}"].update(
                    planted_query_accuracy=p.accuracy(pl_ckpts[-1], p.x_query, p.y_query),
                    planted_rows=planted_rows.tolist())
            t0 = time.time()
            lds = LDS(p, FAMILIES[family]["lds_subsets"])
            timings["lds_retraining"] = lds.seconds
            lds_crit = (f"LDS vs retraining on {lds.masks.shape[0]} random 50% subsets "
                        "(Spearman, mean over queries, bootstrap 95% CI over queries); "
                        "healthy iff mean > 0 and CI low > 0")

            def add_method(path, s, *, library, writer_call, method, reader, configuration,
                           extra=None):
                r = lds(s)  # noqa: B023 (called within this iteration)
                add(path, library=library, writer_call=writer_call, method=method,
                    s_train_first=s, reader=reader, label="healthy" if r["pass"] else "failed",
                    failure=None if r["pass"] else "lds",
                    criterion=lds_crit,  # noqa: B023 (called within this iteration)
                    configuration=configuration, extra={"lds": r, **(extra or {})})

            # ---------------------------------------------------------------- traker
            t0 = time.time()
            mm = run_traker(p, [e[-1] for e in ens], work / f"trak_{family}_{seed}")
            dest = sdir / "traker_trak_ens3" / "scores" / "queries.mmap"
            dest.parent.mkdir(parents=True)
            shutil.copyfile(mm, dest)
            trak = np.array(np.load(dest, mmap_mode="r"), dtype=np.float64)
            add_method(dest, trak, library="traker", method="TRAK (ensemble of 3)",
                       writer_call=f"TRAKer(proj_dim={TRAK_PROJ_DIM}, use_half_precision=False)"
                                   ".finalize_scores('queries')",
                       reader={}, configuration="trak_ens3")
            timings["traker"] = time.time() - t0

            # ---------------------------------------------------------------- kronfluence
            t0 = time.time()
            from safetensors.numpy import load_file

            folder = run_kronfluence(p, ckpts[-1], work / f"kron_{family}_{seed}")
            kdest = sdir / "kronfluence_ekfac" / family / "scores_ekfac"
            kdest.mkdir(parents=True)
            for f in sorted(folder.iterdir()):
                shutil.copyfile(f, kdest / f.name)
            kfile = kdest / "pairwise_scores.safetensors"
            ekfac = load_file(str(kfile))["all_modules"].astype(np.float64).T
            add_method(kfile, ekfac, library="kronfluence", method="EK-FAC influence",
                       writer_call="Analyzer.compute_pairwise_scores (EK-FAC, empirical Fisher)",
                       reader={},
                       configuration="ekfac")
            timings["kronfluence"] = time.time() - t0

            # ---------------------------------------------------------------- dattri
            t0 = time.time()
            tracin = run_dattri_tracin(p, p.x_train, p.y_train, ckpts,
                                       weights=[p.lr] * len(ckpts))
            f = sdir / "dattri_tracin.pt"
            torch.save(tracin.contiguous(), f)
            add_method(f, tracin.numpy(), library="dattri", method="TracIn (3 checkpoints)",
                       writer_call="torch.save(TracInAttributor(...).attribute(train, query))",
                       reader={}, configuration="tracin_dattri")
            s_if, call = run_dattri_if(p, ckpts)
            f = sdir / "dattri_if.pt"
            torch.save(s_if.contiguous(), f)
            add_method(f, s_if.numpy(), library="dattri", method="influence function",
                       writer_call=f"torch.save({call}.attribute(train, query))", reader={},
                       configuration="if_dattri")
            timings["dattri"] = time.time() - t0

            # ---------------------------------------------------------------- captum
            if p.kind == "clf":
                t0 = time.time()
                cp = run_captum(p, ckpts, work)
                f = sdir / "captum_tracincpfast.pt"
                torch.save(cp.contiguous(), f)
                add_method(f, cp.numpy().T, library="captum",
                           method="TracInCPFast (last layer, 3 checkpoints)",
                           writer_call="torch.save(TracInCPFast(final_fc_layer=<last Linear>)"
                                       ".influence((x_query, y_query)))",
                           reader={"transpose": True}, configuration="tracincpfast_captum")
                timings["captum"] = time.time() - t0

            # ---------------------------------------------------------------- bergson
            t0 = time.time()
            folder = run_bergson(p, p.x_train, p.y_train, ckpts[-1], sdir / "bergson_graddot")
            add_method(folder, read_bergson(folder), library="bergson",
                       method="GradDot (per-module gradients)",
                       writer_call="Scorer + MemmapSequenceScoreWriter(float32)", reader={},
                       configuration="graddot_bergson")
            timings["bergson"] = time.time() - t0

            # ---------------------------------------------------------------- randomized
            t0 = time.time()
            rnd_crit = ("construction: scores of a freshly initialised, untrained model "
                        "(model-randomisation test; not a collapse)")
            mm = run_traker(p, [rand_state], work / f"trak_rand_{family}_{seed}")
            dest = sdir / "randomized_traker_trak" / "scores" / "queries.mmap"
            dest.parent.mkdir(parents=True)
            shutil.copyfile(mm, dest)
            s = np.array(np.load(dest, mmap_mode="r"), dtype=np.float64)
            add(dest, library="traker", method="TRAK (random-weights model)",
                writer_call=f"TRAKer(proj_dim={TRAK_PROJ_DIM}).finalize_scores('queries')",
                s_train_first=s, reader={}, label="failed", failure="randomized",
                criterion=rnd_crit, configuration="randomized_trak",
                extra={"lds_info": lds(s)})
            folder = run_kronfluence(p, rand_state, work / f"kron_rand_{family}_{seed}")
            kdest = sdir / "randomized_kronfluence_ekfac" / family / "scores_ekfac"
            kdest.mkdir(parents=True)
            for ff in sorted(folder.iterdir()):
                shutil.copyfile(ff, kdest / ff.name)
            kfile = kdest / "pairwise_scores.safetensors"
            s = load_file(str(kfile))["all_modules"].astype(np.float64).T
            add(kfile, library="kronfluence", method="EK-FAC (random-weights model)",
                writer_call="Analyzer.compute_pairwise_scores (EK-FAC, empirical Fisher)",
                s_train_first=s, reader={},
                label="failed", failure="randomized", criterion=rnd_crit,
                configuration="randomized_ekfac", extra={"lds_info": lds(s)})
            timings["randomized"] = time.time() - t0

            # ---------------------------------------------------------------- planted
            if p.kind == "clf":
                t0 = time.time()
                plant_crit = (f"construction: GradDot on a model trained with {PLANT_RAYS} "
                              f"far-out rays (training image x {PLANT_SCALE}) of 2 rows each "
                              "with conflicting labels (1 % of the rows; huge persistent loss "
                              "gradients); collapse iff the planted rows hold the top-1 of >= "
                              f"{PLANT_MIN_TOP1:.0%} of the queries (check below)")
                s_t = run_dattri_tracin(p, x_pl, y_pl, pl_ckpts[-1:], weights=[1.0])
                f = sdir / "planted_dattri_graddot.pt"
                torch.save(s_t.contiguous(), f)
                s = s_t.numpy()
                chk = planted_check(s, planted_rows)
                ok = chk["planted_top1_share"] >= PLANT_MIN_TOP1
                add(f, library="dattri", method="GradDot (planted high-gradient rows)",
                    writer_call="torch.save(TracInAttributor(1 checkpoint, weight 1, no "
                                "projection).attribute(train, query))",
                    s_train_first=s, reader={}, label="failed" if ok else "unlabelled",
                    failure="collapse" if ok else None, criterion=plant_crit,
                    configuration="planted_graddot",
                    extra={"construction_check": chk, "planted_rows": planted_rows.tolist()})
                timings["planted"] = time.time() - t0

            # ---------------------------------------------------------------- constructed
            t0 = time.time()
            rng = np.random.default_rng(50_000 + seed)
            # query-independent: self-influence broadcast + 5 % noise
            v = run_dattri_self(p, ckpts).numpy().astype(np.float64)
            s = v[:, None] + QINDEP_NOISE * v.std() * rng.standard_normal((len(v), N_QUERY))
            f = sdir / "constructed_qindep.npy"
            np.save(f, s.astype(np.float32))
            add(f, library="dattri+numpy", method="self-influence broadcast (query-independent)",
                writer_call="np.save(TracInAttributor.self_attribute(train)[:, None] + noise)",
                s_train_first=s, reader={}, label="failed", failure="collapse",
                criterion=f"construction: every column = the per-item GradDot self-influence + "
                          f"{QINDEP_NOISE:.0%} of its SD in iid noise (query-independent "
                          "ranking); check: top-10 overlap with the self-influence top-10",
                configuration="constructed_qindep",
                extra={"construction_check": component_check(s, v), "lds_info": lds(s)})
            # sign-flipping dominant axis on dattri's TracIn
            n_flip = 2 if p.n_classes == 10 else 1
            flipped = np.sort(rng.choice(p.n_classes, size=n_flip, replace=False))
            rows = np.sort(rng.choice(len(p.y_train), size=len(SIGNFLIP_ROWS), replace=False))
            sigma = np.where(np.isin(p.q_class, flipped), -1.0, 1.0)
            base_s = tracin.numpy().astype(np.float64)
            s = base_s.copy()
            amp = np.abs(base_s).max()
            for r, a in zip(rows, SIGNFLIP_ROWS, strict=True):
                s[r] = a * amp * sigma
            f = sdir / "constructed_signflip.pt"
            torch.save(torch.from_numpy(s.astype(np.float32)), f)
            add(f, library="dattri+torch", method="TracIn + sign-flipping dominant rows",
                writer_call="torch.save(TracIn matrix with 5 rows := +/-a*max|S|*sigma(class))",
                s_train_first=s, reader={}, label="failed", failure="collapse",
                criterion="construction: 5 training rows with loadings +/-(2.2..3.0) x max|S| "
                          "whose sign follows the query's class (negative for the flipped "
                          "classes); check: planted rows' share of the queries' top-1",
                configuration="constructed_signflip",
                extra={"construction_check": planted_check(s, rows), "planted_rows":
                       rows.tolist(), "flipped_classes": flipped.tolist(),
                       "flipped_query_share": float(np.mean(sigma < 0)), "lds_info": lds(s)})
            # rank-1 with constant query loading on kronfluence's EK-FAC
            u = rng.standard_normal(len(p.y_train))
            h = ekfac - 0.0
            alpha = math.sqrt(RANK1_ENERGY / (1 - RANK1_ENERGY) * np.sum(h * h)
                              / (N_QUERY * np.sum(u * u)))
            s = h + alpha * u[:, None] * np.ones((1, N_QUERY))
            f = sdir / "constructed_rank1.npy"
            np.save(f, s.astype(np.float32))
            add(f, library="kronfluence+numpy", method="EK-FAC + rank-1 constant query loading",
                writer_call="np.save(EK-FAC.T + a u 1^T)", s_train_first=s, reader={},
                label="failed", failure="collapse",
                criterion=f"construction: a rank-1 term a u 1^T (u ~ N(0,1), constant query "
                          f"loading) carrying {RANK1_ENERGY:.0%} of the energy; check: top-10 "
                          "overlap with u's top-10",
                configuration="constructed_rank1",
                extra={"construction_check": component_check(s, u), "lds_info": lds(s)})
            timings["constructed"] = time.time() - t0
            runtimes[f"{family}/s{seed}"] = round(time.time() - t_cfg, 1)
            say("   %s seed %d done in %.0f s: %s", family, seed, time.time() - t_cfg,
                     {k: round(v, 1) for k, v in timings.items()})
            models[f"{family}/s{seed}"]["timings_s"] = {k: round(v, 1)
                                                        for k, v in timings.items()}

    part = out / "manifest.d" / "generate.json"
    part.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(part.read_text(encoding="utf-8")) if part.is_file() else {"files": []}
    done = {f"{e['family']}/s{e['seed']}" for e in entries}
    kept = [e for e in old["files"] if f"{e['family']}/s{e['seed']}" not in done]
    old_rt = old.get("runtimes_s", {})
    old_models = old.get("models", {})
    old_rt.update(runtimes)
    old_models.update(models)
    doc = {"generator": "scripts/verdict_corpus/generate.py", "versions": versions,
           "python": sys.version.split()[0], "tokens": None if tokens is None else str(tokens),
           "runtimes_s": old_rt, "models": old_models,
           "last_run_total_s": round(time.time() - t_start, 1),
           "files": sorted(kept + entries, key=lambda e: e["file"])}
    part.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    merge_manifest(out)
    if not args.keep_work:
        shutil.rmtree(work, ignore_errors=True)
    say("wrote %d files in %.0f s to %s", len(entries), time.time() - t_start, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
