"""The static cost of loop nests: bytes a kernel reads and writes, its loads and
arithmetic, and its size. Shared by the fusion passes (``loop-inline`` weighs
recomputation against a store, ``loop-fuse`` and ``loop-inline`` cap kernel
size) and by the report (``loop-cost-report``, the ``# cost:`` line of every
emitted kernel, ``costs.txt`` in the dump), so a kernel that reads far more than
its inputs and outputs is visible in review.

Bytes are sympy expressions over the size symbols. Each distinct tensor a nest
loads counts once, at most as many elements as the nest has iterations (a
broadcast operand is read once; a gather reads one row per iteration, not the
whole table): the DRAM traffic of a kernel whose repeated reads hit the cache.
Where sizes must be compared (a fusion decision), a symbol counts as its
example size (``strategy/hints.py``), or :data:`SIZE_HINT` without one.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass

import sympy
from xdsl.context import Context
from xdsl.dialects import arith, builtin
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass

from coil.dialects import loop as L
from coil.dialects.symbolic import format_expr
from coil.intmath import prod as numel
from coil.strategy import hints
from coil.transforms.loop_utils import function_blocks

SIZE_HINT = 1024
"""The value a size symbol without a hint takes when costs are compared (a graph
from Dynamo carries its example sizes, ``strategy/hints.py``; IR written by hand
does not)."""

FREE_OPS = (L.LoadOp, L.YieldOp, L.IndexOp, arith.ConstantOp)
"""Body ops that cost no arithmetic (loads are counted as bytes instead)."""


def element_bytes(t: Attribute) -> int:
    """Bytes per element of a scalar element type (``i1`` is stored as a byte)."""
    if isinstance(t, builtin.ComplexType):
        return 2 * element_bytes(t.element_type)
    width = getattr(t, "bitwidth", None)
    if not isinstance(width, int):
        return 8  # index: a 64-bit word
    return max(1, (width + 7) // 8)


def estimate(expr: sympy.Expr | int) -> int:
    """``expr`` at the size hints in force (``strategy/hints.py``: the example
    sizes), :data:`SIZE_HINT` for a symbol without one."""
    return hints.value(expr, SIZE_HINT)


def tensor_bytes(t: Attribute) -> sympy.Expr:
    return numel(t.shape_attr.data) * element_bytes(t.element_type)


def _smaller(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    if a.is_number and b.is_number:
        return sympy.Min(a, b)
    return a if estimate(a) <= estimate(b) else b


def domain(nest: L.LoopOp) -> sympy.Expr:
    """Iterations of a nest: its ranges, times its reduction ranges if any."""
    n = numel(nest.ranges.data)
    if isinstance(nest, L.ReductionOp | L.FusedOp):
        n *= numel(nest.reduction_ranges.data)
    return n


def compute_ops(root: Operation | Block) -> int:
    """Arithmetic ops under ``root`` (what recomputing it repeats)."""
    ops = root.walk() if isinstance(root, Operation) else (o for op in root.ops for o in op.walk())
    return sum(1 for op in ops if not isinstance(op, FREE_OPS + (L.LoopOp,)))


def body_size(root: Operation | Block) -> int:
    """All ops under ``root``: what a Triton compile of it grows with."""
    if isinstance(root, Block):
        return sum(1 for op in root.ops for _ in op.walk())
    return sum(1 for _ in root.walk()) - 1


def loads_of(root: Operation | Block) -> list[L.LoadOp]:
    ops = root.walk() if isinstance(root, Operation) else (o for op in root.ops for o in op.walk())
    return [op for op in ops if isinstance(op, L.LoadOp)]


def external_sources(root: Operation | Block) -> list[SSAValue]:
    """The distinct tensors loaded under ``root`` that are defined outside it
    (members of a group read each other in registers, not memory)."""
    inside: set[SSAValue] = set()
    if isinstance(root, Operation):
        for op in root.walk():
            inside.update(op.results)
    else:
        for top in root.ops:
            for op in top.walk():
                inside.update(op.results)
    seen: dict[SSAValue, None] = {}
    for load in loads_of(root):
        if load.source not in inside:
            seen.setdefault(load.source)
    return list(seen)


def read_bytes(sources: Iterable[SSAValue], iterations: sympy.Expr) -> sympy.Expr:
    """Bytes read from ``sources``, each at most once per iteration."""
    total = sympy.Integer(0)
    for v in sources:
        per = element_bytes(v.type.element_type)
        total += _smaller(numel(v.type.shape_attr.data), iterations) * per
    return total


@dataclass(frozen=True)
class NestCost:
    """What one top-level nest (one kernel) costs."""

    bytes_read: sympy.Expr
    bytes_written: sympy.Expr
    loads: int
    ops: int
    size: int

    def summary(self) -> str:
        return (
            f"reads {format_bytes(self.bytes_read)}, writes {format_bytes(self.bytes_written)}, "
            f"{self.loads} loads, {self.ops} ops, {self.size} body ops"
        )


def nest_cost(nest: L.LoopOp) -> NestCost:
    """The cost of a top-level nest, at the tensor or the buffer level."""
    written = sum((tensor_bytes(t.type) for t in nest.targets), sympy.Integer(0))
    return NestCost(
        bytes_read=read_bytes(external_sources(nest), domain(nest)),
        bytes_written=sympy.sympify(written),
        loads=len(loads_of(nest)),
        ops=compute_ops(nest),
        size=body_size(nest),
    )


def format_bytes(expr: sympy.Expr) -> str:
    e = sympy.sympify(expr)
    if not e.is_number:
        return f"{format_expr(e)} B"
    n = int(e)
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _nest_name(nest: L.LoopOp) -> str:
    values = list(nest.targets)
    if isinstance(nest, L.FusedOp):
        values = [v for m in nest.members() for v in m.results] or values
    hints = [v.name_hint for v in values if v.name_hint]
    return ",".join(dict.fromkeys(hints)) or nest.name


def cost_table(module: builtin.ModuleOp) -> str:
    """One line per top-level nest of every function: name, ranges and cost."""
    lines = []
    for block in function_blocks(module):
        fn = block.parent_op()
        lines.append(f"@{fn.sym_name.data}:")  # type: ignore[union-attr]
        for op in block.ops:
            if isinstance(op, L.LoopOp):
                ranges = ", ".join(format_expr(e) for e in op.ranges.data)
                lines.append(f"  {op.name} [{ranges}] {_nest_name(op)}: {nest_cost(op).summary()}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class LoopCostReportPass(ModulePass):
    """Print the static cost of every top-level loop nest (one kernel each after
    bufferize): bytes read (each distinct tensor once, at most once per
    iteration), bytes written, loads, arithmetic ops and body size. The IR is
    unchanged; the table goes to stderr, as MLIR's analysis-printing passes do.
    """

    name = "loop-cost-report"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        sys.stderr.write(cost_table(op))
        sys.stderr.flush()
