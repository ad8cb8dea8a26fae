#!/usr/bin/env bash
# Build the separate environment that scripts/peer_fixtures/generate.py runs in.
# The peer attribution libraries are test-fixture tools only: never install them into the
# project's environment. Usage: bash scripts/peer_fixtures/setup_env.sh [VENV]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${1:-/work/peer-venv}"
python3.11 -m venv "$venv"
pip=("$venv/bin/pip" install --quiet -c "$here/constraints.txt")
"${pip[@]}" "torch==2.13.0+cpu"
"${pip[@]}" -r "$here/deps.txt"
"${pip[@]}" --no-deps -r "$here/requirements.txt"
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
# torchvision 0.28's wheel is built for CUDA torch: its C++ ops do not load on the CPU wheel
# and its fake-kernel registrations then fail at import ("operator torchvision::nms does not
# exist"), which breaks `import quanda` (through torchmetrics) and kronfluence. None of these
# ops is used here: drop the extension and empty the registrations.
rm -f "$site/torchvision/_C.so"
echo "# emptied by scripts/peer_fixtures/setup_env.sh: torchvision's CUDA-built ops are absent" \
  > "$site/torchvision/_meta_registrations.py"
"$venv/bin/python" - <<'PY'
import importlib.metadata as m
import captum.influence, dattri.algorithm.tracin, kronfluence.analyzer, trak  # noqa: F401
from quanda.metrics.heuristics import TopKCardinalityMetric  # noqa: F401
from bergson.score.scorer import Scorer  # noqa: F401
print({p: m.version(p) for p in ("torch", "numpy", "traker", "kronfluence", "dattri", "captum",
                                 "quanda", "bergson")})
PY
