#!/usr/bin/env bash
# CI of the core install: `pip install aria-tda` with no extras works, or says why.
#
#   scripts/ci_core.sh            # fresh venv in a temp folder, removed at the end
#   KEEP=1 scripts/ci_core.sh     # keep the temp folder (its path is printed)
#   PYTHON=python3.12 scripts/ci_core.sh
#
# 1. Creates a fresh virtual environment in a temp folder and installs this checkout's core
#    (no extras: numpy scipy pandas pyarrow zarr tqdm threadpoolctl numba mido) from a clean
#    copy of pyproject.toml, README.md, LICENSE and src/ (so no stale build/ of the checkout
#    leaks into the wheel, and nothing is written into the checkout). pip reuses its cache.
# 2. Checks that no extra came in with the core (librosa, soundfile, torch, matplotlib, dask,
#    transformers, the experiments package): otherwise the refusals below would test nothing.
# 3. Writes small inputs with the venv's numpy and mido (MIDI files, a score matrix, a segment
#    map, two embedding stores, a study), then runs every command the core supports — each
#    must exit 0 — and every command that needs more — each must exit 2 with exactly one
#    stderr line naming what to install, and must not have created its output.
# Prints a summary; exits 1 on any failure (2 when the setup itself fails).
set -uo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-python3}"
T0=$(date +%s)
WORK="$(mktemp -d "${TMPDIR:-/tmp}/aria-ci-core.XXXXXX")"
if [ "${KEEP:-0}" = 1 ]; then
  trap 'echo "[ci-core] kept $WORK" >&2' EXIT
else
  trap 'rm -rf "$WORK"' EXIT
fi

log() { printf '[ci-core] %s\n' "$*" >&2; }
die() { log "SETUP FAILED: $*"; exit 2; }
elapsed() { echo $(( $(date +%s) - T0 )); }

# --- 1. fresh venv + core install -------------------------------------------------------------
log "venv: $PY ($("$PY" --version 2>&1)) in $WORK/venv"
"$PY" -m venv "$WORK/venv" || die "python -m venv"
VPY="$WORK/venv/bin/python"
mkdir -p "$WORK/aria-tda"
tar -C "$REPO" --exclude=__pycache__ --exclude='*.pyc' --exclude='*.egg-info' \
  -cf - pyproject.toml README.md LICENSE src | tar -C "$WORK/aria-tda" -xf - \
  || die "copying the checkout"
log "pip install $REPO (core, no extras; from a clean copy)"
# this machine's pip config may name local wheel folders that are absent: hide that noise
"$VPY" -m pip install --quiet --no-compile --disable-pip-version-check "$WORK/aria-tda" \
  2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2) || die "pip install"
T_INSTALL=$(elapsed)
log "installed in ${T_INSTALL} s: $("$WORK/venv/bin/aria-tda" --version)"
export PATH="$WORK/venv/bin:$PATH" ARIA_PROGRESS=0 ARIA_DEBUG=0

# --- 2. the core brought no extra ---------------------------------------------------------------
extras=$("$VPY" - <<'EOF'
import importlib.util
names = ["librosa", "soundfile", "torch", "transformers", "matplotlib", "dask", "distributed",
         "madmom", "aria_tda_experiments"]
print(" ".join(n for n in names if importlib.util.find_spec(n) is not None))
EOF
) || die "checking the installed packages"
[ -z "$extras" ] || die "the core install brought optional packages: $extras"

# --- 3. inputs ------------------------------------------------------------------------------------
D="$WORK/data"
mkdir -p "$D"
"$VPY" - "$D" <<'EOF' || die "writing the inputs"
import sys
from pathlib import Path

import mido
import numpy as np
import pandas as pd

from aria_tda.features.store import StoreWriter

