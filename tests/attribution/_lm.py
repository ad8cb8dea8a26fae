"""A tiny causal token model obeying the attribution interface, and its checkpoints.

Helpers of the attribution tests (imported as ``_lm``; the fixture is in ``conftest.py``: a
module named ``conftest`` is ambiguous when several test folders have one).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("dattri")

from torch import nn  # noqa: E402

VOCAB = 11
LENGTH = 6


class TinyLM(nn.Module):
    """Embedding → one causal single-head attention (nn.Linear q/k/v) → MLP → head."""

    def __init__(self, vocab: int = VOCAB, d: int = 8, max_len: int = LENGTH) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(max_len, d))
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.ff = nn.Linear(d, d)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        length = tokens.shape[1]
        x = self.embed(tokens) + self.pos[:length]
        att = self.q(x) @ self.k(x).transpose(-1, -2) / math.sqrt(x.shape[-1])
        mask = torch.ones(length, length, dtype=torch.bool).triu(1)
        x = x + torch.softmax(att.masked_fill(mask, float("-inf")), dim=-1) @ self.v(x)
        x = x + torch.tanh(self.ff(x))
        return self.head(x)


def make_model(seed: int) -> TinyLM:
    torch.manual_seed(seed)
    model = TinyLM()
    with torch.no_grad():
        model.pos.normal_(0, 0.3)
    return model.eval()


def train_model(
    windows: np.ndarray, *, seed: int, steps: int = 30, lr: float = 0.05
) -> tuple[TinyLM, list, list]:
    """Train a TinyLM on windows with plain SGD; return it, 3 checkpoints and their LRs."""
    from aria_tda_experiments.model import sequence_loss

    model = make_model(seed)
    model.train()
    data = torch.as_tensor(windows)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    ckpts, lrs = [], []
    for step in range(steps):
        idx = torch.randint(0, data.shape[0], (8,), generator=gen)
        loss = sequence_loss(model, data[idx], reduction="mean")
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (step + 1) % (steps // 3) == 0:
            ckpts.append({k: v.detach().clone() for k, v in model.state_dict().items()})
            lrs.append(lr)
    model.eval()
    return model, ckpts, lrs


def make_tiny():
    """What the ``tiny`` fixture holds (tests/bench/conftest.py shares it for the sweep)."""
    rng = np.random.default_rng(7)
    train = rng.integers(0, VOCAB, size=(12, LENGTH)).astype(np.int64)
    queries = rng.integers(0, VOCAB, size=(5, LENGTH)).astype(np.int64)
    model, trajectory, lrs = train_model(train, seed=1)
    other, _, _ = train_model(train, seed=2)
    ensemble = [trajectory[-1], {k: v.clone() for k, v in other.state_dict().items()}]
    return {
        "train": train,
        "queries": queries,
        "model": model,
        "trajectory": trajectory,
        "lrs": lrs,
        "final": trajectory[-1],
        "ensemble": ensemble,
    }


def per_sample_grads(model, state, windows, kind, *, margin=False):
    """Per-sample gradients by plain autograd, one window at a time (float64 model copy)."""
    import copy

    from aria_tda_experiments.model import loss_fn

    net = copy.deepcopy(model).double()
    net.load_state_dict({k: v.double() for k, v in state.items()})
    net.eval()
    fn = loss_fn(kind)
    rows = []
    for w in np.asarray(windows):
        net.zero_grad()
        value = fn(net, torch.as_tensor(w)[None])[0]
        if margin:
            value = -value - torch.log(-torch.expm1(-value))
        value.backward()
        rows.append(torch.cat([p.grad.reshape(-1) for p in net.parameters()]))
    return torch.stack(rows)


def dattri_gaussian(d, k, seed, ensemble_id):
    """dattri's CPU Gaussian projection matrix, rebuilt from its documented seeding."""
    block = min(k, 100)
    out = torch.empty(d, k)
    for i in range(math.ceil(k / block)):
        gen = torch.Generator().manual_seed(seed + 1000 * i + 100000 * ensemble_id)
        mat = torch.empty(d, block).normal_(generator=gen)
        stop = min((i + 1) * block, k)
        out[:, i * block : stop] = mat[:, : stop - i * block]
    return out.double()


def project(grads, k, seed, ensemble_id):
    return grads @ dattri_gaussian(grads.shape[1], k, seed, ensemble_id) / math.sqrt(k)
