"""When a wrapper drops its names for host values that are not buffers of their own.

``memory-plan`` frees buffers (``host.free``) and hands dead storage to later
buffers (a reuse is a ``host.reinterpret`` of the dead buffer). A wrapper name
also keeps a storage alive: a view's (``host.reinterpret``) name holds its
root's storage after the root's own name is gone, so a view that is still
named at the end of the call keeps a whole ATen result alive (GPT-2's query
view of each layer's QKV product: eleven 18 MB products alive at the peak of
a call on the H100, benchmarks/memory_probe.py). The ``-t python`` and
``-t cpp`` wrappers drop, after top-level op ``i``:

* the source of a reuse at its last read: the reinterpret, or the kernel
  that writes the reuse in place over it (not an input: those follow the
  inputs' own rule; not a buffer ``memory-plan`` frees itself);
* a view whose last read is op ``i`` (a view never read: right after it is
  made) unless ``memory-plan`` frees it itself (a reuse); one read by a
  collective stays until the collective's wait; a returned one is never
  dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation, SSAValue

from coil.dialects import host as H
from coil.dialects.c10d import collective_waits


def last_reads(ops: Sequence[Operation]) -> dict[SSAValue, int]:
    """Value -> index of the last top-level op that reads it (nested reads count
    for their top-level op; an operand of a collective, for its wait)."""
    last_read: dict[SSAValue, int] = {}
    for i, op in enumerate(ops):
        for inner in op.walk():
            for v in inner.operands:
                last_read[v] = i
    for start, wait in collective_waits(ops).items():
        for v in ops[start].operands:
            last_read[v] = max(last_read[v], wait)
    return last_read


def released_after(
    ops: Sequence[Operation], inputs: Sequence[SSAValue]
) -> dict[int, list[SSAValue]]:
    """Top-level op index -> the values whose names are dropped after it, in
    order, each once."""
    last_read = last_reads(ops)
    returned = {i for i, op in enumerate(ops) if isinstance(op, H.ReturnOp)}
    out: dict[int, list[SSAValue]] = {}
    done: set[SSAValue] = set()

    def drop(i: int, v: SSAValue) -> None:
        if v not in done and i not in returned:
            done.add(v)
            out.setdefault(i, []).append(v)

    inputs = set(inputs)
    # A view memory-plan treats as a buffer of its own (a reuse) has its host.free.
    freed = {op.buffer for op in ops if isinstance(op, H.FreeOp)}
    for i, op in enumerate(ops):
        if not isinstance(op, H.ReinterpretOp):
            continue
        if op.source not in inputs and op.source not in freed:
            drop(last_read.get(op.source, i), op.source)
        if op.result not in freed:
            drop(last_read.get(op.result, i), op.result)
    return {i: out[i] for i in sorted(out)}
