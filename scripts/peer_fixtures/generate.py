"""Write the peer attribution libraries' own score files, as test fixtures for ARIA.

Like mir_eval's ``generate_data.py``: deterministic, re-runnable, documented. It runs in the
separate fixture environment built by ``setup_env.sh`` (``/work/peer-venv`` by default), never
in the project's environment: none of these libraries is a dependency of ``aria-tda``.

What it does
------------
1. Makes a synthetic 4-class problem (16 features, Gaussian class means; class 0's mean is the
   centroid of the others, so it is every class's main confuser), 600 training examples and 60
   held-out queries (15 per class), seed 0.
2. Trains a tiny MLP (16 -> 32 -> 4, ELU) twice with Adam (lr 0.003, batches of 32, 30 epochs),
   keeping three checkpoints (epochs 10, 20, 30) for the TracIn methods:

   - ``healthy``: the data as made;
   - ``planted``: a planted collapse -- 6 training rows (1 %) become outliers on one far-out
     ray (a class-2 input x 50, x 0.98, ...) with flipped labels (the farthest 1, the others
     0): no model fits both labels there, so their loss gradients stay huge. For GradDot and
     TracIn one outlier is then the top-1 of about 43 % of the queries (every class but 0) and
     the sign of its influence flips with the query's class, so κ stays low (≈ 0.4). The
     inverse-Hessian methods (dattri IF with damping 0.1, Kronfluence EK-FAC) down-weight the
     outliers' high-curvature direction and are not collapsed by this plant.

3. Runs every library on both models and writes its NATIVE files, exactly as it saves them:

   ==============  ==========================================================================
   traker 0.3.2    ``TRAKer(save_dir=D)`` ... ``finalize_scores(exp)`` -> ``D/scores/exp.mmap``
                   (float16 by default, and once with ``use_half_precision=False``)
   kronfluence     EK-FAC ``<analysis>/scores_<name>/pairwise_scores.safetensors`` (queries x
   1.0.1           training); a partitioned run (2 data x 2 module partitions) keeping only its
                   partition files; a ``compute_per_module_scores=True`` run
   dattri 0.3.0    IF (explicit Hessian), GradDot, TracIn (3 checkpoints), TRAK: the tensors
                   ``attribute`` returns (training x queries), saved with ``torch.save``
   captum 0.8.0    ``TracInCP`` and ``TracInCPFast`` ``influence`` (queries x training),
                   ``torch.save``
   bergson 2.5.1   its ``Scorer`` + ``MemmapSequenceScoreWriter`` (the writer ``bergson score``
                   uses) -> ``RUN/scores/scores.bin`` + ``info.json`` (training x queries);
                   float32, and float16; one float16 run interrupted after half the queries
   quanda 0.5.0    ``TopKCardinalityMetric`` at k = 1, 5, 10 on every matrix above (queries x
                   training), recorded in ``manifest.json``
   ==============  ==========================================================================

   bergson's ``bergson build`` / ``bergson score`` commands need a Hugging Face causal language
   model and dataset; here its Python scoring API is fed the MLP's per-module gradients instead
   (``GradDot`` with raw gradients, ``score="individual"``, ``aggregation="none"``), which writes
   the same ``scores.bin`` + ``info.json`` through the same writer.

4. Writes ``manifest.json``: for every file the library, its version, the method, healthy or
   planted, the path, the stored orientation and dtype, the shape, and -- computed in float64
   NumPy from the file's own values -- κ (mean |Pearson| over pairs of non-constant query
   columns), r1, r2_5 (r_i = σ_i² / ‖S‖_F²), p (mean over columns of M μ_j² / ‖S_j‖²),
   v1_constancy, whether the top-k sets have ties, and quanda's top-k cardinality.

Scores keep their native scale (nothing is rescaled); only the problem is small so the
committed files stay small (about 4 MB in all).

Usage::

    bash scripts/peer_fixtures/setup_env.sh            # once: builds /work/peer-venv
    /work/peer-venv/bin/python scripts/peer_fixtures/generate.py [--out tests/data/peer]

Then ``.venv/bin/python scripts/peer_fixtures/compare.py`` (project environment) rewrites
``COMPARISON.md``.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import importlib.metadata
import json
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("TORCHDYNAMO_DISABLE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "tests" / "data" / "peer"

SEED = 0
N_TRAIN, N_QUERY, N_FEATURES, N_CLASSES, HIDDEN = 600, 60, 16, 4, 32
N_OUTLIERS, OUTLIER_SCALE = 6, 50.0
EPOCHS, CKPT_EPOCHS, LR, BATCH = 30, (10, 20, 30), 0.003, 32
KS = (1, 5, 10)
STATES = ("healthy", "planted")


# --------------------------------------------------------------------------- data and model
def make_data(seed: int = SEED) -> dict[str, torch.Tensor]:
    """The synthetic classification problem: training set, queries, class means."""
    rng = np.random.default_rng(seed)
    means = rng.normal(0.0, 0.6, size=(N_CLASSES, N_FEATURES))
    means[0] = means[1:].mean(axis=0)  # class 0 in the middle: every class's main confuser
    y_train = np.arange(N_TRAIN) % N_CLASSES
    rng.shuffle(y_train)
    x_train = means[y_train] + rng.normal(0.0, 1.0, size=(N_TRAIN, N_FEATURES))
    y_query = np.repeat(np.arange(N_CLASSES), N_QUERY // N_CLASSES)
    x_query = means[y_query] + rng.normal(0.0, 1.0, size=(N_QUERY, N_FEATURES))
    return {
        "x_train": torch.tensor(x_train, dtype=torch.float32),
        "y_train": torch.tensor(y_train, dtype=torch.long),
        "x_query": torch.tensor(x_query, dtype=torch.float32),
        "y_query": torch.tensor(y_query, dtype=torch.long),
    }


def plant(data: dict[str, torch.Tensor], seed: int = SEED) -> tuple[dict[str, torch.Tensor],
                                                                     list[int]]:
    """The planted-collapse training set: 1 % outliers, far out and with flipped labels.

    ``N_OUTLIERS`` training rows are replaced by points on one far-out ray: the input of a
    class-2 training example times ``OUTLIER_SCALE`` times ``1, 0.98, 0.96, ...`` (no two rows
    equal), all with flipped labels: the first (farthest) labelled 1, the others 0. No model
    fits both labels there, so these rows keep huge loss gradients to the end of training: the
    class-1 row's points from class 1 towards class 0 (the middle class, every query's main
    confuser), so its influence is large and positive for every query outside class 0, and
    negative for class 0 (the sign flips with the class); the class-0 rows lead class 0's
    queries.
    """
    rng = np.random.default_rng(seed + 1)
    idx = sorted(int(i) for i in rng.choice(N_TRAIN, size=N_OUTLIERS, replace=False))
    out = {k: v.clone() for k, v in data.items()}
    source = int(np.flatnonzero(data["y_train"].numpy() == 2)[0])
    x = out["x_train"][source] * OUTLIER_SCALE
    for n, i in enumerate(idx):
        out["x_train"][i] = x * (1.0 - 0.02 * n)
        out["y_train"][i] = 1 if n == 0 else 0
    return out, idx


class MLP(nn.Module):
    """16 -> 32 -> 4 with ELU: two ``nn.Linear`` layers (every library hooks those)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(N_FEATURES, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, N_CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.elu(self.fc1(x)))


