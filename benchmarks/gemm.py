"""GEMM templates (issue 38): eager, Inductor default, Inductor
max-autotune-no-cudagraphs, coil default, coil gemm=triton and coil
mode="max-autotune", bf16 inference, on GPT-2, a Llama-style decoder, ViT and
ResNet-50 (``models.py``'s builders), each compiled in a fresh Dynamo state:
first-call (compile) seconds, median ms, error against the f32 eager output.

    python3 benchmarks/gemm.py [gpt2 llama vit_hf resnet50] [--variants ...]
    python3 benchmarks/gemm.py --smoke      # tiny configs, any device

Writes a table on stdout and ``$OUT/gemm.csv`` where ``OUT`` is set. Each
variant's row is printed as soon as it is measured, so a run cut by the time
budget keeps what it did.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
import models as M

VARIANTS = {
    "eager": lambda m: m,
    "inductor": lambda m: torch.compile(m),
    "inductor_max_autotune": lambda m: torch.compile(m, mode="max-autotune-no-cudagraphs"),
    "coil": lambda m: torch.compile(m, backend="coil"),
    "coil_gemm_triton": lambda m: torch.compile(m, backend="coil", options={"gemm": "triton"}),
    "coil_max_autotune": lambda m: torch.compile(m, backend="coil", mode="max-autotune"),
}
DEFAULT_MODELS = ["gpt2", "llama", "vit_hf", "resnet50"]


def run(name: str, variants: list[str], rows: list[dict]) -> None:
    module, inputs = M.MODELS[name].build()
    module = module.eval().to(M.DEVICE)
    inputs = tuple(x.to(M.DEVICE) for x in inputs)
    with torch.no_grad():
        ref = module(*inputs).float()
        m = module.to(torch.bfloat16)
        args = tuple(x.to(torch.bfloat16) if x.is_floating_point() else x for x in inputs)
        for v in variants:
            torch._dynamo.reset()
            f = VARIANTS[v](m)
            try:
                out, first = M._first_call(lambda: f(*args))
                err = M._rel_err(out, ref)
                ms = M._bench(lambda: f(*args))
            except Exception as e:  # a variant that fails is a row, not the end
                print(f"{name:10s} {v:24s} failed: {type(e).__name__}: {e}", flush=True)
                rows.append({"model": name, "variant": v, "error": str(e)[:200]})
                continue
            row = {"model": name, "variant": v, "ms": ms, "compile_s": first, "rel_err": err}
            rows.append(row)
            print(
                f"{name:10s} {v:24s} {ms:9.3f} ms  compile {first:7.1f} s  err {err:.2e}",
                flush=True,
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=DEFAULT_MODELS)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--smoke", action="store_true", help="tiny configs, any device")
    a = parser.parse_args()
    if a.smoke:
        M.SMOKE, M.DEVICE = True, "cuda" if torch.cuda.is_available() else "cpu"
    elif not torch.cuda.is_available():
        print("gemm: no GPU; this benchmark times CUDA kernels (--smoke runs anywhere)")
        return 1
    torch._dynamo.config.cache_size_limit = 64
    variants = [v for v in a.variants.split(",") if v]
    for v in variants:
        if v not in VARIANTS:
            parser.error(f"unknown variant {v!r} (one of {', '.join(VARIANTS)})")
    rows: list[dict] = []
    t0 = time.perf_counter()
    for name in a.names:
        run(name, variants, rows)
    print(f"total {time.perf_counter() - t0:.0f} s")
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "gemm.csv"), "w", newline="") as fh:
            keys = ["model", "variant", "ms", "compile_s", "rel_err", "error"]
            w = csv.DictWriter(fh, keys)
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
