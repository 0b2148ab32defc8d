"""convert-loop-to-cpp: each bufferized loop nest on the CPU becomes a C++ kernel.

Input: ``func.func``s at the buffer level (after ``bufferize``/``memory-plan``),
as ``convert-loop-to-tt`` takes them; it runs right before that pass, so the
kernels are the same fused nests the GPU path gets. Output: for each top-level
``loop.pointwise``/``loop.reduction``/``loop.fused``/``loop.scan``/``loop.scatter``
with ``outs`` (and each ``loop.copy``, as the pointwise nest it is) whose
buffers are all on the CPU,
one ``cpu.func @coil_cpp_<hints>_<n>`` before its function, holding the nest
moved in unchanged (its buffers become the function's arguments, the size
symbols it names ``index`` arguments with ``coil.symbol``), and in the nest's
place ``host.launch @coil_cpp_... grid [1, 1, 1] (buffers) scalars [sizes]``.
Kernels with identical bodies are emitted once, as ``convert-loop-to-tt`` does.

A nest that draws random numbers gets the function's seed as an ``i64``
argument (``{coil.seed}``), as a Triton kernel does. A nest the C++ printer
(``loop_to_cpp/source.py``) cannot write -- a member read at another point,
a value from outside the nest that is neither a buffer nor the seed -- is
left in place for ``convert-loop-to-tt`` (Triton's interpreter runs it) and named once on
stderr as a warning. ``-t cpp-kernels`` prints the kernels.
"""

from __future__ import annotations

import io
import re
import warnings
from dataclasses import dataclass

import sympy
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IndexType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.rewriter import InsertPoint, Rewriter

from coil.dialects import cpu, host
from coil.dialects import loop as L
from coil.dialects.buffer import BufferType
from coil.dialects.symbolic import ExprAttr, is_index_symbol
from coil.lowering.convert_loop_to_tt import _copy_as_pointwise, dedupe_kernels
from coil.lowering.loop_to_cpp.source import VECTOR_BYTES
from coil.lowering.loop_to_tt.kernel import kernel_name
from coil.transforms.input_level import require_below_aten
from coil.transforms.loop_cost import nest_cost

_NESTS = (L.PointwiseOp, L.ReductionOp, L.FusedOp, L.ScanOp, L.ScatterOp)


def _symbols(nest: Operation, buffers: list[SSAValue]) -> set[sympy.Symbol]:
    """The size symbols ``nest`` names: in ranges, index expressions, layouts."""
    found: set[sympy.Symbol] = set()

    def add(exprs) -> None:
        for e in exprs:
            found.update(s for s in sympy.sympify(e).free_symbols if not is_index_symbol(s))

    for op in nest.walk():
        for name in ("ranges", "reduction_ranges", "index", "expr"):
            attr = op.properties.get(name)
            if attr is not None and hasattr(attr, "data") and isinstance(attr.data, tuple):
                try:
                    add(attr.data)
                except (TypeError, sympy.SympifyError):
                    pass
    for b in buffers:
        t = b.type
        add(t.shape_attr.data)
        add(t.strides_attr.data)
    return found


def _external(nest: Operation) -> list[SSAValue]:
    """Values the nest uses that are defined outside it, in order of first use."""
    inside: set[SSAValue] = set()
    for op in nest.walk():
        inside.update(op.results)
        for region in op.regions:
            for block in region.blocks:
                inside.update(block.args)
    seen: dict[SSAValue, None] = {}
    for op in nest.walk():
        for v in op.operands:
            if v not in inside:
                seen.setdefault(v)
    return list(seen)


