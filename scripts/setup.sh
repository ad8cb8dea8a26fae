#!/usr/bin/env bash
# Set up ARIA on a fresh machine: the system packages it uses, and a virtual environment at
# .venv in this checkout with the `aria-tda` command and every extra installed.
#
#   scripts/setup.sh          # runtime: .venv with aria-tda[all] and aria-tda-experiments
#   scripts/setup.sh --dev    # also test tools (pytest, playwright, ruff, mypy) and Chromium
#
# System packages (Debian/Ubuntu, installed with apt-get when missing and we are root or have
# passwordless sudo): fluidsynth + a General-MIDI soundfont (rendering MIDI to audio), and with
# --dev Chromium (the report's browser tests). Safe to rerun: finished steps are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

DEV=0
for arg in "$@"; do
  case "$arg" in
    --dev) DEV=1 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (expected --dev)" >&2; exit 2 ;;
  esac
done

log() { printf '[setup] %s\n' "$*" >&2; }

# --- system packages -------------------------------------------------------------------
need=()
command -v fluidsynth >/dev/null 2>&1 || need+=(fluidsynth)
ldconfig -p 2>/dev/null | grep -q libfluidsynth || need+=(libfluidsynth3)
[ -e /usr/share/sounds/sf2/FluidR3_GM.sf2 ] || need+=(fluid-soundfont-gm)
if [ "$DEV" = 1 ]; then
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
fi
if [ "${#need[@]}" -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then
      if sudo -n true 2>/dev/null; then SUDO="sudo -n"; else SUDO="none"; fi
    fi
    if [ "$SUDO" = none ]; then
      log "WARNING: cannot install ${need[*]} (not root, no passwordless sudo); audio rendering/report browser tests will be skipped"
    else
      log "installing system packages: ${need[*]}"
      $SUDO apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    fi
  else
    log "WARNING: no apt-get; please install ${need[*]} yourself"
  fi
fi

# --- virtual environment ---------------------------------------------------------------
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  for cand in python3.11 python3.12 python3; do
    if command -v "$cand" >/dev/null 2>&1; then PY="$cand"; break; fi
  done
fi
if [ ! -x .venv/bin/python ]; then
  log "creating .venv with $PY ($($PY --version 2>&1))"
  "$PY" -m venv .venv
fi
PIP=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)
# this machine's pip config names local wheel folders that may be absent; hide that noise
pip_install() { "${PIP[@]}" "$@" 2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2); }

# torch first, pinned to the CPU build this project is tested with, so that no other
# package pulls a multi-GB CUDA build.
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  log "installing torch==2.13.0"
  pip_install "torch==2.13.0"
fi

if [ "$DEV" = 1 ]; then extras="dev"; else extras="all"; fi
log "installing aria-tda[$extras] and aria-tda-experiments (editable)"
pip_install -e ".[$extras]" -e experiments

# BeatNet (the paper's beat/downbeat tracker) is an optional audio backend. Its own pins
# (numba 0.54, pyaudio) would break the environment, so it goes in without them: ARIA uses only
# its model code and shipped weights (see aria_tda.features.audio.beatnet).
if ! .venv/bin/python -c "import BeatNet" >/dev/null 2>&1; then
  log "installing BeatNet==1.1.3 (--no-deps)"
  pip_install --no-deps "BeatNet==1.1.3"
fi

# LAION-CLAP's own code, the reference of the clap encoder's equivalence test (tests only; ARIA
# never imports it). Its pins would pull torchvision and torchaudio, so it goes in without them.
if [ "$DEV" = 1 ] && ! .venv/bin/python -c "import importlib.util as u; exit(u.find_spec('laion_clap') is None)" >/dev/null 2>&1; then
  log "installing laion-clap==1.1.7 (--no-deps, test reference)"
  pip_install --no-deps "laion-clap==1.1.7"
fi

# quanda's Metric base, for the tests of ARIA's quanda metric (aria_tda.integrations.metrics).
# Its pins pull torchvision (whose wheel is built for CUDA torch and breaks on the CPU one),
# lightning, captum, kronfluence, traker, annoy, tiktoken …: the peers its package __init__
# imports. Its metric modules need only torch, PyYAML and Hugging Face datasets, and
# aria_tda.integrations.metrics.quanda_module imports them without that __init__. So quanda
# goes in without its pins; datasets (small: dill, multiprocess, xxhash) is in the dev extra.
if [ "$DEV" = 1 ] && ! .venv/bin/python -c "import importlib.util as u; exit(u.find_spec('quanda') is None)" >/dev/null 2>&1; then
  log "installing quanda==0.5.0 (--no-deps, test of the quanda metric)"
  pip_install --no-deps "quanda==0.5.0"
fi

log "done: $(.venv/bin/aria-tda --version)"
