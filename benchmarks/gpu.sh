#!/usr/bin/env bash
# The GPU run: tests marked `gpu` (the model set through the coil backend with
# Triton kernels compiled for the GPU, the libdevice math) and the benchmarks
# against eager and Inductor; full logs under $OUT, a summary last. (CI runs
# the same kernels under the newest Triton's CPU interpreter.)
# Run on the lent GPU machine from the repo root with the wheels of
# ../shared/GPU.md (plus expecttest, which the OpInfo tests import) carried in .whl:
#   python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
#    && python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/site . \
#    && export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH && bash benchmarks/gpu.sh
set -uo pipefail
OUT=${OUT:-/tmp/coil-gpu}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" \
  | tee -a "$OUT/device.txt"
PYTHONWARNINGS=ignore python3 -m pytest test/python -m gpu -p no:cacheprovider -q -rs \
  2>&1 | tee "$OUT/pytest-gpu.log"
status=${PIPESTATUS[0]}
PYTHONWARNINGS=ignore python3 benchmarks/bench.py 2>&1 | tee "$OUT/bench.log"
status=$(( status | PIPESTATUS[0] ))
echo "== summary =="
cat "$OUT/device.txt"
tail -n 1 "$OUT/pytest-gpu.log"
tail -n 8 "$OUT/bench.log"
exit "$status"
