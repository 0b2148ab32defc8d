"""L2 eviction hints for a kernel's loads (Triton's ``eviction_policy``).

The rules are Inductor's (``TritonKernel.load`` in codegen/triton.py):

- a load that covers only part of the kernel's iteration space (a bias over
  the last dimension of a pointwise nest, a per-row scalar in a reduction: the
  same element is read by many lanes or programs) or one that is contiguous
  along no index (a strided gather: its sectors are read again by neighbours)
  is ``evict_last``: keep it in L2;
- a contiguous load in the body of a looped reduction is ``evict_first`` when
  it is the kernel's last read of that buffer (the row streams through once
  and should not push out what the next kernel reads, such as the output the
  previous kernel just wrote) and ``evict_last`` when a later phase reads the
  buffer again (a looped layer norm reads its row twice);
- anything else keeps the default.

coil also streams the reads of a persistent reduction whose outputs are one
value per row (a sum, max or variance over dim 1; not a softmax or a norm,
which write rows as large as they read), where Inductor's kernel loops: on an
H100 (``benchmarks/tile_sweep.py``, do_bench with its L2 flush),
``x.sum(1)`` of a bf16 32768x2048 tensor took 0.0556 ms without the hint and
0.0505 with it (Inductor 0.0501), ``amax(1)`` 0.0564 and 0.0506 (Inductor
0.0573). Pointwise kernels and softmax rows gained nothing from it (0.2320
and 0.2332 ms for the bf16 pointwise chain, 0.3592 and 0.3629 for the f32
row softmax).

``eviction=stream`` (convert-loop-to-tt's option) hints the last read of a
buffer ``evict_first`` in every kernel; ``eviction=off`` emits no hints.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import sympy
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import SSAValue

from coil.dialects import tt
from coil.dialects.symbolic import is_index_symbol
from coil.intmath import prod

MODES = ("auto", "stream", "off")


def reused(offset: sympy.Expr, groups: Sequence[tuple[sympy.Symbol, tuple, tuple]]) -> bool:
    """Whether a load at ``offset`` (in the kernel's loop index symbols) is read
    by many lanes or programs: it misses part of some flattened index group's
    extent (a broadcast), or it has stride 1 along none of the indices."""
    expanded = sympy.expand(offset)
    used = expanded.free_symbols
    seen = set()
    for flat, syms, sizes in groups:
        if flat in seen:  # a looped reduction binds its r group once per phase
            continue
        seen.add(flat)
        covered = prod(size for s, size in zip(syms, sizes) if s in used)
        if covered != prod(sizes):  # products of the same sizes compare equal
            return True
    return not any(is_index_symbol(s) and expanded.coeff(s) == 1 for s in used)


@dataclass
class LoadRecord:
    op: tt.LoadOp
    buffer: SSAValue
    candidate: bool  # contiguous and not reused: evict_first if the buffer's last read


@dataclass
class EvictionPlan:
    """Collects a kernel's loads as they are emitted; ``finish`` sets the hints."""

    mode: str = "auto"
    streaming: bool = False
    """Set while the reads that stream through once are emitted: a looped
    reduction's body, a persistent reduction with per-row outputs only."""
    records: list[LoadRecord] = field(default_factory=list)

    def policy(self, offset: sympy.Expr, groups, indirect: bool) -> str | None:
        """``evict_last`` now, or None (decided by ``finish``, or no hint)."""
        if self.mode == "off" or indirect:
            return None
        return "evict_last" if reused(offset, groups) else None

    def record(self, op: tt.LoadOp, buffer: SSAValue, hinted: bool) -> None:
        stream = self.streaming or self.mode == "stream"
        self.records.append(LoadRecord(op, buffer, stream and not hinted and self.mode != "off"))

    def finish(self) -> None:
        for k, rec in enumerate(self.records):
            if not rec.candidate:
                continue
            again = any(later.buffer is rec.buffer for later in self.records[k + 1 :])
            rec.op.evict = StringAttr("evict_last" if again else "evict_first")
