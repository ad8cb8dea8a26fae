#!/usr/bin/env bash
# The symbolic demo's GPU path on a machine with a CUDA GPU, as measured for the README
# ("Training and attribution on a GPU"):
#
#   1. smoke: `aria-tda demo --preset tiny --device cuda --until lds` (every GPU stage, seconds);
#   2. parity: benchmarks/bench_device_parity.py (CPU vs GPU training and attribution);
#   3. `aria-tda demo --preset gpu --device cuda --until lds` under a time budget; its stage
#      records (seconds, device) and, when it finishes, the stages the analysis needs are
#      packed so that `aria-tda demo --preset gpu --out WORK/gpu` finishes the run on any machine.
#
# The corpus stages must be in WORK already (built where music21 is installed:
# `aria-tda demo --preset tiny --until corpus --out WORK/tiny`, and the paper corpus in WORK/gpu).
# The pack holds the corpus stage's record but not its data: finish in a folder that has the
# same corpus stage (the one it was built in).
#
# Usage: experiments/scripts/gpu_demo.sh WORK OUT [BUDGET_SECONDS] [WORKERS]
set -u
WORK=${1:?work folder}
OUT=${2:?output folder}
BUDGET=${3:-420}
WORKERS=${4:-12}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
export PYTHONUNBUFFERED=1 PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}"
export ARIA_CACHE_DIR="${ARIA_CACHE_DIR:-$WORK/cache}"
PY=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}

{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  "$PY" -c 'import torch, numpy; print("torch", torch.__version__, "numpy", numpy.__version__, "cuda", torch.cuda.is_available())'
} >"$OUT/machine.txt" 2>&1

t0=$(date +%s)
"$PY" -m aria-tda demo --preset tiny --device "$DEVICE" --until lds --out "$WORK/tiny" --no-progress \
  >"$OUT/tiny.log" 2>&1
rc=$?
echo "tiny smoke: rc=$rc, $(( $(date +%s) - t0 )) s" | tee -a "$OUT/machine.txt"
if [ $rc -ne 0 ]; then tail -40 "$OUT/tiny.log"; exit $rc; fi

t0=$(date +%s)
"$PY" benchmarks/bench_device_parity.py --corpus "$WORK/tiny/corpus/corpus" --device "$DEVICE" \
  --json "$OUT/parity.json" >"$OUT/parity.log" 2>&1
echo "parity: rc=$?, $(( $(date +%s) - t0 )) s" | tee -a "$OUT/machine.txt"

t0=$(date +%s)
timeout -s INT -k 20 "$BUDGET" "$PY" -m aria-tda demo --preset gpu --device "$DEVICE" --threads "$WORKERS" \
  --until lds --out "$WORK/gpu" --no-progress >"$OUT/gpu.log" 2>&1
rc=$?
echo "gpu preset: rc=$rc, $(( $(date +%s) - t0 )) s (budget $BUDGET s)" | tee -a "$OUT/machine.txt"
nvidia-smi --query-gpu=memory.used --format=csv,noheader >>"$OUT/machine.txt" 2>&1
for d in "$WORK"/gpu/models "$WORK"/gpu/lds/retrains*; do
  [ -d "$d" ] && echo "$d: $(ls "$d"/*/model.pt 2>/dev/null | wc -l) trained models" >>"$OUT/machine.txt"
done

# what the analysis needs (the other ensemble members and the retrained models stay behind)
cd "$WORK/gpu" || exit 1
files=$(ls -d */stage.json models/member-00 queries attribution/scores lds/subsets.npy \
  lds/outputs.npy 2>/dev/null)
tar czf "$OUT/gpu-stages.tgz" $files
cd - >/dev/null || exit 1
split -b 15m "$OUT/gpu-stages.tgz" "$OUT/gpu-stages.tgz.part-" && rm "$OUT/gpu-stages.tgz"
ls -la "$OUT"
tail -25 "$OUT/gpu.log"
exit $rc