@dataclass(frozen=True)
class ConvertLoopToCppPass(ModulePass):
    """Lower every top-level bufferized nest over CPU buffers to a ``cpu.func`` +
    ``host.launch``; nests the C++ printer cannot write stay for convert-loop-to-tt.

    ``dedupe`` (default true) emits kernels with identical bodies once.
    """

    name = "convert-loop-to-cpp"

    dedupe: bool = True
    """Emit kernels with identical bodies once (launched from each place)."""

    combine: bool = True
    """Run each sequence of kernels with only allocations, views, reuses and
    frees between them as one C++ function (one call from the wrapper)."""

    max_args: int = 256
    """The most buffer and size arguments a combined function takes."""

    vector_bytes: int = 32
    """Bytes of a row reduction's vector accumulators in the printed C++ (32:
    AVX2 registers; 64 where the kernels compile for 512-bit vectors, which the
    backend sets from torch's CPU capability): each ``cpu.func`` carries it as
    ``coil.vector_bytes`` (``loop_to_cpp/source.py``, ``VECTOR_BYTES``)."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        require_below_aten(op, "convert-loop-to-cpp")
        counter = 0
        for f in list(op.body.block.ops):
            if not isinstance(f, func.FuncOp) or not f.body.blocks:
                continue
            for nest in list(f.body.block.ops):
                if isinstance(nest, L.CopyOp):
                    if self._lower_copy(nest, f, counter):
                        counter += 1
                elif isinstance(nest, _NESTS) and nest.outs:
                    if self._lower(nest, f, counter, nest):
                        counter += 1
        if self.combine:
            _combine(op, self.max_args, counter)
        if self.dedupe:
            _dedupe(op)
        if self.vector_bytes != VECTOR_BYTES:
            width = builtin.IntegerAttr(self.vector_bytes, 64)
            for kernel in op.body.block.ops:
                if isinstance(kernel, cpu.FuncOp):
                    kernel.attributes["coil.vector_bytes"] = width

    def _lower_copy(self, op: L.CopyOp, f: func.FuncOp, counter: int) -> bool:
        if not all(isinstance(v.type, BufferType) for v in (op.value, op.dest)):
            return False
        nest = _copy_as_pointwise(op)
        Rewriter.insert_op(nest, InsertPoint.before(op))
        if self._lower(nest, f, counter, op, prefix="copy_"):
            op.detach()
            op.erase()
            return True
        nest.detach()
        nest.erase()
        return False

    def _lower(
        self, nest: L.LoopOp, f: func.FuncOp, counter: int, where: Operation, prefix: str = ""
    ) -> bool:
        from coil.lowering.loop_to_cpp.source import CppUnsupported, emit_kernel

        values = _external(nest)
        buffers = [v for v in values if isinstance(v.type, BufferType)]
        seeds = [v for v in values if isinstance(v.owner, L.SeedOp)]
        if len(buffers) + len(seeds) != len(values):
            other = next(v for v in values if v not in buffers and v not in seeds)
            _fallback(nest, f, f"it reads {other.type} from outside the nest")
            return False
        if any(b.type.device_attr.data != "cpu" for b in buffers):
            return False  # a GPU nest: Triton's
        symbols = sorted(_symbols(nest, buffers), key=lambda s: s.name)
        name = kernel_name(nest, counter, prefix="cpp_" + prefix)
        # The arguments: buffers, the function's random seed (an i64 the
        # launch passes as host.launch passes it to a Triton kernel), sizes.
        types = [b.type for b in buffers] + [builtin.i64] * len(seeds)
        types += [IndexType()] * len(symbols)
        block = Block(arg_types=types)
        attrs = [DictionaryAttr({}) for _ in buffers]
        attrs += [DictionaryAttr({"coil.seed": builtin.UnitAttr()}) for _ in seeds]
        attrs += [DictionaryAttr({"coil.symbol": ExprAttr(s)}) for s in symbols]
        for arg, s in zip(block.args[len(buffers) + len(seeds) :], symbols):
            arg.name_hint = s.name
        for arg in block.args[len(buffers) : len(buffers) + len(seeds)]:
            arg.name_hint = "seed"
        for arg, b in zip(block.args, buffers):
            if b.name_hint:
                arg.name_hint = b.name_hint
        mapping = dict(zip(buffers + seeds, block.args))
        body = nest.clone(value_mapper=mapping)
        block.add_ops([body, cpu.ReturnOp()])
        kernel = cpu.FuncOp(name, types, [], Region(block), arg_attrs=ArrayAttr(attrs))
        if (lines := _lines(nest)).data:
            kernel.attributes["coil.source_lines"] = lines
        # What the kernel reads, writes and computes (loop_cost.py), as a
        # tt.func records it: costs.txt and the printed source show it.
        kernel.attributes["coil.cost"] = builtin.StringAttr(nest_cost(nest).summary())
        try:
            emit_kernel(kernel)
        except CppUnsupported as e:
            _fallback(nest, f, str(e))
            kernel.erase()
            return False
        Rewriter.insert_op(kernel, InsertPoint.before(f))
        launch = host.LaunchOp(name, [1, 1, 1], buffers + seeds, symbols)
        launch.location = where.location
        Rewriter.replace_op(nest, launch, [])
        return True


def _lines(nest: Operation) -> ArrayAttr:
    from coil.lowering.loop_to_tt.kernel import _source_lines

    return ArrayAttr([builtin.StringAttr(t) for t in _source_lines(nest)])


def _fallback(nest: Operation, f: func.FuncOp, why: str) -> None:
    """Say (once per reason) that a nest runs under Triton's interpreter instead."""
    warnings.warn(
        f"coil: convert-loop-to-cpp: a {nest.name} in @{f.sym_name.data} stays a Triton "
        f"kernel (run by Triton's interpreter): the C++ kernels have no {why}",
        stacklevel=2,
    )


