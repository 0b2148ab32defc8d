"""Host and GPU cost of each SDPA kernel for the masks coil's attention rewrite passes.

``python benchmarks/sdpa_backends.py`` (GPU machine): for a few attention shapes
(an encoder's padding mask, a T5-style float position bias, a causal bool mask,
a float mask in the query's dtype), each SDPA backend torch can run for the
operands (cuDNN, memory-efficient, flash, math), forced with
``torch.nn.attention.sdpa_kernel``:

* ``host us``: the wall time per call of a launch loop without a sync (what a
  host-bound graph pays for the call: torch's dispatch, the backend's checks
  and plan lookup, the launch);
* ``gpu us``: ``triton.testing.do_bench`` median (the kernel);
* which backend torch picks by itself (``default``; the forced row whose
  output is bitwise the default's is marked).

Why: coil rewrites attention to SDPA and lets torch pick the kernel. On an H200
host that ran 13-25 us per ``torch.mm`` call, T5's 18 SDPA calls took 70-100 us
of host each, all cuDNN (benchmarks/RESULTS.md, twenty-first session), about
1.3 ms of a 4-6 ms host-bound call, where the kernels took 16 us each. Whether
another backend is as fast on the GPU and cheaper on the host decides whether
the rewrite should choose the backend itself.
"""

from __future__ import annotations

import math
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "flash": SDPBackend.FLASH_ATTENTION,
    "math": SDPBackend.MATH,
}
LOOP = 200


def shapes(device: str, dtype: torch.dtype) -> dict[str, tuple]:
    """name -> (q, k, v, attn_mask, is_causal)."""

    def qkv(b, h, lq, lk, e=64):
        return (
            torch.randn(b, h, lq, e, device=device, dtype=dtype),
            torch.randn(b, h, lk, e, device=device, dtype=dtype),
            torch.randn(b, h, lk, e, device=device, dtype=dtype),
        )

    pad = torch.zeros(8, 1, 1, 512, device=device, dtype=dtype)
    pad[:, :, :, 400:] = torch.finfo(dtype).min
    bias = torch.randn(1, 8, 512, 512, device=device, dtype=dtype)
    causal = torch.ones(512, 512, dtype=torch.bool, device=device).tril()
    return {
        "encoder 8x12x512x64, padding mask [8,1,1,512]": (*qkv(8, 12, 512, 512), pad, False),
        "t5 self 8x8x512x64, position bias [1,8,512,512]": (*qkv(8, 8, 512, 512), bias, False),
        "t5 cross 8x8x128->512, padding mask": (*qkv(8, 8, 128, 512), pad, False),
        "decoder 8x12x512x64, causal bool [512,512]": (*qkv(8, 12, 512, 512), causal, False),
        "decoder 8x12x512x64, is_causal": (*qkv(8, 12, 512, 512), None, True),
        "small 1x12x128x64, padding mask": (*qkv(1, 12, 128, 128), pad[:1, :, :, :128], False),
    }


def host_us(f, loop: int) -> float:
    for _ in range(min(loop, 10)):
        f()
    _sync()
    start = time.perf_counter()
    for _ in range(loop):
        f()
    host = (time.perf_counter() - start) / loop * 1e6
    _sync()
    return host


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def main(argv: list[str]) -> int:
    # --smoke: the CPU, float32, a few calls, no GPU timing (that the script runs).
    smoke = "--smoke" in argv or not torch.cuda.is_available()
    device, dtype = ("cpu", torch.float32) if smoke else ("cuda", torch.bfloat16)
    torch.manual_seed(0)
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    print(f"device: {name}, torch {torch.__version__}, {dtype}")
    print("| shape | backend | host us | gpu us | max err vs math |")
    print("|---|---|---|---|---|")
    for name, (q, k, v, mask, causal) in shapes(device, dtype).items():
        scale = 1 / math.sqrt(q.shape[-1])

        def call(q=q, k=k, v=v, mask=mask, causal=causal, scale=scale):
            return F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, is_causal=causal, scale=scale
            )

        with sdpa_kernel([SDPBackend.MATH]):
            ref = call().float()

        def default(call=call):  # torch's own pick, under the same context manager
            with sdpa_kernel(list(BACKENDS.values())):
                return call()

        rows = [("default", default)]
        for label, backend in BACKENDS.items():

            def forced(backend=backend):
                with sdpa_kernel([backend]):
                    return call()

            rows.append((label, forced))
        picked = default()
        for label, f in rows:
            try:
                out = f()
                err = (out.float() - ref).abs().max().item()
                if label != "default" and torch.equal(out, picked):
                    label += " (= default)"
                host = host_us(f, 2 if smoke else LOOP)
                gpu = float("nan") if smoke else _gpu_us(f)
                print(f"| {name} | {label} | {host:.1f} | {gpu:.1f} | {err:.2e} |", flush=True)
            except RuntimeError as e:
                print(f"| {name} | {label} | - | - | {str(e).splitlines()[0][:60]} |", flush=True)
    return 0


def _gpu_us(f) -> float:
    import triton.testing

    return triton.testing.do_bench(f, return_mode="median") * 1e3


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
