"""Where a model's planned CUDA peak is, on a machine without a GPU.

For each sweep row named (``timm:ghostnet_100``; bf16 inference at the row's
batch, ``benchmarks/sweep.py``'s builder), plan the call for a CUDA device
(``coil.testing.cuda_plan``, the backend's inference pipeline to the buffer
level) and print:

* the planned peak (``coil.peak_bytes`` of the main function) and the buffers
  alive there (what each holds after ``memory-plan``'s reuse);
* the planned bytes alive at each extern call and the workspace
  ``extern_effects.extern_workspace_bytes`` estimates for it (what cuDNN
  allocates inside the call, which ``coil.peak_bytes`` does not count; issue
  33: regnety_016 measured 46 MiB above its plan), largest sum first, and the
  largest sum (``buffer-reorder``'s estimated peak with workspaces).

``--pipeline`` plans with another buffer pipeline (say, without
``buffer-reorder``). timm needs only stand-ins for torchvision and PIL here.

    python benchmarks/plan_report.py timm:ghostnet_100 timm:regnety_016
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))


def _main_function(module):
    from xdsl.dialects import func

    fns = [op for op in module.walk() if isinstance(op, func.FuncOp)]
    return next(f for f in fns if not f.sym_name.data.endswith("_constants"))


def report(name: str, pipeline: str | None = None, top: int = 8) -> str:
    """The report of sweep row ``name`` (bf16 inference, the row's batch)."""
    from sweep import ENTRIES, build

    torch.manual_seed(0)
    model, inputs = build(ENTRIES[name])
    model = model.to(torch.bfloat16).eval()
    inputs = tuple(x.to(torch.bfloat16) if x.is_floating_point() else x for x in inputs)
    return report_module(name, model, inputs, pipeline, top)


def report_module(
    name: str, model: torch.nn.Module, inputs: tuple, pipeline: str | None = None, top: int = 8
) -> str:
    """The report of ``model(*inputs)`` planned for a CUDA device."""
    from coil.dialects import buffer as B
    from coil.testing import cuda_plan
    from coil.transforms.extern_effects import extern_results_alias, extern_workspace_bytes

    fn = _main_function(cuda_plan(model, inputs, pipeline=pipeline))
    mib = 2**20
    live: dict = {}
    root: dict = {}
    holds: dict = {}
    best: tuple[int, int, dict] = (0, -1, {})
    at_calls: list[tuple[int, int, int, str]] = []
    for k, op in enumerate(fn.body.block.ops):
        if isinstance(op, B.AllocOp):
            live[op.result] = int(op.result.type.storage_bytes())
        elif isinstance(op, B.ExternOp):
            if not extern_results_alias(op):
                for r in op.res:
                    if isinstance(r.type, B.BufferType):
                        live[r] = int(r.type.storage_bytes())
            args = ", ".join(str(list(v.type.shape)) for v in op.operands[:1])
            out = ", ".join(str(list(r.type.shape)) for r in op.res[:1]) or "(out=)"
            alive, ws = sum(live.values()), extern_workspace_bytes(op)
            at_calls.append((alive + ws, alive, k, f"{op.kernel_name}({args}) -> {out}"))
        elif isinstance(op, B.ReuseOp):
            root[op.result] = root.get(op.source, op.source)
            holds[root[op.result]] = op.result.name_hint
            continue
        elif isinstance(op, B.DeallocOp):
            live.pop(root.get(op.buffer, op.buffer), None)
            continue
        else:
            continue
        total = sum(live.values())
        if total > best[0]:
            best = (total, k, dict(live))
    planned = int(fn.attributes["coil.peak_bytes"].data)
    lines = [f"== {name}: planned peak {planned / mib:.2f} MiB (op {best[1]}), alive there:"]
    for v, n in sorted(best[2].items(), key=lambda kv: -kv[1]):
        now = holds.get(v)
        held = f" (now {now})" if now and now != v.name_hint else ""
        lines.append(f"  {n / mib:8.2f} MiB  {v.name_hint}{held} {list(v.type.shape)}")
    with_ws = max([planned, *(n for n, *_ in at_calls)])
    lines.append(f"  estimated peak with workspaces {with_ws / mib:.2f} MiB")
    lines.append("  planned bytes alive at extern calls + estimated workspace:")
    for n, alive, k, what in sorted(at_calls, reverse=True)[:top]:
        ws = f" + {(n - alive) / mib:.2f}" if n > alive else ""
        lines.append(f"  {alive / mib:8.2f}{ws} MiB  op {k}: {what}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", nargs="+", help="sweep rows (timm:ghostnet_100)")
    parser.add_argument("--pipeline", help="the buffer-level pipeline (default: the backend's)")
    parser.add_argument("--top", type=int, default=8, help="extern calls listed")
    args = parser.parse_args()
    for row in args.rows:
        print(report(row, args.pipeline, args.top), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