d = Path(sys.argv[1])
(d / "midi").mkdir(parents=True, exist_ok=True)
(d / "wav").mkdir(exist_ok=True)
rng = np.random.default_rng(0)
n_tracks, n_queries, seg = 40, 8, 2
for i in range(n_tracks):  # 40 short MIDI files, chords around 4 roots
    mid = mido.MidiFile(ticks_per_beat=480)
    tr = mido.MidiTrack()
    mid.tracks.append(tr)
    tr.append(mido.MetaMessage("set_tempo", tempo=500000))
    root = 48 + (i % 4) * 3
    for _ in range(24):
        chord = [root + int(x) for x in rng.choice([0, 2, 4, 5, 7, 12], size=2, replace=False)]
        for p in chord:
            tr.append(mido.Message("note_on", note=p, velocity=int(rng.integers(40, 110)), time=0))
        dur = int(rng.choice([240, 480, 960]))
        for j, p in enumerate(chord):
            tr.append(mido.Message("note_off", note=p, velocity=0, time=dur if j == 0 else 0))
    mid.save(d / "midi" / f"t{i:03d}.mid")
(d / "wav" / "a.wav").write_bytes(b"RIFF")  # never read: the audio commands refuse first
ids = [f"t{i:03d}" for i in range(n_tracks)]
seg_track = np.repeat(np.arange(n_tracks), seg)
target = np.arange(n_queries) % 4
s = ((seg_track[:, None] % 4) == target[None, :]) * 3.0
s = s + rng.normal(size=(seg_track.size, n_queries))
np.save(d / "scores.npy", s.astype(np.float32))
pd.DataFrame({"segment": np.arange(seg_track.size),
              "track_id": np.array(ids)[seg_track]}).to_csv(d / "segments.csv", index=False)
enc = {"encoder": "toy", "weights_sha256": "ab" * 32, "layer": None, "sample_rate": 16000,
       "window_seconds": 1.0, "dim": 8}
centers = rng.normal(size=(4, 8)) * 3
for name, keys in (("emb_train", ids), ("emb_q", [f"q{j}" for j in range(n_queries)])):
    w = StoreWriter(d / name, modality="embedding", params={"encoder": enc})
    x = centers[np.arange(len(keys)) % 4] + rng.normal(size=(len(keys), 8))
    w.append(keys, {"embedding": x})
# a study: a score matrix and an embedding setting; report = true (the default) with no
# matplotlib: written without the K-sweep plots, which the page and one note line say
(d / "study.toml").write_text("""name = "ci-core"
modality = "symbolic"
feature_store = "store"
output = "results"
K = [5, 10]
K_report = 5
B = 20
seed = 1
n_bootstrap = 20

[[setting]]
method = "Planted"
scores = "scores.npy"
segments = "segments.csv"

[[setting]]
train_embeddings = "emb_train"
query_embeddings = "emb_q"
""")
EOF
cd "$D" || die "cd $D"

# --- 4. checks ------------------------------------------------------------------------------------
RESULTS=()
N_FAIL=0
record() {  # STATUS NAME SECONDS DETAIL
  RESULTS+=("$(printf '%-4s %-44s %5ss  %s' "$1" "$2" "$3" "$4")")
  [ "$1" = PASS ] || N_FAIL=$((N_FAIL + 1))
}

works() {  # NAME -- COMMAND...: must exit 0
  local name="$1"; shift 2
  local t=$(date +%s) rc
  "$@" >"$WORK/out" 2>"$WORK/err"; rc=$?
  local dt=$(( $(date +%s) - t ))
  if [ "$rc" = 0 ]; then
    record PASS "$name" "$dt" "$(tail -n 1 "$WORK/out" | cut -c1-70)"
  else
    record FAIL "$name" "$dt" "exit $rc: $(tail -n 1 "$WORK/err" | cut -c1-200)"
  fi
}

