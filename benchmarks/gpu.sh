#!/usr/bin/env bash
# The GPU run, one call of the lent machine: install coil and its test tools
# from the wheels in .whl (../shared/GPU.md: xdsl, immutabledict, ordered-set,
# filecheck, lit, expecttest; timm where the machine lacks it), then
#   TESTS=1   the tests marked `gpu` (Triton kernels compiled for the GPU);
#             TEST_FILES="test/python/test_x.py ..." limits them to those files;
#             with pytest-xdist's wheels in .whl (pytest_xdist, execnet) they
#             run in TEST_WORKERS processes (default 8; 1: one process) -- one
#             process took 502 s of a 600 s call for 140 tests on an H100 host;
#             the compiles are CPU-bound and the host has 16 or more cores;
#   BENCH=1   benchmarks/bench.py (kernels against eager and Inductor);
#   ROOFLINE="softmax sum_ ..."  benchmarks/roofline.py on the workloads whose
#            names contain one (ROOFLINE=all: every one; ROOFLINE_ARGS adds
#            options, e.g. --no-inductor, --kernels);
#   SWEEP="var_dim0 bf16,mean_all bf16"  benchmarks/tile_sweep.py (launch configs of
#            roofline workloads, comma-separated, against Inductor's);
#   SHAPE_SWEEP=all  benchmarks/shape_sweep.py (the kernel strategy's choice against
#            a small grid of launch configs and Inductor over ~45 shapes; names,
#            e.g. SHAPE_SWEEP="mean_nhwc softmax", limit it to the shapes whose
#            names contain one; SHAPE_SWEEP_ARGS adds options, e.g. --target a100;
#            its --budget is what is left of DEADLINE less 60 s, shapes past it
#            listed as skipped; $OUT/shape_sweep.csv and shape_sweep.md);
#   NCU="mean_all bf16,sum_dim1 bf16"  benchmarks/ncu_kernels.py under ncu (hardware
#            counters of coil's and Inductor's kernels for roofline workloads);
#   MODELS="gpt2 bert ..."   benchmarks/models.py on those models;
#   MODEL_SWEEP="--jobs 24 --gpus 4"  benchmarks/sweep.py with these options (the
#                            model-zoo sweep: one process per model, resumable by
#                            commit through benchmarks/results/sweep.csv; its
#                            deadline is what is left of DEADLINE; SWEEP_COMMIT
#                            names the commit, as the device has no .git;
#                            MODEL_SWEEP="--retime --gpus 4" re-times, one process per
#                            GPU, the rows that lost under the compiles' load);
#   DYNAMIC="gpt2 bert resnet50 mlp"  benchmarks/dynamic.py (coil dynamic vs coil
#                            static vs Inductor dynamic over many sizes;
#                            DYNAMIC_ARGS adds options, e.g. --profile);
#   OVERHEAD="mlp20_b1 ..."  benchmarks/overhead.py (host overhead per call;
#                            OVERHEAD_DUMP=1 adds coil's dump of each under $OUT/dump;
#                            OVERHEAD_ISOLATE=1 runs each variant in its own process,
#                            in OVERHEAD_ORDER's order when given;
#                            OVERHEAD_TRACE=1 a Chrome trace of each (=gpu: the GPU
#                            side of calls queued behind a sleep kernel), summarized
#                            by benchmarks/trace_summary.py in $OUT/trace_summary.txt);
#   HOSTPROF="mlp20_b1:coil-cudagraphs ..."  benchmarks/host_profile.py (cProfile
#                            of host time per call) on NAME:VARIANT pairs
#                            (NAME:VARIANT:V1,V2: after V1 and V2 ran in its process);
#   DECODE="llama150m llama1b gptfast150m"  benchmarks/decode.py (token-by-token
#            generation from a static KV cache, batch 1 then 8: eager, Inductor and
#            coil reduce-overhead; DECODE_ARGS adds options, e.g. "--batch 1
#            --variants eager,inductor-ro,coil-ro,coil-ro-base" or --no-graphs
#            (coil, coil-cpp, inductor without CUDA graphs); ms/token, % of copy
#            bandwidth, kernels/token; DECODE=all: every model; its --budget is
#            what is left of DEADLINE less 60 s; $OUT/decode.md, after every row);
#   PROFILE="bert ..."       benchmarks/profile_model.py (torch.profiler: kernel
#                            time vs wall, top kernels; eager, Inductor, coil);
#   MEMORY="vit_hf ..."      benchmarks/memory_probe.py (planned vs measured peak);
#   GEMM="gpt2 llama vit_hf resnet50"  benchmarks/gemm.py: eager, inductor,
#            inductor max-autotune, coil, coil gemm=triton, coil max-autotune;
#            GEMM_ARGS="--shapes gpt2,llama,vit,resnet50": the products
#            (resnet50: its 1x1 convolutions) alone first
#   COMPILE="gpt2 bert ..."  benchmarks/compile_time.py on those models (cold and
#                            warm first calls, coil and Inductor, new processes);
#   BEFORE="gpt2 ..."        the same with the coil of .whl/coil_before.tar
#                            (a `git archive` of an earlier commit), for
#                            before/after numbers on one machine;
#   SIDE_GPU=3  DYNAMIC and SHAPE_SWEEP run on that GPU alone, in the background,
#            beside the other steps (MODEL_SWEEP="--gpus 3 ..." on GPUs 0-2);
#            SIDE_GPU="2 3" runs DYNAMIC on GPU 2 and SHAPE_SWEEP on GPU 3 at once;
#   CMD="python3 scratch/x.py"  any command (a diagnosis script carried along),
#            run under the deadline, its output in $OUT/cmd.log;
#            e.g. CMD="python3 benchmarks/sdpa_backends.py" (host and GPU us of each
#            SDPA kernel for the masks the attention rewrite passes);
#   DIST=1   the distributed tests marked `gpu` (NCCL, 2 GPUs) and
#            benchmarks/distributed.py (4 then 2 GPUs: Llama-1B-shaped and
#            GPT-2 medium; eager FSDP2, Inductor, coil over FSDP2 blocks, coil
#            with traced sharding, FSDP2 + tensor parallel 2x2; its --budget is
#            what is left of DEADLINE less 20 s, rows past it listed as skipped;
#            $OUT/distributed.md, distributed.csv, distributed-trace-*.json.gz);
#            DIST=tests or DIST=bench runs one of the two; DIST_ARGS adds
#            options, e.g. DIST_ARGS="--worlds 4 --models llama1b --layers 8".
# Full logs under $OUT, a summary last. From the repo root on the device:
#   TESTS=1 BENCH=1 MODELS="gpt2 bert" bash benchmarks/gpu.sh
# SKIP_INSTALL=1 skips the install (another gpu.sh of the same call did it).
# DEADLINE (seconds from the start, default 560; a lent machine's call is cut
# at 600) bounds every step: a step still running then is stopped (exit 124,
# its log so far kept), later steps are skipped, and the summary still prints.
set -uo pipefail
OUT=${OUT:-/tmp/coil-gpu}
mkdir -p "$OUT"
START=$SECONDS
DEADLINE=${DEADLINE:-560}
budget() {
  # Run "$@" for at most the seconds left before DEADLINE (its process group
  # killed then), or skip it when too few are left.
  local left=$(( DEADLINE - (SECONDS - START) ))
  if [ "$left" -le 10 ]; then
    echo "gpu.sh: DEADLINE ($DEADLINE s) reached: skipped: $*" | tee -a "$OUT/skipped.txt" >&2
    return 124
  fi
  timeout -k 10 "$left" "$@"
}
export PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
# A crashing process (a segfault in a training row) prints its Python stack.
export PYTHONFAULTHANDLER=1
# Bytecode caches in a writable place: the machine's torch has none it can use,
# so every new process compiled ~240 of torch's modules from source (1.2-1.9 s
# of each compile_time.py warm start, either backend, under cProfile); a
# user's install has them.
export PYTHONPYCACHEPREFIX=/tmp/pycache
# No NVLink multicast, in this process and every one it starts.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
# SKIP_INSTALL=1: an earlier gpu.sh of this call installed (several run at once
# on a multi-GPU machine, one per GPU: one install, no two writing /tmp/site).
if [ "${SKIP_INSTALL:-0}" != 1 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site \
    $(ls .whl/*.whl | grep -v timm) || exit 1
  # --upgrade: a warm machine keeps /tmp/site, and pip skips a package already there.
  python3 -m pip install -q --no-index --no-deps --no-build-isolation --upgrade --target /tmp/site . || exit 1
  python3 -c "import timm" 2>/dev/null \
    || python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/timm-*.whl
fi
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
# A wheel missing from .whl made three GPU test files ImportErrors at the
# twenty-second session's first test call: say so first, in the summary too.
for module in xdsl lit filecheck expecttest; do
  python3 -c "import $module" 2>/dev/null || echo "gpu.sh: $module is not installed: add its wheel to .whl (../shared/GPU.md)" | tee -a "$OUT/missing.txt"
done
# Fill the bytecode cache before anything is timed: otherwise the first
# process (say compile_time.py's first cold row) pays for it alone.
python3 -c "import torch._dynamo, torch._inductor.compile_fx, triton, coil.backend" 2>/dev/null || true
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
python3 -c "import torch, triton, transformers; print('torch', torch.__version__, 'triton', \
triton.__version__, 'transformers', transformers.__version__)" | tee -a "$OUT/device.txt"
# The steps that can run beside the model sweep (SIDE_GPU): each returns its status.
shape_sweep() {
  [ -n "${SHAPE_SWEEP:-}" ] || return 0
  local names=$SHAPE_SWEEP left
  [ "$names" = all ] && names=
  left=$(( DEADLINE - (SECONDS - START) - 60 ))
  # shellcheck disable=SC2086
  budget python3 benchmarks/shape_sweep.py --budget "$left" --out "$OUT" ${SHAPE_SWEEP_ARGS:-} $names \
    2>&1 | tee -a "$OUT/shape_sweep.log"
  return "${PIPESTATUS[0]}"
}
dynamic() {
  [ -n "${DYNAMIC:-}" ] || return 0
  # One process per workload: a CUDA error is sticky, and would fail the rest.
  local st=0 name
  for name in $DYNAMIC; do
    # shellcheck disable=SC2086
    budget python3 benchmarks/dynamic.py ${DYNAMIC_ARGS:-} "$name" 2>&1 | tee -a "$OUT/dynamic.log"
    st=$(( st | PIPESTATUS[0] ))
  done
  return "$st"
}
status=0
side_pids=()
if [ -n "${SIDE_GPU:-}" ]; then
  # DYNAMIC then SHAPE_SWEEP on GPU SIDE_GPU alone, in the background, while
  # the other steps (the model sweep on the other GPUs: --gpus N uses 0..N-1)
  # run: one call of a multi-GPU machine does all of them. SIDE_GPU="2 3":
  # DYNAMIC on GPU 2 and SHAPE_SWEEP on GPU 3, at the same time.
  read -r side_a side_b <<< "$SIDE_GPU"
  if [ -n "${side_b:-}" ]; then
    ( export CUDA_VISIBLE_DEVICES=$side_a; dynamic ) &
    side_pids+=($!)
    ( export CUDA_VISIBLE_DEVICES=$side_b; shape_sweep ) &
    side_pids+=($!)
  else
    ( export CUDA_VISIBLE_DEVICES=$side_a; st=0; dynamic || st=1; shape_sweep || st=1; exit $st ) &
    side_pids+=($!)
  fi
fi
if [ "${TESTS:-0}" = 1 ]; then
  workers=()
  if [ "${TEST_WORKERS:-8}" != 1 ] && python3 -c "import xdist" 2>/dev/null; then
    workers=(-n "${TEST_WORKERS:-8}")
  fi
  # shellcheck disable=SC2086
  budget python3 -m pytest ${TEST_FILES:-test/python} -m gpu "${workers[@]}" -p no:cacheprovider -v -rfEs \
    --durations=15 2>&1 | tee "$OUT/pytest-gpu.log"
  status=$(( status | PIPESTATUS[0] ))
fi
if [ "${BENCH:-0}" = 1 ]; then
  budget python3 benchmarks/bench.py 2>&1 | tee "$OUT/bench.log"
  status=$(( status | PIPESTATUS[0] ))
fi
if [ -n "${ROOFLINE:-}" ]; then
  names=$ROOFLINE
  [ "$names" = all ] && names=
  # shellcheck disable=SC2086
  budget python3 benchmarks/roofline.py ${ROOFLINE_ARGS:-} $names 2>&1 | tee -a "$OUT/roofline.log"
  status=$(( status | PIPESTATUS[0] ))
fi
if [ -n "${SWEEP:-}" ]; then
  IFS=, read -r -a sweep <<< "$SWEEP"
  budget python3 benchmarks/tile_sweep.py "${sweep[@]}" 2>&1 | tee -a "$OUT/tile_sweep.log"
  status=$(( status | PIPESTATUS[0] ))
fi
[ -z "${SIDE_GPU:-}" ] && { shape_sweep; status=$(( status | $? )); }
if [ -n "${NCU:-}" ]; then
  IFS=, read -r -a ncu_names <<< "$NCU"
  metrics=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import ncu_kernels; print(ncu_kernels.METRICS)")
  budget ncu --profile-from-start off --clock-control none --metrics "$metrics" --csv \
    python3 benchmarks/ncu_kernels.py "${ncu_names[@]}" > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
  status=$(( status | $? ))
fi
if [ -n "${GEMM:-}${GEMM_ARGS:-}" ]; then
  # GEMM="gpt2 llama vit_hf resnet50": issue 38's table (gemm templates and
  # max-autotune against Inductor's); GEMM_ARGS="--variants ..." narrows it;
  # GEMM_ARGS="--shapes gpt2,llama,vit,resnet50" times the models' products
  # (resnet50's 1x1 convolutions) alone first (cuBLAS/cuDNN, coil's configs,
  # Inductor's Triton templates: gemm_shapes.csv).
  # shellcheck disable=SC2086
  budget python3 benchmarks/gemm.py ${GEMM_ARGS:-} ${GEMM:-} 2>&1 | tee -a "$OUT/gemm.log"
  status=$(( status | PIPESTATUS[0] ))
fi
if [ -n "${MODELS:-}" ]; then
  # shellcheck disable=SC2086
  budget python3 benchmarks/models.py $MODELS 2>&1 | tee -a "$OUT/models.log"
  status=$(( status | PIPESTATUS[0] ))
fi
[ -z "${SIDE_GPU:-}" ] && { dynamic; status=$(( status | $? )); }
if [ -n "${MODEL_SWEEP:-}" ]; then
  left=$(( DEADLINE - (SECONDS - START) - 15 ))
  # shellcheck disable=SC2086
  budget python3 benchmarks/sweep.py --deadline "$left" $MODEL_SWEEP 2>&1 | tee -a "$OUT/sweep.out"
  status=$(( status | PIPESTATUS[0] ))
fi
if [ -n "${OVERHEAD:-}" ]; then
  if [ "${OVERHEAD_ISOLATE:-0}" = 1 ]; then
    # One process per variant: what one backend's runs leave in a process does
    # not reach the next (the seventh session found no consistent effect, but
    # host times moved 10-40 % between orders and machines).
    # OVERHEAD_ORDER (comma-separated) sets the order: a machine that slows
    # during the call (call 5 of the ninth session: Triton's own launch went
    # from 11 to 18 us a launch between the first and the last process) then
    # penalizes no backend's pair alone.
    IFS=, read -r -a variants <<< "${OVERHEAD_ORDER:-eager,inductor,inductor reduce-overhead,coil,coil cudagraphs}"
    for variant in "${variants[@]}"; do
      # shellcheck disable=SC2086
      budget python3 benchmarks/overhead.py --variants "$variant" $OVERHEAD 2>&1 | tee -a "$OUT/overhead.log"
      status=$(( status | PIPESTATUS[0] ))
    done
  else
    # shellcheck disable=SC2086
    budget python3 benchmarks/overhead.py $OVERHEAD 2>&1 | tee -a "$OUT/overhead.log"
    status=$(( status | PIPESTATUS[0] ))
  fi
  # The traces' GPU side as text (few whole traces come back: a file count
  # limit); OVERHEAD_TRACE_KEEP=1 keeps the JSON files too.
  if [ "${OVERHEAD_TRACE:-0}" != 0 ] && ls "$OUT"/trace-*.json >/dev/null 2>&1; then
    python3 benchmarks/trace_summary.py "$OUT"/trace-*.json > "$OUT/trace_summary.txt" 2>&1
    [ "${OVERHEAD_TRACE_KEEP:-0}" = 1 ] || rm -f "$OUT"/trace-*.json
  fi
  # The dumps' wrappers as flat files (what comes back from $OUT is shallow).
  for d in "$OUT"/dump/*/graph_*; do
    [ -f "$d/wrapper.py" ] && cp "$d/wrapper.py" "$OUT/wrapper-$(basename "$(dirname "$d")")-$(basename "$d").py"
  done
fi
if [ -n "${DECODE:-}" ]; then
  names=$DECODE
  [ "$names" = all ] && names=
  left=$(( DEADLINE - (SECONDS - START) - 60 ))
  # shellcheck disable=SC2086
  budget python3 benchmarks/decode.py --budget "$left" ${DECODE_ARGS:-} $names 2>&1 \
    | tee -a "$OUT/decode.log"
  status=$(( status | PIPESTATUS[0] ))
fi
if [ -n "${CMD:-}" ]; then
  budget bash -c "$CMD" 2>&1 | tee -a "$OUT/cmd.log"
  status=$(( status | PIPESTATUS[0] ))
fi
if [ -n "${PROFILE:-}" ]; then
  # shellcheck disable=SC2086
  budget python3 benchmarks/profile_model.py $PROFILE 2>&1 | tee -a "$OUT/profile.log"
  status=$(( status | PIPESTATUS[0] ))
fi
if [ -n "${HOSTPROF:-}" ]; then
  for pair in $HOSTPROF; do
    # NAME:VARIANT, or NAME:VARIANT:V1,V2 to profile VARIANT after V1 and V2 ran
    IFS=: read -r hp_name hp_variant hp_after <<< "$pair"
    budget python3 benchmarks/host_profile.py "$hp_name" "$hp_variant" ${hp_after:+--after "$hp_after"} 2>&1 \
      | tee -a "$OUT/host_profile.log"
    status=$(( status | PIPESTATUS[0] ))
  done
fi
if [ -n "${MEMORY:-}" ]; then
  # shellcheck disable=SC2086
  budget python3 benchmarks/memory_probe.py $MEMORY 2>&1 | tee -a "$OUT/memory.log"
fi
if [ -n "${COMPILE:-}" ]; then
  # shellcheck disable=SC2086
  budget python3 benchmarks/compile_time.py $COMPILE 2>&1 | tee -a "$OUT/compile_time.out"
  status=$(( status | PIPESTATUS[0] ))
fi
if [ "${DIST:-0}" = 1 ] || [ "${DIST:-0}" = tests ]; then
  budget python3 -m pytest test/python/test_distributed.py -m gpu -p no:cacheprovider -q -rs --durations=15 2>&1 \
    | tee "$OUT/pytest-distributed.log"
  status=$(( status | PIPESTATUS[0] ))
fi
if [ "${DIST:-0}" = 1 ] || [ "${DIST:-0}" = bench ]; then
  left=$(( DEADLINE - (SECONDS - START) - 20 ))
  # shellcheck disable=SC2086
  budget python3 benchmarks/distributed.py --budget "$left" --out "$OUT" ${DIST_ARGS:-} 2>&1 \
    | tee "$OUT/distributed.log"
  status=$(( status | PIPESTATUS[0] ))
fi
if [ -n "${BEFORE:-}" ] && [ -f .whl/coil_before.tar ]; then
  rm -rf /tmp/before && mkdir -p /tmp/before && tar -xf .whl/coil_before.tar -C /tmp/before
  python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/site_before \
    /tmp/before || exit 1
  # The benchmark script of this tree, the coil of the earlier commit.
  # shellcheck disable=SC2086
  PYTHONPATH=/tmp/site_before:/tmp/site budget python3 benchmarks/models.py $BEFORE 2>&1 \
    | sed 's/^| /| before: /' | tee -a "$OUT/models-before.log"
fi
for pid in "${side_pids[@]}"; do
  wait "$pid"
  status=$(( status | $? ))
done
echo "== summary =="
[ -f "$OUT/skipped.txt" ] && cat "$OUT/skipped.txt"
[ -f "$OUT/missing.txt" ] && cat "$OUT/missing.txt"
cat "$OUT/device.txt"
[ -f "$OUT/pytest-gpu.log" ] && { grep -h -e '^FAILED' -e '^ERROR' "$OUT/pytest-gpu.log" | head -20; tail -n 1 "$OUT/pytest-gpu.log"; }
[ -f "$OUT/bench.log" ] && tail -n 6 "$OUT/bench.log"
[ -f "$OUT/roofline.md" ] && cat "$OUT/roofline.md"
[ -f "$OUT/tile_sweep.log" ] && sed -n '/^| workload | config/,$p' "$OUT/tile_sweep.log"
[ -f "$OUT/models.log" ] && grep -h '^| ' "$OUT/models.log" | grep -v -- '---'
[ -f "$OUT/sweep.md" ] && sed -n '/^commit /,$p' "$OUT/sweep.md"
ls "$OUT"/dynamic*.md >/dev/null 2>&1 && grep -h '^| ' "$OUT"/dynamic*.md
[ -f "$OUT/shape_sweep.log" ] && grep -h "within 10 %" "$OUT/shape_sweep.log"
[ -f "$OUT/models-before.log" ] && grep -h '^| before' "$OUT/models-before.log"
[ -f "$OUT/pytest-distributed.log" ] && tail -n 1 "$OUT/pytest-distributed.log"
[ -f "$OUT/distributed.md" ] && cat "$OUT/distributed.md"
[ -f "$OUT/overhead.log" ] && grep -h -e '^| ' -e 'per launch' "$OUT/overhead.log" | grep -v -e '---'
[ -f "$OUT/decode.md" ] && cat "$OUT/decode.md"
[ -f "$OUT/profile.log" ] && grep -h '^== ' "$OUT/profile.log"
[ -f "$OUT/host_profile.log" ] && grep -h '^== ' "$OUT/host_profile.log"
[ -f "$OUT/compile_time.md" ] && grep -h '^| ' "$OUT/compile_time.md"
[ -f "$OUT/cmd.log" ] && tail -n 40 "$OUT/cmd.log"
# At most 8 files come back from a lent machine: everything but the caller's
# own log goes into one archive (the summary above has the tables).
( cd "$OUT" && find . -type f ! -name gpu.log ! -name logs.tgz -print0 \
    | tar --null -czf logs.tgz -T - --remove-files ) 2>/dev/null
exit "$status"
