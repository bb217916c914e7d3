#!/usr/bin/env bash
# Parity with real TensorFlow, on demand (CI has no TensorFlow): Keras applications (MobileNetV2,
# EfficientNetB0, ResNet50, DenseNet121, random weights) and LSTM/GRU/Bidirectional models are saved
# by TensorFlow, loaded and run by specflow, compared to 1e-4 and round-tripped through
# `specflow import` (tests/export/test_tf_parity.py). TensorFlow lives in a scratch virtualenv
# outside the repository, never in specflow's dependencies:
#
#   python -m venv /work/scratch/tfvenv && /work/scratch/tfvenv/bin/pip install tensorflow-cpu
#   scripts/tf_parity.sh [pytest args]          (TFVENV=... to use another venv)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${TFVENV:-/work/scratch/tfvenv}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "no virtualenv at $VENV: python -m venv $VENV && $VENV/bin/pip install tensorflow-cpu" >&2
  exit 2
fi
# specflow's own dependencies (not specflow itself: it runs from this checkout).
"$VENV/bin/python" -c "import pydantic, yaml, typer, rich, tensorboard, google_crc32c, scipy, pytest" 2>/dev/null ||
  "$VENV/bin/pip" install -q "pydantic>=2.10" "pyyaml>=6.0" "typer>=0.12" "rich>=13.7" "tensorboard>=2.16" \
    "google-crc32c>=1.5" "scipy>=1.11" pytest
cd "$ROOT"
PYTHONPATH="$ROOT" exec "$VENV/bin/python" -m pytest -q -rs -p no:cacheprovider tests/export/test_tf_parity.py "$@"
