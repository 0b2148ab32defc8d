"""Which 0-d inputs a host wrapper moves to their device at entry (both targets).

A 0-d tensor traced on CUDA may arrive as a CPU tensor: torch mixes those
freely, and some kernels return one where their fake version says CUDA (the
philox seed and offset that cuDNN, flash and memory-efficient attention save
for their backward). ``check_input`` accepts it. A Triton kernel that reads it
needs it in device memory, so the wrapper moves it; an ATen call takes it
where it is, and must: the memory-efficient attention backward reads its
philox seed and offset through host pointers outside CUDA-graph capture, so a
seed moved to the GPU made it dereference device memory (a segfault of every
f32 training step with attention dropout, GPT-2 and BERT on an H200).
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from coil.dialects import host as H
from coil.dialects import tt
from coil.dialects.buffer import BufferType


def moved_to_device(arg: SSAValue) -> bool:
    """Whether the wrapper moves input ``arg`` to its device: a 0-d buffer typed
    on a device that something other than an ATen call reads (a kernel, a view,
    the return)."""
    t = arg.type
    if not isinstance(t, BufferType) or t.shape_attr.data or t.device_attr.data == "cpu":
        return False
    return any(not isinstance(use.operation, H.ExternOp) for use in arg.uses)


def kernel_writes(kernel: tt.FuncOp, k: int) -> bool:
    """Whether Triton kernel ``kernel`` may write through its pointer parameter
    ``k``: a store or atomic whose pointer derives from it (through address
    arithmetic, splats, broadcasts; a load's result is a value, not the pointer).
    A CPU 0-d input a kernel only reads can be handed to it from a per-value
    device copy (``runtime/wrapper.device_scalar``) instead of a new copy per
    launch."""
    derived = {kernel.body.block.args[k]}
    for op in kernel.walk():
        if isinstance(op, tt.LoadOp):
            continue
        if any(o in derived for o in op.operands):
            if isinstance(op, tt.StoreOp | tt.AtomicRMWOp) and op.ptr in derived:
                return True
            derived.update(op.results)
    return False