def train(data: dict[str, torch.Tensor], seed: int = SEED) -> list[dict[str, torch.Tensor]]:
    """Train the MLP with SGD; the state dicts at ``CKPT_EPOCHS``."""
    torch.manual_seed(seed)
    model = MLP()
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    gen = torch.Generator().manual_seed(seed)
    ckpts = []
    for epoch in range(1, EPOCHS + 1):
        perm = torch.randperm(N_TRAIN, generator=gen)
        for s in range(0, N_TRAIN, BATCH):
            b = perm[s:s + BATCH]
            opt.zero_grad()
            F.cross_entropy(model(data["x_train"][b]), data["y_train"][b]).backward()
            opt.step()
        if epoch in CKPT_EPOCHS:
            ckpts.append(copy.deepcopy(model.state_dict()))
    return ckpts


def model_at(state: dict[str, torch.Tensor]) -> MLP:
    torch.manual_seed(SEED)
    m = MLP()
    m.load_state_dict(state)
    m.eval()
    return m


def accuracy(state: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float((model_at(state)(x).argmax(1) == y).float().mean())


def loaders(data: dict[str, torch.Tensor], batch: int = 100) -> tuple[DataLoader, DataLoader]:
    train_ds = TensorDataset(data["x_train"], data["y_train"])
    query_ds = TensorDataset(data["x_query"], data["y_query"])
    return (DataLoader(train_ds, batch_size=batch, shuffle=False),
            DataLoader(query_ds, batch_size=batch, shuffle=False))


# --------------------------------------------------------------------------- the libraries
def run_dattri(data, ckpts, work: Path) -> dict[str, np.ndarray]:
    """dattri 0.3.0: IF (explicit), GradDot, TracIn, TRAK -- training x queries tensors."""
    from dattri.algorithm.influence_function import IFAttributorExplicit
    from dattri.algorithm.tracin import TracInAttributor
    from dattri.algorithm.trak import TRAKAttributor
    from dattri.task import AttributionTask

    model = model_at(ckpts[-1])

    def loss_func(params, batch):
        x, y = batch
        if x.dim() == 1:  # TracIn/TRAK call it on one example (vmapped)
            x, y = x.unsqueeze(0), y.unsqueeze(0)
        return F.cross_entropy(torch.func.functional_call(model, params, x), y)

    def prob_func(params, batch):
        x, y = batch
        logits = torch.func.functional_call(model, params, x.unsqueeze(0))
        return torch.exp(-F.cross_entropy(logits, y.unsqueeze(0)))

    train_loader, query_loader = loaders(data)
    full_loader = DataLoader(TensorDataset(data["x_train"], data["y_train"]),
                             batch_size=N_TRAIN, shuffle=False)
    out = {}
    final = AttributionTask(loss_func=loss_func, model=model, checkpoints=ckpts[-1])
    gd = TracInAttributor(final, weight_list=torch.ones(1), normalized_grad=False)
    gd.projector_kwargs = None  # no random projection: the exact gradient dot product
    out["GradDot"] = gd.attribute(train_loader, query_loader)
    every = AttributionTask(loss_func=loss_func, model=model, checkpoints=list(ckpts))
    tr = TracInAttributor(every, weight_list=torch.full((len(ckpts),), LR),
                          normalized_grad=False)
    tr.projector_kwargs = None
    out["TracIn"] = tr.attribute(train_loader, query_loader)
    inf = IFAttributorExplicit(final, regularization=0.1)
    inf.cache(full_loader)  # one batch: the Hessian of the whole training loss
    out["IF"] = inf.attribute(train_loader, query_loader)
    trak = TRAKAttributor(final, correct_probability_func=prob_func, projector_kwargs=None,
                          regularization=0.0)
    # a fresh dict on the instance (dattri's default dict is shared and mutated by update())
    trak.projector_kwargs = {"proj_dim": 128, "proj_max_batch_size": 32, "proj_seed": 0,
                             "device": "cpu"}
    with torch.no_grad():
        trak.cache(train_loader)
        out["TRAK"] = trak.attribute(query_loader)
    return {k: v.detach().cpu() for k, v in out.items()}


def run_captum(data, ckpts, work: Path) -> dict[str, torch.Tensor]:
    """captum: TracInCP and TracInCPFast ``influence`` -- queries x training."""
    from captum.influence import TracInCP, TracInCPFast

    paths = []
    for i, c in enumerate(ckpts):
        p = work / f"captum_ckpt{i}.pt"
        torch.save(c, p)
        paths.append(str(p))

    def load(model, path):
        model.load_state_dict(torch.load(path, weights_only=True))
        return LR

    train_ds = TensorDataset(data["x_train"], data["y_train"])
    query = (data["x_query"], data["y_query"])
    model = model_at(ckpts[-1])
    cp = TracInCP(model, train_ds, checkpoints=paths, checkpoints_load_func=load,
                  loss_fn=nn.CrossEntropyLoss(reduction="sum"), batch_size=100,
                  sample_wise_grads_per_batch=True)
    out = {"TracInCP": cp.influence(query)}
    model = model_at(ckpts[-1])
    fast = TracInCPFast(model, final_fc_layer=model.fc2, train_dataset=train_ds,
                        checkpoints=paths, checkpoints_load_func=load,
                        loss_fn=nn.CrossEntropyLoss(reduction="sum"), batch_size=100)
    out["TracInCPFast"] = fast.influence(query)
    return {k: v.detach().cpu() for k, v in out.items()}


def run_traker(data, ckpts, save_dir: Path, *, half: bool) -> Path:
    """traker 0.3.2: one model, ``finalize_scores`` -> ``save_dir/scores/queries.mmap``."""
    import logging

    from trak import TRAKer

    model = model_at(ckpts[-1])
    train_loader, query_loader = loaders(data)
    traker = TRAKer(model=model, task="image_classification", train_set_size=N_TRAIN,
                    save_dir=str(save_dir), device="cpu", proj_dim=128,
                    use_half_precision=half, logging_level=logging.ERROR, projector_seed=0)
    traker.load_checkpoint(ckpts[-1], model_id=0)
    for x, y in train_loader:
        traker.featurize(batch=(x, y), num_samples=len(x))
    traker.finalize_features()
    traker.start_scoring_checkpoint(exp_name="queries", checkpoint=ckpts[-1], model_id=0,
                                    num_targets=N_QUERY)
    for x, y in query_loader:
        traker.score(batch=(x, y), num_samples=len(x))
    traker.finalize_scores(exp_name="queries")
    return save_dir / "scores" / "queries.mmap"


def run_kronfluence(data, ckpts, out_dir: Path) -> dict[str, Path]:
    """kronfluence 1.0.1 EK-FAC: the whole file, a partitioned run, a per-module run."""
    import logging

    from kronfluence.analyzer import Analyzer, prepare_model
    from kronfluence.arguments import FactorArguments, ScoreArguments
    from kronfluence.task import Task

    class Classification(Task):
        def compute_train_loss(self, batch, model, sample=False):
            x, y = batch
            return F.cross_entropy(model(x), y, reduction="sum")

        def compute_measurement(self, batch, model):
            x, y = batch  # kronfluence's own example: the negative margin
            logits = model(x)
            rows = torch.arange(logits.shape[0])
            correct = logits[rows, y]
            rest = logits.clone()
            rest[rows, y] = -torch.inf
            return -(correct - rest.logsumexp(dim=-1)).sum()

    task = Classification()
    model = prepare_model(model_at(ckpts[-1]), task)
    train_ds = TensorDataset(data["x_train"], data["y_train"])
    query_ds = TensorDataset(data["x_query"], data["y_query"])
    an = Analyzer(analysis_name="mlp", model=model, task=task, cpu=True,
                  output_dir=str(out_dir), disable_tqdm=True,
                  log_level=logging.WARNING)
    an.fit_all_factors(factors_name="ekfac", dataset=train_ds, per_device_batch_size=200,
                       factor_args=FactorArguments(strategy="ekfac",
                                                   use_empirical_fisher=True))
    runs = {"pairwise": ("ekfac", ScoreArguments()),
            "partitioned": ("ekfac_partitioned",
                            ScoreArguments(data_partitions=2, module_partitions=2)),
            "per_module": ("ekfac_per_module", ScoreArguments(compute_per_module_scores=True))}
    folders = {}
    for what, (name, args) in runs.items():
        an.compute_pairwise_scores(scores_name=name, factors_name="ekfac",
                                   query_dataset=query_ds, train_dataset=train_ds,
                                   per_device_query_batch_size=N_QUERY,
                                   per_device_train_batch_size=200, score_args=args)
        folders[what] = out_dir / "mlp" / f"scores_{name}"
    return folders


def per_module_grads(model: MLP, x: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per-example loss gradients of each ``nn.Linear`` (weight and bias, flattened)."""
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        return F.cross_entropy(torch.func.functional_call(model, p, xi[None]), yi[None])

    g = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    return {m: torch.cat([g[f"{m}.weight"].flatten(1), g[f"{m}.bias"]], dim=1)
            for m in ("fc1", "fc2")}


def run_bergson(data, ckpts, run: Path, *, dtype: torch.dtype, stop_after: int | None = None
                ) -> Path:
    """bergson 2.5.1: ``Scorer`` + ``MemmapSequenceScoreWriter`` -> ``run/scores/``.

    ``stop_after``: write only that many query columns (an interrupted run: the rest of the
    cells stay zero with ``written_i`` False).
    """
    from bergson.score.score_writer import MemmapSequenceScoreWriter
    from bergson.score.scorer import Scorer

    model = model_at(ckpts[-1])
    q = per_module_grads(model, data["x_query"], data["y_query"])
    n_cols = N_QUERY if stop_after is None else stop_after
    q = {m: g[:n_cols] for m, g in q.items()}
    writer = MemmapSequenceScoreWriter(run / "scores", N_TRAIN, N_QUERY, dtype=dtype,
                                       overwrite=True, distributed=False)
    scorer = Scorer(query_grads=q, modules=["fc1", "fc2"], writer=writer,
                    device=torch.device("cpu"), dtype=torch.float32)
    for s in range(0, N_TRAIN, 100):
        idx = list(range(s, min(s + 100, N_TRAIN)))
        g = per_module_grads(model, data["x_train"][idx], data["y_train"][idx])
        scorer(idx, g)
    writer.flush()
    return run / "scores"


# --------------------------------------------------------------------------- measures
def definitions(s: np.ndarray) -> dict[str, float | int]:
    """κ, r1, r2_5, p, v1_constancy of a training x queries matrix, in float64 NumPy."""
    s = np.asarray(s, dtype=np.float64)
    m, t = s.shape
    if not np.isfinite(s).all():
        return {"finite": False}
    varying = np.ptp(s, axis=0) > 0
    c = np.corrcoef(s[:, varying], rowvar=False)
    n = int(varying.sum())
    kappa = float((np.abs(c).sum() - np.trace(np.abs(c))) / (n * (n - 1))) if n > 1 else None
    _, sv, vt = np.linalg.svd(s, full_matrices=False)
    energy = sv ** 2 / np.sum(s * s)
    norms = np.sum(s * s, axis=0)
    nz = norms > 0
    p = float(np.mean(m * s.mean(axis=0)[nz] ** 2 / norms[nz]))
    v1 = vt[0]
    return {"finite": True, "kappa": kappa, "r1": float(energy[0]),
            "r2_5": float(energy[1:5].sum()), "p": p,
            "v1_constancy": float(abs(v1.sum()) / np.sqrt(t)),
            "constant_columns": int(t - n)}


def topk_facts(s: np.ndarray) -> dict[str, object]:
    """Ties at the top-k boundary and the most frequent top-1 (training x queries input)."""
    s = np.asarray(s, dtype=np.float64)
    order = -np.sort(-s, axis=0)
    ties = {str(k): bool(np.any(order[k - 1] == order[k])) for k in KS}
    top1 = np.argmax(s, axis=0)
    rows, counts = np.unique(top1, return_counts=True)
    return {"topk_ties": ties, "top1_row": int(rows[np.argmax(counts)]),
            "top1_share": float(counts.max() / s.shape[1])}


def quanda_cardinality(s_query_first: torch.Tensor, model: nn.Module, train_ds) -> dict:
    """quanda's ``TopKCardinalityMetric`` at ``KS`` (explanations: queries x training)."""
    from quanda.metrics.heuristics import TopKCardinalityMetric

    out = {}
    for k in KS:
        metric = TopKCardinalityMetric(model=model, train_dataset=train_ds, top_k=k)
        metric.update(explanations=s_query_first.to(torch.float32))
        out[str(k)] = float(metric.compute()["score"])
    return out


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --------------------------------------------------------------------------- main
FAMILY = {"GradDot": "graddot", "TracIn": "tracin", "IF": "if", "TRAK": "trak",
          "TracInCP": "tracin", "TracInCPFast": "tracin", "EK-FAC": "if"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="fixture folder")
    ap.add_argument("--keep-work", action="store_true", help="keep the scratch folder")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    warnings.filterwarnings("ignore")
    out: Path = args.out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    work = Path(tempfile.mkdtemp(prefix="peer_fixtures_"))
    versions = {name: importlib.metadata.version(name)
                for name in ("torch", "numpy", "traker", "kronfluence", "dattri", "captum",
                             "quanda", "bergson")}
    entries: list[dict] = []
    base = make_data()
    planted_data, outliers = plant(base)
    setups = {"healthy": base, "planted": planted_data}
    model_notes = {}

    def add(path: Path, *, library: str, method: str, state: str, stored: str,
            s_train_first: np.ndarray, dtype: str, extra: dict | None = None,
            quanda: bool = True, model=None, train_ds=None) -> None:
        rel = path.relative_to(out).as_posix()
        e = {"path": rel, "library": library, "version": versions[library], "method": method,
             "family": FAMILY.get(method, method.lower()), "state": state,
             "stored": stored, "aria_transpose": library == "captum", "dtype": dtype,
             "shape": list(s_train_first.shape if stored == "train x query"
                           else s_train_first.T.shape),
             "n_train": int(s_train_first.shape[0]), "n_queries": int(s_train_first.shape[1]),
             "sha256": sha256(path) if path.is_file() else None}
        e.update(definitions(s_train_first))
        if e["finite"]:
            e.update(topk_facts(s_train_first))
            if quanda:
                e["quanda_topk_cardinality"] = quanda_cardinality(
                    torch.from_numpy(np.ascontiguousarray(s_train_first.T)), model, train_ds)
        e.update(extra or {})
        entries.append(e)
        print(f"{rel:70s} kappa={e.get('kappa')} r1={e.get('r1')} p={e.get('p')} "
              f"top1_share={e.get('top1_share')} quanda={e.get('quanda_topk_cardinality')}",
              flush=True)

    for state in STATES:
        data = setups[state]
        ckpts = train(data)
        model_notes[state] = {
            "train_accuracy": accuracy(ckpts[-1], data["x_train"], data["y_train"]),
            "query_accuracy": accuracy(ckpts[-1], data["x_query"], data["y_query"])}
        model = model_at(ckpts[-1])
        train_ds = TensorDataset(data["x_train"], data["y_train"])
        common = {"state": state, "model": model, "train_ds": train_ds}

        # dattri
        for method, t in run_dattri(data, ckpts, work).items():
            p = out / "dattri" / f"{state}_{method}.pt"
            p.parent.mkdir(parents=True, exist_ok=True)
            torch.save(t.contiguous(), p)
            add(p, library="dattri", method=method, stored="train x query",
                s_train_first=t.numpy(), dtype=str(t.dtype).removeprefix("torch."), **common)
        # captum
        for method, t in run_captum(data, ckpts, work).items():
            p = out / "captum" / f"{state}_{method}.pt"
            p.parent.mkdir(parents=True, exist_ok=True)
            torch.save(t.contiguous(), p)
            add(p, library="captum", method=method, stored="query x train",
                s_train_first=t.numpy().T, dtype=str(t.dtype).removeprefix("torch."), **common)
        # traker: float16 (its default) and float32
        for half in (True, False):
            tag = "fp16" if half else "fp32"
            save = work / f"trak_{state}_{tag}"
            mm = run_traker(data, ckpts, save, half=half)
            dest = out / "traker" / f"{state}_{tag}" / "scores" / "queries.mmap"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(mm, dest)
            arr = np.load(dest, mmap_mode="r")
            add(dest, library="traker", method="TRAK", stored="train x query",
                s_train_first=np.array(arr), dtype=str(arr.dtype),
                extra={"use_half_precision": half}, **common)
        # kronfluence
        from safetensors.numpy import load_file
        folders = run_kronfluence(data, ckpts, work / f"kron_{state}")
        whole = folders["pairwise"] / "pairwise_scores.safetensors"
        dest_root = out / "kronfluence" / state / "mlp"
        dest = dest_root / "scores_ekfac"
        dest.mkdir(parents=True, exist_ok=True)
        for f in sorted(folders["pairwise"].iterdir()):
            shutil.copyfile(f, dest / f.name)
        s = load_file(str(dest / whole.name))["all_modules"]
        add(dest / whole.name, library="kronfluence", method="EK-FAC", stored="query x train",
            s_train_first=s.T, dtype=str(s.dtype), extra={"key": "all_modules"}, **common)
        if state == "healthy":
            part = dest_root / "scores_ekfac_partitioned"
            part.mkdir(parents=True, exist_ok=True)
            files = sorted(folders["partitioned"].glob("pairwise_scores_data_partition*"))
            for f in files:
                shutil.copyfile(f, part / f.name)
            for f in folders["partitioned"].glob("*.json"):
                shutil.copyfile(f, part / f.name)
            agg = load_file(str(folders["partitioned"] / "pairwise_scores.safetensors"))
            a = agg["all_modules"]
            add(part, library="kronfluence", method="EK-FAC", stored="query x train",
                s_train_first=a.T, dtype=str(a.dtype),
                extra={"key": "all_modules", "partitions": [f.name for f in files],
                       "partition_grid": [2, 2],
                       "note": "kronfluence's aggregated pairwise_scores.safetensors of this "
                               "run was left out: the folder holds the partitions only; the "
                               "values here are of that aggregated matrix"}, **common)
            pm = dest_root / "scores_ekfac_per_module"
            pm.mkdir(parents=True, exist_ok=True)
            for f in sorted(folders["per_module"].iterdir()):
                shutil.copyfile(f, pm / f.name)
            d = load_file(str(pm / "pairwise_scores.safetensors"))
            total = sum(d[k].astype(np.float64) for k in sorted(d))
            add(pm / "pairwise_scores.safetensors", library="kronfluence", method="EK-FAC",
                stored="query x train", s_train_first=total.T, dtype=str(d[sorted(d)[0]].dtype),
                extra={"key": None, "module_keys": sorted(d),
                       "note": "per-module keys; the values here are of their sum"}, **common)
        # bergson
        runs = [("fp32", torch.float32, None)]
        if state == "healthy":
            runs += [("fp16", torch.float16, None), ("fp16_interrupted", torch.float16,
                                                     N_QUERY // 2)]
        for tag, dt, stop in runs:
            folder = run_bergson(data, ckpts, out / "bergson" / f"{state}_{tag}", dtype=dt,
                                 stop_after=stop)
            info = json.loads((folder / "info.json").read_text(encoding="utf-8"))
            raw = np.memmap(folder / "scores.bin", dtype=np.dtype(info["dtype"]), mode="r",
                            shape=(info["num_rows"],))
            cols = N_QUERY if stop is None else stop
            mat = np.stack([np.asarray(raw[f"score_{j}"], dtype=np.float64)
                            for j in range(cols)], axis=1)
            written = np.stack([np.asarray(raw[f"written_{j}"]) for j in range(N_QUERY)], 1)
            extra = {"written_columns": cols, "all_written": bool(written.all())}
            if stop is not None:
                extra["note"] = (f"interrupted: only the first {cols} of {N_QUERY} query columns "
                                 "were written; the values here are of those columns")
            add(folder, library="bergson", method="GradDot", stored="train x query",
                s_train_first=mat, dtype=str(raw.dtype["score_0"]),
                quanda=stop is None, extra=extra, **common)
            for f in ("scores.bin", "info.json"):
                assert (folder / f).is_file(), folder / f

    manifest = {
        "generator": "scripts/peer_fixtures/generate.py",
        "versions": versions,
        "python": sys.version.split()[0],
        "problem": {"n_train": N_TRAIN, "n_queries": N_QUERY, "n_features": N_FEATURES,
                    "n_classes": N_CLASSES, "hidden": HIDDEN, "epochs": EPOCHS,
                    "checkpoint_epochs": list(CKPT_EPOCHS), "lr": LR, "seed": SEED,
                    "planted_outliers": outliers, "outlier_scale": OUTLIER_SCALE,
                    "models": model_notes},
        "definitions": {
            "kappa": "mean |Pearson| over pairs of non-constant query columns (float64)",
            "r_i": "sigma_i^2 / ||S||_F^2 of the training x queries matrix; r2_5 = r2+..+r5",
            "p": "mean over columns with ||S_j|| > 0 of M mu_j^2 / ||S_j||^2",
            "v1_constancy": "|sum_j v1_j| / sqrt(T)",
            "quanda_topk_cardinality": "quanda TopKCardinalityMetric(top_k=k) on the queries x "
                                       "training explanations: distinct top-k rows / (T k)",
            "topk_ties": "some query's k-th and (k+1)-th largest scores are equal"},
        "files": entries,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    if not args.keep_work:
        shutil.rmtree(work, ignore_errors=True)
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"wrote {len(entries)} fixtures, {total / 1e6:.2f} MB, to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