_BETWEEN = ("buffer.alloc", "buffer.view", "buffer.reuse", "buffer.dealloc")
"""Ops that may lie between two kernels run as one function: they make or
release buffers and run no code over their elements."""


def _combine(module: builtin.ModuleOp, max_args: int, counter: int) -> None:
    """Each run of C++ kernel launches with only :data:`_BETWEEN` ops between
    them becomes one launch of one ``cpu.func`` whose body holds the members'
    nests in order. The kernels run one after another, as the wrapper ran them
    (each parallel region ends in a barrier), so no member needs to be
    independent of another: this only saves the wrapper's per-call cost (a
    ctypes call, each buffer's ``data_ptr()``: a few microseconds), which on
    small tensors is most of a kernel's time. Inductor's C++ backend goes
    further and fuses loops of the same size into one OpenMP region."""
    kernels = {k.sym_name.data: k for k in module.ops if isinstance(k, cpu.FuncOp)}
    for f in list(module.ops):
        if not isinstance(f, func.FuncOp) or not f.body.blocks:
            continue
        group: list[host.LaunchOp] = []
        n_args = 0
        for op in list(f.body.block.ops):
            if isinstance(op, host.LaunchOp) and op.kernel_name in kernels:
                args = len(set(op.args)) + len(op.scalars.data)
                if group and n_args + args > max_args:
                    counter += _combine_group(module, f, group, kernels, counter)
                    group, n_args = [], 0
                group.append(op)
                n_args += args
            elif op.name not in _BETWEEN:
                counter += _combine_group(module, f, group, kernels, counter)
                group, n_args = [], 0
        counter += _combine_group(module, f, group, kernels, counter)


