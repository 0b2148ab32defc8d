"""Where a compiled model's time goes: torch.profiler over a few calls.

For each model of ``benchmarks/models.py`` named and each of eager, Inductor
and coil: wall ms per call, GPU kernel ms per call (sum of kernel
durations), kernel launches per call, and the kernels that take the most GPU
time (bf16 inference; for a training model of models.py, one step as
models.py times it: forward and loss under bf16 autocast for ``<model>_train``,
in f32 for ``<model>_train_f32``, then backward; dropout as configured). Run on the GPU machine:
``python benchmarks/profile_model.py gpt2 bert``; the report goes to stdout
and ``$OUT/profile-<model>.txt``.
"""

from __future__ import annotations

import os
import sys
import time
from collections import defaultdict

import torch

sys.path.insert(0, os.path.dirname(__file__))
from models import MODELS

CALLS = 5


def cuda_bf16(name: str) -> tuple[torch.nn.Module, tuple]:
    """Model ``name`` of models.py and its inputs, on the GPU, bf16 inference."""
    module, inputs = MODELS[name].build()
    module = module.to("cuda").eval().to(torch.bfloat16)
    args = tuple((x.to(torch.bfloat16) if x.is_floating_point() else x).to("cuda") for x in inputs)
    return module, args


def model_call(name: str, backend: str, options: dict | None = None):
    """One call of model ``name`` of models.py under ``backend`` ("eager": the
    module itself): bf16 inference, or for a training model one step
    (forward and loss, under bf16 autocast for an amp row; backward) as
    ``run_train`` times it. ``options`` go to
    ``torch.compile``."""
    torch._dynamo.reset()

    def compiled(module):
        return (
            module
            if backend == "eager"
            else torch.compile(module, backend=backend, options=options)
        )

    if not MODELS[name].train:
        module, args = cuda_bf16(name)
        f = compiled(module)

        def infer():
            with torch.no_grad():
                return f(*args)

        return infer
    if MODELS[name].optimizer:
        raise SystemExit(f"profile_model: {name} is an optimizer row; models.py times it")
    module, inputs = MODELS[name].build()
    module = module.to("cuda").train()
    args = tuple(x.to("cuda") for x in inputs)
    params = [p for p in module.parameters() if p.requires_grad]
    f = compiled(module)
    amp = MODELS[name].amp

    def step():
        for p in params:
            p.grad = None
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            loss = f(*args)
        loss.backward()
        return loss

    return step


def profile(name: str, backend: str) -> str:
    call = model_call(name, backend)
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(CALLS):
        call()
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t) / CALLS * 1e3
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(CALLS):
            call()
        torch.cuda.synchronize()
    per_kernel: dict[str, list[float]] = defaultdict(list)
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            per_kernel[e.name].append(e.device_time_total / 1e3)
    total = sum(sum(v) for v in per_kernel.values()) / CALLS
    launches = sum(len(v) for v in per_kernel.values()) / CALLS
    lines = [
        f"== {name} / {backend}: wall {wall:.3f} ms per call (no profiler), GPU kernels "
        f"{total:.3f} ms, {launches:.0f} launches per call",
    ]
    ranked = sorted(per_kernel.items(), key=lambda kv: -sum(kv[1]))
    rows = [f"  {sum(t) / CALLS:8.3f} ms {len(t) / CALLS:5.0f}x  {k[:110]}" for k, t in ranked]
    if os.environ.get("OUT"):  # every kernel, for comparing launch counts
        path = os.path.join(os.environ["OUT"], f"kernels-{name}-{backend}.txt")
        with open(path, "w") as fh:
            fh.write("\n".join([lines[0], *rows]) + "\n")
    return "\n".join(lines + rows[:15])


def main() -> int:
    names = sys.argv[1:] or ["gpt2"]
    for name in names:
        report = "\n".join(profile(name, b) for b in ("eager", "inductor", "coil"))
        print(report, flush=True)
        if os.environ.get("OUT"):
            with open(os.path.join(os.environ["OUT"], f"profile-{name}.txt"), "w") as fh:
                fh.write(report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
