#!/usr/bin/env bash
# Installs everything mmdet_rankloss needs into a virtual environment; safe to re-run.
#
#   tools/install.sh            # creates or reuses ./.venv
#   VENV=/path/env tools/install.sh
#
# mmdet 3.3.0 needs mmcv < 2.2 with compiled ops; PyPI only has the mmcv 2.1.0
# sdist, so it is built here against the installed torch (about 17 minutes on
# 2 cores) and the wheel is cached outside the repository, in
# ${MMDET_RANKLOSS_CACHE:-~/.cache/mmdet_rankloss}, keyed by torch and Python
# version, so a second install on the same machine takes a minute or two.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${VENV:-$ROOT/.venv}
CACHE=${MMDET_RANKLOSS_CACHE:-$HOME/.cache/mmdet_rankloss}
PYTHON=${PYTHON:-python3}
log() { echo "[install] $*"; }

if [ ! -x "$VENV/bin/python" ]; then
  log "creating virtual environment $VENV"
  "$PYTHON" -m venv "$VENV"
fi
PY="$VENV/bin/python"
PIP=("$PY" -m pip install --disable-pip-version-check -q)

# torch: keep a compatible one (2.0 <= torch <= 2.13; >= 2.14 breaks the mmcv build).
if ! "$PY" - <<'PYEOF' 2>/dev/null
import sys, torch
major, minor = (int(x) for x in torch.__version__.split('+')[0].split('.')[:2])
sys.exit(0 if (2, 0) <= (major, minor) <= (2, 13) else 1)
PYEOF
then
  log "installing torch 2.13.0"
  "${PIP[@]}" torch==2.13.0
fi
TORCH_VERSION=$("$PY" -c "import torch; print(torch.__version__)")
log "torch $TORCH_VERSION"

# Build and runtime tools first: mmcv's build imports torch and needs setuptools < 81
# (MMEngine's package helpers import pkg_resources, removed in setuptools 81).
# numpy, Pillow and matplotlib are pinned: the glyph renders of the pretrained
# backbone (tools/misc/pretrain_backbone.py) can change with their versions.
"${PIP[@]}" 'setuptools<81' wheel ninja 'numpy==2.4.6' 'pillow==13.0.0' \
  'matplotlib==3.11.2' 'mmengine==0.10.7'

if ! "$PY" -c "import mmcv, mmcv.ops; assert mmcv.__version__ == '2.1.0'" 2>/dev/null; then
  PYTAG=$("$PY" -c "import sys; print(f'cp{sys.version_info[0]}{sys.version_info[1]}')")
  WHEELS="$CACHE/wheels/torch-${TORCH_VERSION}-${PYTAG}"
  mkdir -p "$WHEELS"
  WHEEL=$(ls "$WHEELS"/mmcv-2.1.0-*.whl 2>/dev/null | head -n 1 || true)
  if [ -z "$WHEEL" ]; then
    log "building mmcv 2.1.0 with ops against torch $TORCH_VERSION (about 17 min on 2 cores)"
    MMCV_WITH_OPS=1 MAX_JOBS=${MAX_JOBS:-$(nproc)} "$PY" -m pip wheel -q \
      --no-build-isolation --no-deps -w "$WHEELS" mmcv==2.1.0
    WHEEL=$(ls "$WHEELS"/mmcv-2.1.0-*.whl | head -n 1)
  else
    log "using cached $WHEEL"
  fi
  "${PIP[@]}" --no-deps "$WHEEL"
  # mmcv's runtime requirements (installed without its own resolver, see above).
  "${PIP[@]}" addict packaging Pillow pyyaml yapf opencv-python-headless
fi

# setup.py's extras 'mmdet' and 'tests', at the versions tested (its
# install_requires, torch and numpy, and mmengine are installed above). This
# package itself goes in last with --no-deps, so pip never re-resolves torch or
# mmcv.
"${PIP[@]}" 'mmdet==3.3.0' pycocotools scipy scikit-learn pytest ruff isort 'setuptools<81'
# Optional reference for tests (FastAP values); pure Python, uses the torch above.
# Pinned < 3: its 3.x requires torch >= 2.14, which cannot build mmcv 2.1.0.
"${PIP[@]}" 'pytorch-metric-learning<3' || log "pytorch-metric-learning not installed: its comparison test will be skipped"
# Optional reference for the retrieval metric (exact search, one binary wheel).
"${PIP[@]}" faiss-cpu || log "faiss-cpu not installed: its comparison test and the benchmark's --compare faiss will be skipped"
# The library, then the lab beside it (benchmarks, studies, the tools' code),
# both editable: the lab reads the configs and records of this checkout.
"${PIP[@]}" --no-deps --no-build-isolation -e "$ROOT"
"${PIP[@]}" --no-deps --no-build-isolation -e "$ROOT/lab"

"$PY" - <<'PYEOF'
import mmcv, mmcv.ops, mmdet, mmengine, torch
import mmdet_rankloss, rankloss_lab
print(f'[install] ok: torch {torch.__version__}, mmcv {mmcv.__version__} (ops), '
      f'mmengine {mmengine.__version__}, mmdet {mmdet.__version__}, '
      f'mmdet_rankloss {mmdet_rankloss.__version__}')
PYEOF
