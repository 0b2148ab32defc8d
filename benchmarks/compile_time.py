"""Compile time: the first call of a model, cold and warm, for coil and TorchInductor.

For each model (HF GPT-2, BERT-base, a Llama-style config, timm ResNet-50;
bf16 inference, built from configs with random weights as in
``benchmarks/models.py``) and each backend, two fresh processes:

* cold -- empty cache directories: ``COIL_CACHE_DIR`` (coil's code and graph
  caches) or ``TORCHINDUCTOR_CACHE_DIR`` (Inductor's FX graph and AOTAutograd
  caches), and ``TRITON_CACHE_DIR`` (compiled kernels) for both;
* warm -- a new process with the same directories, i.e. a restart.

Each process builds the model, runs eager once (the reference), then times
the first compiled call (dynamo, AOTAutograd, the backend and kernel
compilation, synchronized) and checks the output against eager. coil's
processes count their cache outcomes (AOTAutograd cache and graph cache), so a
warm row shows what hit. Each process's result line in the log also has the
backend's share of the first call (``backend_s``: AOTAutograd and the
compiler, timed around the backend Dynamo calls) and the second call's time;
``COMPILE_PROFILE=1`` adds a cProfile of the first call to the log.

Run: ``python benchmarks/compile_time.py [names...]`` (default: all) on a GPU
machine; ``--smoke`` runs tiny configs on any device (the CPU runs coil's
kernels in Triton's interpreter and Inductor's C++ backend) to check the
script. The table is printed last and written to ``$OUT/compile_time.md`` when
OUT is set; every process's stderr (with ``COIL_LOG=timing`` for coil: the
seconds of each stage) goes to ``$OUT/compile_time.log``. Exit code 1 if a
run failed or computed a wrong result.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODELS = ("gpt2", "bert", "llama", "resnet50")
BACKENDS = ("coil", "inductor")


# --------------------------------------------------------------------------
# One measurement (a child process)
# --------------------------------------------------------------------------


def _build(name: str, smoke: bool):
    """The model (eval, f32, cpu) and its inputs, as models.py builds them."""
    import torch

    sys.path.insert(0, str(HERE))
    import models

    models.SMOKE = smoke
    if name == "resnet50":
        import timm

        size = (1, 3, 64, 64) if smoke else (32, 3, 224, 224)
        return timm.create_model("resnet50", pretrained=False), (torch.randn(size),)
    return models.MODELS[name].build()


def child(backend: str, name: str, smoke: bool) -> dict:
    import logging

    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    hits: list[str] = []
    if backend == "coil":
        # Count the graph cache's outcomes (one INFO record per graph).
        class Count(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                message = record.getMessage()
                for cache, tag in (("AOTAutograd cache", "AOT "), ("graph cache", "")):
                    if message.startswith(f"coil: {cache} "):
                        outcome = message.split(f"{cache} ", 1)[1].split(" ", 1)[0]
                        hits.append(tag + outcome)

        logging.getLogger("coil").addHandler(Count())
        logging.getLogger("coil").setLevel(logging.INFO)
    torch.manual_seed(0)
    module, inputs = _build(name, smoke)
    module = module.eval().to(device=device, dtype=torch.bfloat16)
    args = tuple(
        x.to(device=device, dtype=torch.bfloat16) if x.is_floating_point() else x.to(device)
        for x in inputs
    )
    # The backend's share of the first call (AOTAutograd and the compiler, or a
    # cache hit), timed around the backend Dynamo calls; the rest is Dynamo's
    # tracing and guards, and the call itself.
    compile_backend = torch._dynamo.lookup_backend(backend)
    in_backend: list[float] = []

    def timed_backend(gm, example_inputs):
        start = time.perf_counter()
        try:
            return compile_backend(gm, example_inputs)
        finally:
            in_backend.append(time.perf_counter() - start)

    profile = None
    if os.environ.get("COMPILE_PROFILE"):
        import cProfile

        profile = cProfile.Profile()
    with torch.no_grad():
        ref = module(*args)
        compiled = torch.compile(module, backend=timed_backend)
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        if profile is not None:
            profile.enable()
        out = compiled(*args)
        if device == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        if profile is not None:
            profile.disable()
        start = time.perf_counter()
        compiled(*args)
        if device == "cuda":
            torch.cuda.synchronize()
        second = time.perf_counter() - start
    if profile is not None:  # COMPILE_PROFILE=1: where the first call went, to the log
        import pstats

        pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(45)
    ref, out = ref.double(), out.double()
    err = float((out - ref).norm() / ref.norm().clamp_min(1e-30))
    return {
        "seconds": seconds,
        "backend_s": round(sum(in_backend), 3),
        "second_call_s": round(second, 4),
        "err": err,
        "cache": hits,
        "device": device,
    }


# --------------------------------------------------------------------------
# The driver
# --------------------------------------------------------------------------


def _run(backend: str, name: str, phase: str, dirs: Path, args, log) -> dict:
    env = dict(os.environ)
    env["TRITON_CACHE_DIR"] = str(dirs / "triton")
    if backend == "coil":
        env["COIL_CACHE_DIR"] = str(dirs / "coil")
        env["COIL_LOG"] = "timing"
        env.pop("COIL_DISABLE_CACHE", None)
    else:
        env["TORCHINDUCTOR_CACHE_DIR"] = str(dirs / "inductor")
    command = [sys.executable, __file__, "--child", backend, name] + (
        ["--smoke"] if args.smoke else []
    )
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=args.timeout
        )
    except subprocess.TimeoutExpired as e:
        log.write(f"==== {name} {backend} {phase}: timeout after {args.timeout} s\n")
        log.write((e.stderr or b"").decode(errors="replace") if e.stderr else "")
        return {"error": f"timeout ({args.timeout} s)"}
    wall = time.perf_counter() - started
    log.write(f"==== {name} {backend} {phase}: exit {proc.returncode}, process {wall:.1f} s\n")
    log.write(proc.stderr)
    log.flush()
    result = None
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT ") :])
    if proc.returncode != 0 or result is None:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": last[:160]}
    result["process_s"] = wall
    return result


def _cell(r: dict, tolerance: float) -> str:
    if "error" in r:
        return f"ERROR: {r['error']}"
    wrong = "WRONG " if not r["err"] <= tolerance else ""
    cache = ""
    if r.get("cache"):
        counts = {k: r["cache"].count(k) for k in dict.fromkeys(r["cache"])}
        cache = " (" + ", ".join(f"{n} {k}" for k, n in counts.items()) + ")"
    return f"{wrong}{r['seconds']:.1f}{cache}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"models (default all): {', '.join(MODELS)}")
    parser.add_argument("--smoke", action="store_true", help="tiny configs, any device")
    parser.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds per process")
    parser.add_argument("--child", nargs=2, metavar=("BACKEND", "MODEL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("RESULT " + json.dumps(child(*args.child, args.smoke)), flush=True)
        return 0

    import torch

    if not args.smoke and not torch.cuda.is_available():
        print("compile_time: no GPU; this benchmark times GPU compiles (--smoke runs anywhere)")
        return 1
    names = args.names or list(MODELS)
    backends = [b for b in args.backends.split(",") if b]
    # bf16 against bf16 eager: both compilers differ by about 1e-2 relative; a
    # module computing with stale or wrong weights is off by about 1.
    tolerance = 0.1
    out_dir = Path(os.environ["OUT"]) if os.environ.get("OUT") else None
    log_path = (out_dir or Path(tempfile.gettempdir())) / "compile_time.log"
    rows = []
    failed = False
    with open(log_path, "a") as log:
        for name in names:
            row = {}
            if name == "resnet50" and importlib.util.find_spec("timm") is None:
                print("compile_time: resnet50 skipped: timm is not installed", flush=True)
                rows.append((name, None))
                continue
            for backend in backends:
                with tempfile.TemporaryDirectory(prefix=f"compile-{backend}-") as tmp:
                    for phase in ("cold", "warm"):
                        r = _run(backend, name, phase, Path(tmp), args, log)
                        row[(backend, phase)] = r
                        print(f"compile_time: {name} {backend} {phase}: {r}", flush=True)
                        failed |= "error" in r or not r.get("err", 1) <= tolerance
            rows.append((name, row))
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    import triton

    header = "| model | " + " | ".join(f"{b} cold s | {b} warm s" for b in backends) + " |"
    lines = [
        f"device: {device}, torch {torch.__version__}, triton {triton.__version__}"
        + (" (smoke: tiny configs)" if args.smoke else ""),
        "",
        "First call (compile included), each in a new process: cold with empty cache "
        "directories, warm with the cold run's; coil's cells count its cache "
        f"outcomes (AOTAutograd cache, graph cache). Logs: {log_path}.",
        "",
        header,
        "|---|" + "---|" * (2 * len(backends)),
    ]
    for name, row in rows:
        if row is None:
            lines.append(
                f"| {name} | skipped: timm is not installed |" + " |" * (2 * len(backends) - 1)
            )
            continue
        cells = [_cell(row[(b, p)], tolerance) for b in backends for p in ("cold", "warm")]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    print(table)
    if out_dir is not None:
        with open(out_dir / "compile_time.md", "a") as f:
            f.write(table + "\n\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