refuses() {  # NAME HINT ABSENT_PATH -- COMMAND...: exit 2, one stderr line naming HINT, no output
  local name="$1" hint="$2" absent="$3"; shift 4
  local t=$(date +%s) rc
  "$@" >"$WORK/out" 2>"$WORK/err"; rc=$?
  local dt=$(( $(date +%s) - t ))
  local n_lines; n_lines=$(wc -l <"$WORK/err")
  local line; line=$(head -n 1 "$WORK/err")
  if [ "$rc" != 2 ]; then
    record FAIL "$name" "$dt" "exit $rc (expected 2): $(tail -n 1 "$WORK/err" | cut -c1-200)"
  elif [ "$n_lines" != 1 ]; then
    record FAIL "$name" "$dt" "$n_lines stderr lines (expected 1): $(tr '\n' '|' <"$WORK/err" | cut -c1-200)"
  elif [[ "$line" != *"$hint"* || "$line" != *"error: MissingDependencyError"* ]]; then
    record FAIL "$name" "$dt" "does not name '$hint': $line"
  elif [ -n "$absent" ] && [ -e "$absent" ]; then
    record FAIL "$name" "$dt" "refused, but after creating $absent"
  else
    record PASS "$name" "$dt" "${line#*MissingDependencyError: }"
  fi
}

log "checks (inputs in $D)"
works "aria-tda --version"                    -- aria-tda --version
works "aria-tda --help"                       -- aria-tda --help
works "features symbolic"                     -- aria-tda features symbolic midi --out store
works "features errors"                       -- aria-tda features errors store
works "features jsymbolic"                    -- aria-tda features jsymbolic midi/t000.mid --json
works "diagnose"                              -- aria-tda diagnose scores.npy
works "aggregate"                             -- aria-tda aggregate scores.npy \
                                                   --segments segments.csv --out agg/s_track.npy
works "retrieve"                              -- aria-tda retrieve emb_train emb_q --out cos.npy
works "homogeneity"                           -- aria-tda homogeneity scores.npy --features store \
                                                   --segments segments.csv -K 5 10 -B 20 \
                                                   --bootstrap 20 --out homog
works "run (scores + embedding settings)"     -- aria-tda run study.toml
works "report (no matplotlib: a note)"        -- aria-tda report results --latex

AUDIO="pip install 'aria-tda[audio]'"
EMBED="pip install 'aria-tda[embed]'"
SCALE="pip install 'aria-tda[scale]'"
EXPER="pip install -e experiments"
refuses "features audio"                    "$AUDIO" x_audio  -- aria-tda features audio wav --out x_audio
refuses "features audio --workers 2"        "$AUDIO" x_audio  -- aria-tda features audio wav --out x_audio --workers 2
refuses "embed --encoder clews"             "$EMBED" x_emb    -- aria-tda embed wav --encoder clews --weights w.ckpt --out x_emb
refuses "embed --encoder mert"              "$EMBED" x_emb    -- aria-tda embed wav --encoder mert --out x_emb
refuses "embed --encoder clap"              "$EMBED" x_emb    -- aria-tda embed wav --encoder clap --out x_emb
refuses "features symbolic --scheduler"     "$SCALE" x_sym    -- aria-tda features symbolic midi --out x_sym --scheduler local:2
refuses "diagnose --scheduler"              "$SCALE" ""       -- aria-tda diagnose scores.npy --scheduler local:2
refuses "diagnose --device cuda"            "pip install torch" "" -- aria-tda diagnose scores.npy --device cuda
refuses "homogeneity --scheduler"           "$SCALE" x_homog  -- aria-tda homogeneity scores.npy --features store --segments segments.csv -K 5 --out x_homog --scheduler local:2
refuses "run --scheduler"                   "$SCALE" x_run    -- aria-tda run study.toml --out x_run --scheduler local:2
refuses "demo"                              "$EXPER" ""       -- aria-tda demo
refuses "demo symbolic --quick"             "$EXPER" ""       -- aria-tda demo symbolic --quick
refuses "sensitivity"                       "$EXPER" ""       -- aria-tda sensitivity
refuses "demo --quick (a flag first)"       "$EXPER" ""       -- aria-tda demo --quick
refuses "sensitivity --help"                "$EXPER" ""       -- aria-tda sensitivity --help

# --- summary ----------------------------------------------------------------------------------------
TOTAL=$(elapsed)
echo
echo "aria-tda core install (no extras): $(aria-tda --version), $("$VPY" --version 2>&1)"
printf '%s\n' "${RESULTS[@]}"
echo "${#RESULTS[@]} checks, $N_FAIL failed; install ${T_INSTALL} s, total ${TOTAL} s"
[ "$N_FAIL" = 0 ] || exit 1
