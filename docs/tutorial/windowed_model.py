# ruff: noqa: E402  (each section imports what it uses, as the tutorial page shows it)
"""From a music language model to an ARIA report (the tutorial's code, run as it is by CI).

    python docs/tutorial/windowed_model.py [OUT]      # OUT: default a new temporary folder

MIDI files (music21's Bach chorales) -> miditok REMI tokens -> windows and their segment map ->
a tiny Hugging Face GPT-2 trained for a few steps -> attribution scores (GradDot, TracIn, TRAK)
-> symbolic features -> a study -> the report and the verdict. About a minute on 2 CPU cores.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything below is built locally

T0 = time.perf_counter()


def log(msg: str) -> None:
    print(f"[{time.perf_counter() - T0:5.1f} s] {msg}", flush=True)


OUT = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="aria-tutorial-"))
OUT = OUT.resolve()
MARK = OUT / ".aria-tutorial"  # a folder this script made: a rerun goes on in it
if OUT.exists() and any(OUT.iterdir()) and not MARK.exists():
    sys.exit(f"windowed_model.py: {OUT} holds files this tutorial did not write; "
             "give a new or empty folder")
OUT.mkdir(parents=True, exist_ok=True)
MARK.touch()

# --8<-- [start:midi]
import music21

N_PIECES = 10  # 8 for training, 2 held out to prompt the queries
midi_dir = OUT / "midi"
midi_dir.mkdir(exist_ok=True)
chorales = sorted(music21.corpus.getComposer("bach"))[:N_PIECES]
midi_files = []
for path in chorales:
    target = midi_dir / f"{path.stem}.mid"  # e.g. midi/bwv1.6.mid
    if not target.exists():
        music21.corpus.parse(path).write("midi", fp=target)
    midi_files.append(target)
train_files, prompt_files = midi_files[:8], midi_files[8:]
# --8<-- [end:midi]
log(f"{len(midi_files)} MIDI files in {midi_dir}")

# --8<-- [start:tokens]
from aria_tda.integrations.miditok import default_tokenizer, tokenize_corpus, write_corpus

L = 32  # tokens per window
tokenizer = default_tokenizer()  # miditok REMI, one stream per file (use_programs=True)
corpus = tokenize_corpus(train_files, tokenizer, length=L, stride=L, root=midi_dir)
written = write_corpus(corpus, OUT / "corpus")  # windows.npy, segments.csv, tracks.csv
train = corpus.windows  # (n_train, L) int64
print(corpus.segments.head(3).to_string(index=False))
# --8<-- [end:tokens]
log(f"{train.shape[0]} training windows of {L} tokens from {len(corpus.tracks)} pieces; "
    f"vocabulary {len(tokenizer)}")

# --8<-- [start:model]
import torch
import transformers

from aria_tda.integrations.huggingface import as_token_model


def train_gpt2(seed: int, steps: int = 40, lr: float = 3e-3, every: int = 20):
    """A tiny GPT-2 over the REMI tokens; returns it and (state dict, lr) every `every` steps."""
    torch.manual_seed(seed)
    config = transformers.GPT2Config(
        vocab_size=len(tokenizer), n_positions=L, n_layer=2, n_head=2, n_embd=64,
        bos_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.pad_token_id,
    )
    hf = transformers.GPT2LMHeadModel(config)
    opt = torch.optim.Adam(hf.parameters(), lr=lr)
    data = torch.as_tensor(train)
    gen = torch.Generator().manual_seed(seed)
    trajectory = []
    hf.train()
    for step in range(1, steps + 1):
        batch = data[torch.randint(0, len(data), (16,), generator=gen)]
        loss = hf(input_ids=batch, labels=batch).loss  # mean next-token cross-entropy
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % every == 0:
            trajectory.append(({k: v.detach().clone() for k, v in hf.state_dict().items()}, lr))
    return hf.eval(), trajectory


hf_model, trajectory = train_gpt2(seed=0)
second, _ = train_gpt2(seed=1)  # TRAK averages over independently trained models
model = as_token_model(hf_model)  # tokens (B, L) -> logits (B, L, V); eager attention
# --8<-- [end:model]
log(f"GPT-2 with {hf_model.num_parameters()} parameters trained (2 seeds)")

# --8<-- [start:queries]
import numpy as np

prompts = tokenize_corpus(prompt_files, tokenizer, length=L // 2, stride=L).windows[:6]
torch.manual_seed(0)
generated = hf_model.generate(
    input_ids=torch.as_tensor(prompts), attention_mask=torch.ones_like(torch.as_tensor(prompts)),
    max_new_tokens=L - prompts.shape[1], do_sample=True, top_k=20,
    pad_token_id=tokenizer.pad_token_id,
)
queries = generated.numpy().astype(np.int64)  # (6, L): the model's own continuations
np.save(OUT / "queries.npy", queries)
# --8<-- [end:queries]
log(f"{queries.shape[0]} generated queries")

# --8<-- [start:attribution]
from aria_tda.attribution import run_methods

final = hf_model.state_dict()
results = run_methods(
    ["GradDot", "TracIn", "TRAK"], model, train, queries,
    final=final,
    trajectory=[state for state, _ in trajectory],
    learning_rates=[lr for _, lr in trajectory],
    ensemble=[final, second.state_dict()],
    options={"TRAK": {"proj_dim": 256}},
    out_dir=OUT / "scores",               # scores/<method>.npy + manifest with provenance
    row_ids=corpus.segment_ids,           # rows named like segments.csv's segment_id
)
for name, res in results.items():
    print(f"{name:8s} scores {res.scores.shape}")
# --8<-- [end:attribution]
log("attribution done")

# --8<-- [start:features]
from aria_tda.features.extract import extract_to_store

stats = extract_to_store(written["tracks"], OUT / "features", modality="symbolic",
                         progress=False)
print(f"features of {stats['n_extracted']} pieces, {stats['n_errors']} errors")
# --8<-- [end:features]
log("features done")

# --8<-- [start:study]
import aria_tda

settings = "".join(
    f"""
[[setting]]
method = "{name}"
scores = "scores/{name}.npy"
segments = "corpus/segments.csv"
normalize = "zscore"
"""
    for name in results
)
(OUT / "study.toml").write_text(f"""\
name = "Tiny GPT-2 on Bach chorales (REMI)"
modality = "symbolic"
feature_store = "features"
output = "results"
K = [2, 3]          # a pool of 8 pieces: groups of 2 and 3
K_report = 3
B = 50
n_bootstrap = 100
seed = 0
media = false       # no listening room: keeps the run short
# music21 writes one velocity for every note: the dynamic channel would be constant
channels = ["melody", "harmony", "rhythm", "texture"]
{settings}""")
results_dir = aria_tda.run_study(OUT / "study.toml", quiet=True)
# --8<-- [end:study]
log(f"study written to {results_dir}")

# --8<-- [start:verdict]
for name in results:
    d = aria_tda.diagnose(OUT / "scores" / f"{name}.npy")
    print(f"verdict {name}: {d.verdict.label} — {d.verdict.reason}")
print(f"report: {results_dir / 'report.html'}")
# --8<-- [end:verdict]
log("done")
