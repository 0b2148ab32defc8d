#!/usr/bin/env bash
# The long fuzzer run (issue 14) on a many-core machine: JOBS processes of
# `python -m coil.tools.fuzz`, each with its own hypothesis seed and GRAPHS
# graphs, on the CPU (Triton's interpreter); logs under $OUT, a summary last.
# FUZZ_ARGS adds options to every process (say, "--train" to compare
# gradients too, "--split 3" to force split reductions).
#   JOBS=14 GRAPHS=150 bash benchmarks/fuzz_parallel.sh
set -uo pipefail
OUT=${OUT:-/tmp/coil-fuzz}
JOBS=${JOBS:-14}
GRAPHS=${GRAPHS:-150}
LIMIT=${LIMIT:-560}
mkdir -p "$OUT"
export OMP_NUM_THREADS=1 PYTHONWARNINGS=ignore
for seed in $(seq 1 "$JOBS"); do
  # shellcheck disable=SC2086
  timeout "$LIMIT" "${PYTHON:-python3}" -m coil.tools.fuzz --graphs "$GRAPHS" --seed "$seed" \
    ${FUZZ_ARGS:-} > "$OUT/fuzz-$seed.log" 2>&1 &
done
wait
echo "== fuzz: $JOBS processes x $GRAPHS graphs =="
for seed in $(seq 1 "$JOBS"); do
  last=$(grep -E "graphs checked|graphs, " "$OUT/fuzz-$seed.log" | tail -n 1)
  echo "seed $seed: ${last:-no progress line}"
done
grep -h -A3 -- "--- failure" "$OUT"/fuzz-*.log | head -n 60
