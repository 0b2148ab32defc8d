#!/usr/bin/env bash
# One call of a multi-GPU machine, one gpu.sh per GPU: install once, then run
# gpu.sh on GPU i with the environment of argument i, all at once, each with
# its own $OUT/g<i> (its gpu.log and logs.tgz: 2 files a GPU, and at most 8
# files come back from a lent machine, so at most four GPUs).
#   bash benchmarks/gpu_multi.sh "TESTS=1 TEST_WORKERS=16" "DYNAMIC='resnet50 gpt2'"
# An argument "-" leaves that GPU idle; GPUS_OF=2,3 in an argument gives its
# gpu.sh those GPUs (a model sweep over two: MODEL_SWEEP='--gpus 2 ...').
set -uo pipefail
OUT=${OUT:-/tmp/coil-gpu}
mkdir -p "$OUT"
export DEADLINE=${DEADLINE:-560}
# The install of gpu.sh alone (no step set), once for every GPU's run.
bash benchmarks/gpu.sh > "$OUT/install.log" 2>&1 || { cat "$OUT/install.log"; exit 1; }
rm -rf "$OUT"/logs.tgz
pids=()
i=0
for spec in "$@"; do
  if [ "$spec" != - ]; then
    mkdir -p "$OUT/g$i"
    devices=$i
    ( eval "export $spec"; export CUDA_VISIBLE_DEVICES=${GPUS_OF:-$devices}
      OUT="$OUT/g$i" SKIP_INSTALL=1 bash benchmarks/gpu.sh > "$OUT/g$i/gpu.log" 2>&1 ) &
    pids+=($!)
  fi
  i=$((i + 1))
done
status=0
for pid in "${pids[@]}"; do
  wait "$pid"
  status=$(( status | $? ))
done
# The summaries, GPU by GPU (each gpu.log ends with its own).
for d in "$OUT"/g*; do
  echo "=== $(basename "$d")"
  sed -n '/^== summary ==/,$p' "$d/gpu.log" | head -60
done
rm -f "$OUT/install.log"
exit "$status"