def _combine_group(
    module: builtin.ModuleOp,
    f: func.FuncOp,
    group: list[host.LaunchOp],
    kernels: dict[str, cpu.FuncOp],
    counter: int,
) -> int:
    """Replace ``group``'s launches (two or more) with one; 1 if it did."""
    if len(group) < 2:
        return 0
    buffers: dict[SSAValue, None] = {}
    symbols: dict[sympy.Expr, None] = {}
    for launch in group:
        buffers.update(dict.fromkeys(launch.args))
        symbols.update(dict.fromkeys(launch.scalars.data))
    buffer_list, symbol_list = list(buffers), list(symbols)
    types = [b.type for b in buffer_list] + [IndexType()] * len(symbol_list)
    block = Block(arg_types=types)
    for arg, b in zip(block.args, buffer_list):
        if b.name_hint:
            arg.name_hint = b.name_hint
    for arg, s in zip(block.args[len(buffer_list) :], symbol_list):
        arg.name_hint = str(s)
    of_buffer = dict(zip(buffer_list, block.args))
    of_symbol = dict(zip(symbol_list, block.args[len(buffer_list) :]))
    members = [kernels[launch.kernel_name] for launch in group]
    lines: dict[str, None] = {}
    costs: list[str] = []
    hints: dict[str, None] = {}
    for launch, kernel in zip(group, members):
        n = len(launch.args)
        mapping = {a: of_buffer[v] for a, v in zip(kernel.args[:n], launch.args)}
        mapping.update({a: of_symbol[s] for a, s in zip(kernel.args[n:], launch.scalars.data)})
        for op in kernel.body.block.ops:
            if not isinstance(op, cpu.ReturnOp):
                block.add_op(op.clone(value_mapper=mapping))
        if isinstance(src := kernel.attributes.get("coil.source_lines"), ArrayAttr):
            lines.update(dict.fromkeys(a.data for a in src.data))
        if isinstance(cost := kernel.attributes.get("coil.cost"), builtin.StringAttr):
            costs.append(cost.data)
        hint = re.sub(r"^coil_cpp_|_\d+$", "", kernel.sym_name.data)
        hints.update(dict.fromkeys(hint.split("_")))
    block.add_op(cpu.ReturnOp())
    # Numbered after the kernels lowered one by one (``counter`` of them), so
    # no name is taken twice before dedupe renumbers them all.
    name = f"coil_cpp_{'_'.join(list(hints)[:4])}_{counter}"
    attrs = [
        DictionaryAttr({} if isinstance(b.type, BufferType) else {"coil.seed": builtin.UnitAttr()})
        for b in buffer_list
    ] + [DictionaryAttr({"coil.symbol": ExprAttr(s)}) for s in symbol_list]
    combined = cpu.FuncOp(name, types, [], Region(block), arg_attrs=ArrayAttr(attrs))
    if lines:
        combined.attributes["coil.source_lines"] = ArrayAttr([builtin.StringAttr(t) for t in lines])
    shown = "; ".join(costs[:4]) + ("; ..." if len(costs) > 4 else "")
    combined.attributes["coil.cost"] = builtin.StringAttr(f"{len(costs)} nests: {shown}")
    Rewriter.insert_op(combined, InsertPoint.before(f))
    first, last = group[0], group[-1]
    launch = host.LaunchOp(name, [1, 1, 1], buffer_list, symbol_list)
    launch.location = first.location
    Rewriter.insert_op(launch, InsertPoint.before(last))
    # A member may read a buffer freed between the first and the last launch:
    # the frees move after the combined launch.
    op = first.next_op
    while op is not None and op is not launch:
        nxt = op.next_op
        if op.name == "buffer.dealloc":
            op.detach()
            Rewriter.insert_op(op, InsertPoint.after(last))
        op = nxt
    for old, kernel in zip(group, members):
        old.detach()
        old.erase()
        del kernels[kernel.sym_name.data]
        kernel.detach()
        kernel.erase()
    kernels[name] = combined
    return 1


_SSA_NAME = re.compile(r"%[A-Za-z_$.][\w$.]*|%\d+")


def _body_key(kernel: cpu.FuncOp) -> str:
    """A kernel's code without its name, attributes and SSA names."""
    out = io.StringIO()
    printer = Printer(stream=out)
    printer.print_attribute(kernel.function_type)
    if kernel.arg_attrs is not None:
        printer.print_attribute(kernel.arg_attrs)
    printer.print_region(kernel.body)
    names: dict[str, str] = {}
    return _SSA_NAME.sub(lambda m: names.setdefault(m.group(), f"%v{len(names)}"), out.getvalue())


def _dedupe(module: builtin.ModuleOp) -> None:
    """Merge kernels with identical bodies; number them in order of definition."""
    kernels = [op for op in module.ops if isinstance(op, cpu.FuncOp)]
    dedupe_kernels(module, kernels, _body_key)
