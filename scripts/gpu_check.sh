#!/usr/bin/env bash
# Issue 20's checks on a machine with a CUDA GPU and cupy (run from the repository root):
#   1. the gpu-marked tests (every kernel case again under cupy, GPU sessions and variables);
#   2. digits and the CNN trained on cpu:1 and on cpu:1,gpu:1 (held-out accuracy side by side)
#      and `inspect --placed` of the CNN on cpu:1,gpu:1;
#   3. the rest of the suite with the GPU visible (Ray's tests too where ray imports);
#   4. benchmarks/gpu.py (specflow vs PyTorch eager on the same card);
#   5. scripts/gpu_profile.py: the CNN step at batch 256 under cProfile.
# Logs go to $OUT (default ./gpu_check_out). Stage time limits keep the whole run under
# ~7 minutes; GPU_CHECK_STAGES picks stages (default "tests train suite bench profile").
set -uo pipefail
OUT=${OUT:-gpu_check_out}
mkdir -p "$OUT"
STAGES=${GPU_CHECK_STAGES:-tests train suite bench profile}
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
# Wheels the machine lacks travel in .whl (pydantic and friends); installed beside, not over, the image.
if compgen -G ".whl/*.whl" >/dev/null; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
$PY -m pip install -q --no-index --no-deps --no-build-isolation -e . >/dev/null 2>&1 \
  || export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
{
  nvidia-smi -L; nproc
  $PY -c "import cupy, numpy, sys; print('python', sys.version.split()[0], 'cupy', cupy.__version__, 'numpy', numpy.__version__, 'gpus', cupy.cuda.runtime.getDeviceCount())"
  $PY -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name())" 2>&1 | tail -1
  $PY -c "import ray; print('ray', ray.__version__)" 2>&1 | tail -1
  $PY -m specflow --help >/dev/null && echo "specflow CLI ok"
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
PYTEST="$PY -m pytest -q -p no:cacheprovider --tb=short -rfE"
has() { [[ " $STAGES " == *" $1 "* ]]; }

if has tests; then
  echo "== gpu-marked tests"
  timeout 150 $PYTEST -m gpu -n 8 --timeout 100 ${GPU_TESTS:-tests} >"$OUT/gpu_tests.log" 2>&1
  echo "rc=$?"; tail -3 "$OUT/gpu_tests.log"
fi
if has train; then
  echo "== training on cpu:1 and on cpu:1,gpu:1"
  {
    for spec in digits_mlp mnist_cnn; do
      for dev in ${TRAIN_DEVICES:-cpu:1 cpu:1,gpu:1}; do
        start=$(date +%s%N)
        timeout 100 $PY -m specflow train "models/$spec.yaml" --devices "$dev" --logdir "/tmp/run_${spec}_${dev//[:,]/_}" --overwrite \
          2>&1 | grep -E "eval accuracy|Error|error" | tr -s ' ' | sed "s|^|$spec $dev: |"
        echo "$spec $dev: $(( ($(date +%s%N) - start) / 1000000 )) ms"
      done
    done
    timeout 60 $PY -m specflow inspect models/mnist_cnn.yaml --placed --devices cpu:1,gpu:1 2>&1 | head -120
  } >"$OUT/train.log" 2>&1
  grep -E "accuracy| ms$|rror" "$OUT/train.log"
fi
if has suite; then
  echo "== the suite, GPU visible"
  timeout 150 $PYTEST -n 14 --timeout 120 --continue-on-collection-errors -m "not gpu" tests >"$OUT/suite.log" 2>&1
  echo "rc=$?"; tail -3 "$OUT/suite.log"
fi
if has bench; then
  echo "== benchmarks/gpu.py"
  timeout 170 $PY -m benchmarks.gpu ${GPU_BENCH_ARGS:---rounds 7} 2>&1 | tee "$OUT/bench.log"
fi
if has profile; then
  echo "== scripts/gpu_profile.py"
  timeout 60 $PY scripts/gpu_profile.py --top 45 >"$OUT/profile.log" 2>&1
  head -3 "$OUT/profile.log"
fi
