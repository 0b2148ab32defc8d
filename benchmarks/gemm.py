"""GEMM templates (issue 38): eager, Inductor default, Inductor
max-autotune-no-cudagraphs, coil default, coil gemm=triton and coil
mode="max-autotune", bf16 inference, on GPT-2, a Llama-style decoder, ViT and
ResNet-50 (``models.py``'s builders), each compiled in a fresh Dynamo state:
first-call (compile) seconds, median ms, error against the f32 eager output.

    python3 benchmarks/gemm.py [gpt2 llama vit_hf resnet50] [--variants ...]
    python3 benchmarks/gemm.py --smoke      # tiny configs, any device
    python3 benchmarks/gemm.py --shapes gpt2,llama,vit [--no-inductor] [--configs N]

``--shapes`` first times the products of those models' Linears alone (bf16,
``x @ w.t()`` as a Linear computes it, the token counts of the model rows):
cuBLAS (``torch.mm``; where N is not a multiple of 8, also on the weight
padded to it, ``cublas_padded_ms``, which is what coil's default runs),
coil's template in each candidate config of its shape
class (``strategy/gemm.py``; all candidates compiled in parallel, as
``mode="max-autotune"`` does, the wall time reported as ``coil_compile_s``)
and Inductor's Triton templates alone (``max_autotune`` with
``max_autotune_gemm_backends="TRITON"``: its best config, persistent TMA
included where its heuristics offer it), with TFLOP/s; rows go to
``$OUT/gemm_shapes.csv``. ``--shapes resnet50`` times ResNet-50's 1x1
convolutions the same way (batch 32 at 224, channels-last bf16: cuDNN's
``conv2d``, coil's template over the pixels, Inductor's Triton convolution
templates with ``max_autotune_conv_backends="TRITON"``), the bottlenecks'
reductions, expansions and stride-2 shortcuts. Then the model rows, unless
no model is named: ``gemm=triton`` and ``max-autotune`` rows of resnet50
put its 1x1 convolutions on the template (or measure them against cuDNN).

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


# Linear products (tokens M, in K, out N) of the model rows' configs: GPT-2
# and ViT-B/16 (768 wide; ViT's 32 images x 197 tokens, q/k/v separate) and
# models.py's Llama-style decoder (1024 wide, 4 KV heads of 64, SwiGLU 2816).
SHAPES = {
    "gpt2": [
        (4096, 768, 2304),
        (4096, 768, 768),
        (4096, 768, 3072),
        (4096, 3072, 768),
        (4096, 768, 50257),
    ],
    "llama": [
        (4096, 1024, 1024),
        (4096, 1024, 256),
        (4096, 1024, 2816),
        (4096, 2816, 1024),
        (4096, 1024, 32000),
    ],
    "vit": [(6304, 768, 768), (6304, 768, 3072), (6304, 3072, 768)],
}
# ResNet-50's 1x1 convolutions at batch 32, 224x224 (timm: the stride in the
# 3x3, so each stage's first reduction runs at the previous resolution):
# (batch, H_in, W_in, C_in, C_out, stride).
CONVS = {
    "resnet50": [
        (32, 56, 56, 64, 64, 1),
        (32, 56, 56, 64, 256, 1),
        (32, 56, 56, 256, 64, 1),
        (32, 56, 56, 256, 128, 1),
        (32, 56, 56, 256, 512, 2),
        (32, 28, 28, 128, 512, 1),
        (32, 28, 28, 512, 128, 1),
        (32, 28, 28, 512, 256, 1),
        (32, 28, 28, 512, 1024, 2),
        (32, 14, 14, 256, 1024, 1),
        (32, 14, 14, 1024, 256, 1),
        (32, 14, 14, 1024, 512, 1),
        (32, 14, 14, 1024, 2048, 2),
        (32, 7, 7, 512, 2048, 1),
        (32, 7, 7, 2048, 512, 1),
    ],
}


def _linear_module(m: int, k: int, n: int, device: str = "cuda:0"):
    from coil.ir import parse_module
    from coil.strategy.target import for_device, set_module_target

    def ty(sizes: str, strides: str = "") -> str:
        return f'!aten.tensor<[{sizes}], bf16, {strides}device "{device}">'

    x, w, wt, y = (
        ty(f"{m}, {k}"),
        ty(f"{n}, {k}"),
        ty(f"{k}, {n}", f"strides [1, {k}], "),
        ty(f"{m}, {n}"),
    )
    text = (
        f"func.func @linear(%x: {x}, %w: {w}) -> {y} {{\n"
        f"  %t = aten.permute.default(%w, dims = [1, 0]) : {wt}\n"
        f"  %0 = aten.mm.default(%x, %t) : {y}\n"
        f"  func.return %0 : {y}\n}}\n"
    )
    module = parse_module(text)
    set_module_target(module, for_device(device))
    return module


def _conv_module(b: int, h: int, w: int, cin: int, cout: int, stride: int, device: str):
    """A 1x1 convolution over a channels-last bf16 input, as a graph imports it."""
    from coil.ir import parse_module
    from coil.strategy.target import for_device, set_module_target

    ho, wo = -(-h // stride), -(-w // stride)

    def ty(n: int, c: int, hh: int, ww: int) -> str:
        strides = f"{hh * ww * c}, 1, {ww * c}, {c}"
        return f'!aten.tensor<[{n}, {c}, {hh}, {ww}], bf16, strides [{strides}], device "{device}">'

    x, wt, y = ty(b, cin, h, w), ty(cout, cin, 1, 1), ty(b, cout, ho, wo)
    text = (
        f"func.func @conv(%x: {x}, %w: {wt}) -> {y} {{\n"
        f"  %0 = aten.convolution.default(%x, %w, none, stride = [{stride}, {stride}], "
        "padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], "
        f"groups = 1) : {y}\n"
        f"  func.return %0 : {y}\n}}\n"
    )
    module = parse_module(text)
    set_module_target(module, for_device(device))
    return module


def _bench_ms(fn) -> float:
    if M.DEVICE != "cuda":  # --smoke on the CPU: one timed run
        fn()
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1e3
    import triton.testing

    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def _write_shapes(out: str | None, rows: list[dict]) -> None:
    if out:  # after every row: a run cut by the time budget keeps what it did
        with open(os.path.join(out, "gemm_shapes.csv"), "w", newline="") as fh:
            w = csv.DictWriter(fh, SHAPE_KEYS)
            w.writeheader()
            w.writerows(rows)


def run_shapes(
    names: list[str], inductor: bool, max_configs: int, rows: list[dict], out: str | None
) -> None:
    from coil.backend import lower_product
    from coil.runtime import gemm_autotune as GA
    from coil.strategy import gemm as G
    from coil.strategy.target import for_device

    device = "cuda:0" if M.DEVICE == "cuda" else "cpu"
    target = for_device(device)
    for name in names:
        if name in CONVS:
            todo = [("conv", c) for c in ([(2, 7, 5, 12, 9, 2)] if M.SMOKE else CONVS[name])]
        else:
            smoke = [(64, 32, 48), (16, 32, 45)]  # the second pads N for cuBLAS
            todo = [("mm", c) for c in (smoke if M.SMOKE else SHAPES[name])]
        for kind, spec in todo:
            if kind == "conv":
                b, h, w, cin, cout, stride = spec
                m, k, n = b * -(-h // stride) * -(-w // stride), cin, cout
                label = f"{name} 1x1 {b}x{h}x{w}x{cin}->{cout}/{stride}"
                module = _conv_module(b, h, w, cin, cout, stride, device)
            else:
                m, k, n = spec
                label = f"{name} {m}x{k}x{n}"
                module = _linear_module(m, k, n, device)
            flops = 2.0 * m * n * k
            (p,) = GA.problems(module)
            shape = G.GemmShape(m=m, n=n, k=k)
            configs = [
                c.key()
                for c in G.configs(shape, target)
                if not (kind == "conv" and c.k_split > 1)  # the matmul lowering's
            ][:max_configs]
            p = GA.Problem(p.op, p.name, p.operands, p.device, tuple(configs), 0.0)
            bench = GA.CudaBench(lower_product)
            t0 = time.perf_counter()
            bench.prepare(p)
            compile_s = time.perf_counter() - t0
            times = {}
            for c in configs:
                try:
                    times[c] = bench(p, c)
                except Exception as e:  # a config that fails is a line, not the end
                    print(f"{label:28s} coil {c} failed: {type(e).__name__}: {e}", flush=True)
            x, wt = bench._args.get(id(p)) or GA._operands(p)
            if kind == "conv":

                def extern(a, b, stride=stride):
                    return torch.nn.functional.conv2d(a, b, stride=stride)
            else:

                def extern(a, b):
                    return torch.mm(a, b)

            cublas = _bench_ms(lambda: extern(x, wt))
            row = {
                "shape": label,
                "m": m,
                "k": k,
                "n": n,
                "cublas_ms": cublas,
                "coil_compile_s": compile_s,
            }
            if kind == "mm" and n % 8:
                # What coil's default runs: the weight padded to a multiple of 8
                # columns once (a constant), the product left padded.
                n8 = -(-n // 8) * 8
                wp = torch.zeros(n8, k, dtype=wt.dtype, device=wt.device)
                wp[:n] = wt.t()
                row["cublas_padded_ms"] = _bench_ms(lambda: torch.mm(x, wp.t()))
                wp = None
            if times:
                best = min(times, key=times.__getitem__)
                res = bench._module(p, best).call([x, wt])[0].double()
                ref = extern(x.double(), wt.double())
                row.update(
                    coil_best=best,
                    coil_best_ms=times[best],
                    coil_first=configs[0],
                    coil_first_ms=times.get(configs[0]),
                    coil_err=float((res - ref).norm() / ref.norm()),
                    cublas_err=float((extern(x, wt).double() - ref).norm() / ref.norm()),
                    coil_times=" ".join(f"{c}={t:.4f}" for c, t in times.items()),
                )
                res = ref = None
            bench.release(p)
            if inductor:
                torch._dynamo.reset()
                f = torch.compile(
                    extern,
                    dynamic=False,
                    options={
                        "max_autotune": True,
                        "max_autotune_gemm_backends": "TRITON",
                        "max_autotune_conv_backends": "TRITON",
                        "triton.cudagraphs": False,
                    },
                )
                t0 = time.perf_counter()
                try:
                    f(x, wt)
                    if device != "cpu":
                        torch.cuda.synchronize()
                    row["inductor_compile_s"] = time.perf_counter() - t0
                    row["inductor_triton_ms"] = _bench_ms(lambda: f(x, wt))
                except Exception as e:
                    print(f"{label:28s} inductor failed: {type(e).__name__}: {e}", flush=True)
            rows.append(row)
            _write_shapes(out, rows)

            def tf(ms):
                return f"{flops / (ms * 1e-3) / 1e12:6.0f}" if ms else "     -"

            ind = row.get("inductor_triton_ms")
            padded = row.get("cublas_padded_ms")
            if padded:
                print(
                    f"{label:28s} cuBLAS on N padded to 8: {padded:7.3f} ms {tf(padded)} TF/s",
                    flush=True,
                )
            print(
                f"{label:28s} {'cuDNN ' if kind == 'conv' else 'cuBLAS'} {cublas:7.3f} ms "
                f"{tf(cublas)} TF/s | coil "
                f"{row.get('coil_best_ms', 0):7.3f} ms {tf(row.get('coil_best_ms'))} TF/s "
                f"({row.get('coil_best', '-')}; first {row.get('coil_first_ms') or 0:.3f} ms) "
                f"compile {compile_s:5.1f} s | inductor "
                f"{ind or 0:7.3f} ms {tf(ind)} TF/s "
                f"compile {row.get('inductor_compile_s', 0):5.1f} s"
                f" | coil {_ratio(cublas, row.get('coil_best_ms'))} of "
                f"{'cuDNN' if kind == 'conv' else 'cuBLAS'}"
                f"{', ' + _ratio(ind, row.get('coil_best_ms')) + ' of inductor' if ind else ''}"
                f" | err {row.get('coil_err', float('nan')):.1e}"
                f" ({'cuDNN' if kind == 'conv' else 'cuBLAS'} "
                f"{row.get('cublas_err', float('nan')):.1e})",
                flush=True,
            )
            print(f"{label:28s} coil configs (ms): {row.get('coil_times', '-')}", flush=True)
            x = wt = None
            if device != "cpu":
                torch.cuda.empty_cache()


def _ratio(base: float | None, ms: float | None) -> str:
    """``base / ms`` as ``0.84x`` (how fast ``ms`` runs against ``base``)."""
    return f"{base / ms:.2f}x" if base and ms else "-"


SHAPE_KEYS = [
    "shape",
    "m",
    "k",
    "n",
    "cublas_ms",
    "cublas_padded_ms",
    "coil_best",
    "coil_best_ms",
    "coil_first",
    "coil_first_ms",
    "coil_compile_s",
    "coil_err",
    "cublas_err",
    "inductor_triton_ms",
    "inductor_compile_s",
    "coil_times",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "names", nargs="*", help=f"models (default {' '.join(DEFAULT_MODELS)}; none with --shapes)"
    )
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--smoke", action="store_true", help="tiny configs, any device")
    parser.add_argument(
        "--shapes", default="", help="products alone first: " + ",".join([*SHAPES, *CONVS])
    )
    parser.add_argument("--no-inductor", action="store_true", help="--shapes without Inductor's")
    parser.add_argument("--configs", type=int, default=8, help="coil configs per shape")
    a = parser.parse_args()
    if a.smoke:
        M.SMOKE, M.DEVICE = True, "cuda" if torch.cuda.is_available() else "cpu"
    elif not torch.cuda.is_available():
        print("gemm: no GPU; this benchmark times CUDA kernels (--smoke runs anywhere)")
        return 1
    torch._dynamo.config.cache_size_limit = 64
    if not a.names and not a.shapes:
        a.names = list(DEFAULT_MODELS)
    variants = [v for v in a.variants.split(",") if v]
    for v in variants:
        if v not in VARIANTS:
            parser.error(f"unknown variant {v!r} (one of {', '.join(VARIANTS)})")
    rows: list[dict] = []
    t0 = time.perf_counter()
    out = os.environ.get("OUT")
    if a.shapes:
        shape_rows: list[dict] = []
        names = [n for n in a.shapes.split(",") if n]
        for n in names:
            if n not in SHAPES and n not in CONVS:
                known = ", ".join([*SHAPES, *CONVS])
                parser.error(f"unknown --shapes {n!r} (one of {known})")
        run_shapes(names, not a.no_inductor, a.configs, shape_rows, out)
        print(f"shapes {time.perf_counter() - t0:.0f} s", flush=True)
    for name in a.names:
        run(name, variants, rows)
        if out:  # after every model: a run cut by the time budget keeps what it did
            with open(os.path.join(out, "gemm.csv"), "w", newline="") as fh:
                keys = ["model", "variant", "ms", "compile_s", "rel_err", "error"]
                w = csv.DictWriter(fh, keys)
                w.writeheader()
                w.writerows(rows)
    print(f"total {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
