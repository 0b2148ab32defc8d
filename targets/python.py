"""``-t python``: a host module (``host.func`` + ``tt.func`` kernels) as one importable
Python module, like TorchInductor's ``output_code.py``::

    import torch
    import triton
    import triton.language as tl
    from coil.runtime.wrapper import cdiv, check_input, CoilInputError, empty_strided_on

    @triton.jit
    def coil_softmax_0(in_ptr0, out_ptr0, ...): ...

    empty_cuda0 = empty_strided_on("cuda:0")

    def call(args):
        arg0_1, arg1_1 = args
        args.clear()
        s0 = arg0_1.size(0)
        check_input("arg0_1", arg0_1, (s0, 64), (64, 1), torch.float32, "cuda:0")
        buf0 = empty_cuda0((s0, 64), (64, 1), torch.float32)
        coil_softmax_0[(s0, 1, 1)](arg0_1, buf0, s0, num_warps=4, num_stages=1)
        return (buf0,)

``call(args)`` takes the inputs in ``host.func`` order and returns what
``coil.runtime.aten_executor.run_module`` returns for the same function (a
tuple, or the ``coil.output_tree`` structure). Size symbols are bound from an
``index`` argument with ``coil.symbol``, else from an input's size or stride that
is exactly the symbol, else right after the extern call whose result first has
it (an unbacked size). ``host.extern`` regions print one ``torch.ops`` call per
aten op, with the arguments ``aten_executor`` passes.

``HostPrinter`` holds all naming state and prints one op per small method. The
text depends only on the IR (no addresses, times or dict-order accidents), so
the code cache may key on its hash.
"""

from __future__ import annotations

import ast
import keyword
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import singledispatchmethod
from typing import IO, Any

import sympy
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import (
    ArrayAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.utils.target import Target

from coil.dialects import cpu, tt
from coil.dialects import host as H
from coil.dialects.aten import (
    AtenOp,
    ConstantOp,
    OperatorOp,
    TensorType,
)
from coil.dialects.buffer import BufferType
from coil.dialects.symbolic import ExprAttr, to_expr
from coil.ir import short_lines, source_line
from coil.targets.lifetimes import last_reads, released_after
from coil.targets.python_aten import FRESH_FIRST_RESULT, PUBLIC_BINDINGS, AtenCallPrinter
from coil.targets.python_launch import LaunchPrinter
from coil.targets.python_memory import MemoryPrinter
from coil.targets.python_values import (
    PythonTargetError,
    attr_symbols,
    python_expr,
    python_tuple,
    symbols_of,
)
from coil.targets.scalar_inputs import moved_to_device

WRAPPER_IMPORT = (
    "from coil.runtime.wrapper import cdiv, check_input, CoilInputError, empty_strided_on, "
    "InputGuard, reinterpret_tensor, Semaphores, current_allocator"
)
DEVICE_SCALAR_IMPORT = "from coil.runtime.wrapper import device_scalar"
CONSTANTS_IMPORT = "from coil.runtime.wrapper import ConstantCache"
LAUNCH_IMPORT = "from coil.runtime.launch import Launcher, raw_stream"
AUTOTUNE_IMPORT = "from coil.runtime.autotune import autotune"
CPP_IMPORT = "from coil.runtime.cpp_kernels import kernel_index_error, load_cpp_kernels"

# Names generated code uses itself: never a value's name.
_RESERVED = {
    "torch",
    "triton",
    "tl",
    "libdevice",
    "cdiv",
    "check_input",
    "CoilInputError",
    "InputGuard",
    "reinterpret_tensor",
    "Semaphores",
    "empty_strided_on",
    "_inputs",
    "autotune",
    "Launcher",
    "raw_stream",
    "call",
    "args",
    "current_allocator",
    "constants",
    "_constants",
    "ConstantCache",
    "kernel_index_error",
    "load_cpp_kernels",
    "device_scalar",
    "_cpp",
    "_CPP_SOURCE",
    "max",
    "min",
    "int",
    "float",
    "len",
    "None",
    "True",
    "False",
}


class HostPrinter(LaunchPrinter, AtenCallPrinter, MemoryPrinter):
    """Prints one ``host.func`` (and the module's kernels) as a Python module."""

    def __init__(self, module: ModuleOp, fn: H.FuncOp, constants: H.FuncOp | None = None):
        self.module = module
        self.uses_device_scalar = False  # a launch reads a CPU scalar from its device copy
        self.fn = fn
        # buffer-hoist-constants' function: run by a ConstantCache, once per
        # version of the parameters it reads.
        self.constants = constants
        self.lines: list[str] = []
        self.names: dict[SSAValue, str] = {}
        self.used: set[str] = set(_RESERVED)
        self.bound: set[sympy.Symbol] = set()
        # Values whose storage is a fresh allocation (storage offset 0) -- the
        # base a reinterpret's absolute offset is relative to.
        self.fresh: set[SSAValue] = set()
        # Values whose data pointer is 16-byte aligned by construction (a fresh
        # allocation, an aligned view of one): launchers need not check them.
        self.aligned: set[SSAValue] = set()
        # (kernel, device, num_warps, num_stages) -> [launcher name, signature,
        # positions to check]; one Launcher each, defined before call().
        self.launchers: dict[tuple[str, str, int, int, bool], list[Any]] = {}
        self.streams: dict[str, str] = {}  # device -> the name of its stream
        self.module_lines: list[str] = []  # module-level state call() uses
        self.allocators: dict[str, str] = {}  # device -> its allocation helper's name
        # device -> the name, in the function being printed, of the allocation
        # function bound for the rest of the call (GPU devices).
        self.local_allocators: dict[str, str] = {}
        self.counters: dict[str, int] = {}
        # Inside a host.extern: region values the extern yields -> the result's name hint.
        self.hints: dict[SSAValue, str | None] = {}
        # Tensor constants made once at module level (read only).
        self.hoisted: set[SSAValue] = set()
        # Results of ATen calls that return an argument they write -> that argument.
        self.written: dict[SSAValue, SSAValue] = {}
        # Kernel name -> the user lines it came from (its coil.source_lines).
        self.kernel_lines: dict[str, list[str]] = {}
        # C++ kernels (cpu.func): name -> (argument count, whether it checks indices).
        self.cpp_kernels: dict[str, tuple[int, bool]] = {}
        for op in module.ops:
            if isinstance(op, cpu.FuncOp):
                from coil.targets.cpp_kernels import kernel_checks_bounds

                self.cpp_kernels[op.sym_name.data] = (len(op.args), kernel_checks_bounds(op))
            if isinstance(op, tt.FuncOp | cpu.FuncOp):
                self.used.add(op.sym_name.data)
                lines = op.attributes.get("coil.source_lines")
                if isinstance(lines, ArrayAttr):
                    self.kernel_lines[op.sym_name.data] = [s.data for s in lines.data]
        self.symbols = symbols_of(fn)
        self.used |= {s.name for s in self.symbols}
        if constants is not None:
            self.used |= {s.name for s in symbols_of(constants)}

    # ---- naming ------------------------------------------------------------

    def fresh_name(self, hint: str | None, default: str) -> str:
        """``hint`` made an identifier, or ``hint_1``... when taken; ``buf0``... without one."""
        base = re.sub(r"\W", "_", hint or "")
        if base[:1].isdigit():
            base = "_" + base
        if base and not keyword.iskeyword(base):
            name, k = base, 0
            while name in self.used:
                k += 1
                name = f"{base}_{k}"
        else:
            k = self.counters.get(default, 0)
            while f"{default}{k}" in self.used:
                k += 1
            self.counters[default] = k + 1
            name = f"{default}{k}"
        self.used.add(name)
        return name

    def define(self, value: SSAValue, default: str = "buf") -> str:
        name = self.fresh_name(value.name_hint, default)
        self.names[value] = name
        return name

    def name(self, value: SSAValue) -> str:
        if value not in self.names:
            raise PythonTargetError(f"-t python: a value of type {value.type} is used undefined")
        return self.names[value]

    def emit(self, line: str, indent: int = 1) -> None:
        self.lines.append("    " * indent + line)

    def emit_source(self, lines: Sequence[str]) -> None:
        """``# models.py:37``: the user lines the next wrapper line comes from."""
        if lines:
            self.emit(f"# {short_lines(list(lines))}")

    # ---- size symbols ------------------------------------------------------

    def expr(self, e: Any) -> str:
        e = to_expr(e)
        missing = sorted(s.name for s in e.free_symbols - self.bound)
        if missing:
            raise PythonTargetError(
                f"-t python: size symbol(s) {', '.join(missing)} of @{self.fn.sym_name.data} "
                "are not bound by its inputs (nor by an extern's result)"
            )
        return python_expr(e)

    def exprs(self, es: Sequence[Any]) -> str:
        return python_tuple([self.expr(e) for e in es])

    def bind_from(self, value: SSAValue, t: Attribute) -> None:
        """Bind the symbols that are exactly a size (then a stride) of ``value``."""
        if not isinstance(t, BufferType):
            return
        for method, dims in (("size", t.shape_attr.data), ("stride", t.strides_attr.data)):
            for d, e in enumerate(dims):
                e = to_expr(e)
                if e.is_Symbol and e not in self.bound:
                    self.emit(f"{e.name} = {self.name(value)}.{method}({d})")
                    self.bound.add(e)

    def bind_derived(self, args: Sequence[SSAValue]) -> None:
        """Symbols that only occur inside a size (``2*s0 + 1``): solve the linear ones."""
        progress = True
        while progress:
            progress = False
            for arg in args:
                t = arg.type
                if not isinstance(t, BufferType):
                    continue
                for d, e in enumerate(t.shape_attr.data):
                    e = to_expr(e)
                    free = e.free_symbols - self.bound
                    if len(free) != 1:
                        continue
                    (s,) = free
                    poly = sympy.Poly(e, s) if e.is_polynomial(s) else None
                    if poly is None or poly.degree() != 1:
                        continue
                    a, b = poly.all_coeffs()
                    if not (a.is_Integer and int(a) > 0):
                        continue
                    size = f"{self.name(arg)}.size({d})"
                    num = f"({size} - {_paren(python_expr(b))})" if b != 0 else size
                    self.emit(
                        f"{s.name} = {num} // {int(a)}" if int(a) != 1 else f"{s.name} = {num}"
                    )
                    self.bound.add(s)
                    progress = True

    # ---- the module ------------------------------------------------------------

    def print_module(self, kernels: str, libdevice: bool) -> str:
        fn = self.fn
        head = [
            f'"""Generated by coil (-t python): the wrapper of @{fn.sym_name.data} and its '
            "Triton kernels.",
            "",
            "call(args) takes the inputs in order (and clears the list), returns the outputs.",
            '"""',
            "",
            "import torch",
            "import triton",
            "import triton.language as tl",
        ]
        if libdevice:
            head.append("from triton.language.extra import libdevice")
        head.append(WRAPPER_IMPORT)
        functions = [fn] if self.constants is None else [self.constants, fn]
        if any(isinstance(op, H.AutotuneOp) for f in functions for op in f.walk()):
            head.append(AUTOTUNE_IMPORT)
        prelude: list[str] = []
        if self.constants is not None:
            head.append(CONSTANTS_IMPORT)
            self.print_function(self.constants, "constants", checks=False)
            positions = python_tuple([str(p) for p in constant_positions(self.constants)])
            prelude = [
                *self.lines,
                "",
                "",
                "# The constants function's results, once per version of its inputs.",
                f"_constants = ConstantCache(constants, {positions})",
                "",
                "",
            ]
            self.lines = []
        self.print_function(fn, "call")
        if self.uses_device_scalar:
            head.append(DEVICE_SCALAR_IMPORT)
        if self.launchers:
            head.append(LAUNCH_IMPORT)
        body = "\n".join(prelude + self.lines)
        if self.cpp_kernels:
            from coil.targets.cpp_kernels import emit_cpp_kernels

            head.append(CPP_IMPORT)
            source = emit_cpp_kernels(self.module)
            self.module_lines[:0] = [
                f'_CPP_SOURCE = r"""\n{source}"""',
                "# The CPU kernels: one library per graph, compiled once (runtime/cpp_kernels.py).",
                "_cpp = load_cpp_kernels(_CPP_SOURCE)",
                *(f'{k} = _cpp.kernel("{k}", {n})' for k, (n, _) in self.cpp_kernels.items()),
            ]
        state = "\n".join([self.launcher_definitions(), *self.module_lines]).strip()
        parts = ["\n".join(head), kernels.strip(), state, body]
        if kernels.strip() and not self.on_gpu():
            k = head.index(WRAPPER_IMPORT)
            head[k] += ", interpret_kernels"
            parts[0] = "\n".join(head)
            # Triton compiles kernels for GPUs only: CPU tensors need its
            # interpreter, chosen here so the module also runs when imported
            # directly (the backend's loader does the same).
            parts.append(
                "# CPU tensors: run the kernels above under Triton's interpreter.\n"
                "interpret_kernels(globals())"
            )
        return "\n\n\n".join(p for p in parts if p) + "\n"

    def launcher_definitions(self) -> str:
        """One ``Launcher`` per kernel and launch configuration (see runtime/launch.py)."""
        lines = []
        for (kernel, device, warps, stages, pdl), entry in self.launchers.items():
            name, signature, checked = entry
            sig = python_tuple([f'"{t}"' for t in signature])
            check = (
                f", checked={python_tuple([str(k) for k in sorted(checked)])}" if checked else ""
            )
            # launch_pdl: programmatic dependent launch (lowering/loop_to_tt/pdl.py)
            extra = ", pdl=True" if pdl else ""
            lines.append(
                f'{name} = Launcher(globals(), "{kernel}", {sig}, "{device}", {warps}, {stages}'
                f"{check}{extra})"
            )
        return "\n".join(lines)

    def on_gpu(self) -> bool:
        """Whether any buffer of the wrapper lives on a GPU."""
        functions = [self.fn] if self.constants is None else [self.fn, self.constants]
        for op in (o for f in functions for o in f.walk()):
            values = [*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)]
            if any(
                isinstance(v.type, BufferType) and v.type.device_attr.data != "cpu" for v in values
            ):
                return True
        return False

    def print_function(self, fn: H.FuncOp, entry: str, checks: bool = True) -> None:
        """``def entry(args)``: the body of ``fn``. ``checks``: compare the inputs
        with their types (the constants function's inputs are ``call``'s,
        already checked). Arguments ``coil.folded`` are not passed: ``call``
        takes them from the constants cache."""
        self.fn = fn
        self.bound = set()
        self.streams = {}
        self.local_allocators = {}
        attrs = fn.arg_attrs.data if fn.arg_attrs is not None else [None] * len(fn.args)
        folded = [a for a, d in zip(fn.args, attrs) if d is not None and "coil.folded" in d.data]
        args = [a for a in fn.args if a not in folded]
        self.lines.append(f"def {entry}(args):")
        names = [self.define(a, "arg") for a in args]
        if names:
            self.emit(f"if len(args) != {len(args)}:")
            self.emit(
                f'raise CoilInputError(f"{entry} takes {len(args)} inputs, got {{len(args)}}")',
                2,
            )
            self.emit(f"{', '.join(names)}{',' if len(names) == 1 else ''} = args")
        self.emit("args.clear()")
        # Symbols: coil.symbol index arguments, then sizes/strides of tensor inputs.
        arg_attrs = attrs
        for arg, attrs in zip(fn.args, arg_attrs):
            if arg in folded:
                continue
            sym = attrs.data.get("coil.symbol") if attrs is not None else None
            if isinstance(sym, ExprAttr) and sym.data.is_Symbol and sym.data not in self.bound:
                self.emit(f"{sym.data.name} = {self.name(arg)}")
                self.bound.add(sym.data)
            if attrs is not None and "coil.aligned" in attrs.data:
                # A parameter, buffer or constant aligned when traced: its
                # launches skip the per-launch data_ptr check (Inductor's
                # rule for static inputs).
                self.aligned.add(arg)
        for arg in args:
            self.bind_from(arg, arg.type)
        self.bind_derived(args)
        tensors = [a for a in args if isinstance(a.type, BufferType)]
        if tensors and checks:
            # One C++ comparison of all inputs when they match an earlier call's
            # (per size-symbol values); the Python checks name what differs.
            names = ", ".join(self.name(a) for a in tensors)
            key = python_tuple(sorted((s.name for s in self.bound), key=_natural))
            self.module_lines.append("_inputs = InputGuard()")
            self.emit(f"if not _inputs.check({key}, {names}):")
            for arg in tensors:
                t = arg.type
                self.emit(
                    f'check_input("{self.name(arg)}", {self.name(arg)}, '
                    f"{self.exprs(t.shape_attr.data)}, {self.exprs(t.strides_attr.data)}, "
                    f'{t.dtype}, "{t.device_attr.data}")',
                    2,
                )
            self.emit(f"_inputs.learn({key}, {names})", 2)
        for arg in tensors:
            t = arg.type
            if checks and moved_to_device(arg):
                # check_input lets a 0-d CPU tensor stand for a CUDA scalar.
                name = self.name(arg)
                self.emit(f'{name} = {name}.to("{t.device_attr.data}")')
        if folded:
            self.print_folded(fn, folded)
        args = list(fn.args)
        # A tensor input's name is deleted after its last use (as Inductor's
        # wrapper does): with AOTAutograd's boxed calling convention the caller
        # has cleared its list, so the storage (a saved activation in a
        # backward) can be freed mid-call.
        # An input handed to a collective is held until the collective's wait.
        ops = list(fn.body.block.ops)
        reads = last_reads(ops)
        last_use = {a: reads.get(a, -1) for a in args if isinstance(a.type, BufferType)}
        self.print_dels([a for a, j in last_use.items() if j == -1])
        # Views and reused buffers lose their names at their last read
        # (targets/lifetimes.py), or a name would keep a storage alive to the
        # end of the call.
        released = released_after(ops, list(last_use))
        for i, op in enumerate(ops):
            self.print_op(op)
            if not isinstance(op, H.ReturnOp):
                self.print_dels(released.get(i, []) + [a for a, j in last_use.items() if j == i])

    def print_folded(self, fn: H.FuncOp, folded: list[BlockArgument]) -> None:
        """The ``coil.folded`` arguments, from the constants cache (fresh
        allocations of the constants function: aligned)."""
        if self.constants is None:
            raise PythonTargetError(
                f"-t python: @{fn.sym_name.data} has coil.folded arguments but names no "
                "constants function (coil.constants)"
            )
        attrs = fn.arg_attrs.data if fn.arg_attrs is not None else []
        order = sorted(folded, key=lambda a: attrs[a.index].data["coil.folded"].value.data)
        count = len(self.constants.function_type.outputs.data)
        if [attrs[a.index].data["coil.folded"].value.data for a in order] != list(range(count)):
            raise PythonTargetError(
                f"-t python: the coil.folded arguments of @{fn.sym_name.data} must name each "
                f"of the {count} result(s) of @{self.constants.sym_name.data} once"
            )
        inputs = [fn.args[p] for p in constant_positions(self.constants)]
        names = [self.define(a, "folded") for a in order]
        self.aligned |= set(order)
        got = python_tuple([self.name(a) for a in inputs])
        self.emit(f"{', '.join(names)}{',' if len(names) == 1 else ''} = _constants.get({got})")

    def print_dels(self, values: Sequence[SSAValue]) -> None:
        if values:
            self.emit("del " + ", ".join(self.name(v) for v in values))

    # ---- ops -------------------------------------------------------------------

    @singledispatchmethod
    def print_op(self, op: Operation) -> None:
        raise PythonTargetError(f"-t python: no printer for {op.name} in a host.func")

    @print_op.register
    def _(self, op: H.EmptyStridedOp) -> None:
        self.print_empty_strided(op)

    @print_op.register
    def _(self, op: H.ReinterpretOp) -> None:
        self.print_reinterpret(op)

    @print_op.register
    def _(self, op: H.FreeOp) -> None:
        self.emit(f"del {self.name(op.buffer)}")

    @print_op.register
    def _(self, op: H.SeedOp) -> None:
        name = self.define(op.result, "seed")
        self.emit(f'{name} = int(torch.randint(2**31 - 1, (), device="cpu"))')

    @print_op.register
    def _(self, op: H.LaunchOp) -> None:
        if op.kernel_name in self.cpp_kernels:
            self.emit(self.cpp_call(op))
            return
        self.emit(self.launcher_call(op))

    @print_op.register
    def _(self, op: H.SemaphoresOp) -> None:
        # The module keeps the counters (zero between launches), one set per stream.
        t = op.result.type
        device = t.device_attr.data
        state = self.fresh_name("_sems", "sems")
        self.module_lines.append(
            f'{state} = Semaphores("{device}", {self.expr(t.shape_attr.data[0])})'
        )
        stream = self.stream(device)
        name = self.define(op.result, "sem")
        self.aligned.add(op.result)
        self.emit(f"{name} = {state}.on({stream})")

    @print_op.register
    def _(self, op: H.AutotuneOp) -> None:
        # autotune(key, sizes, [candidates], device=...) runs exactly one candidate;
        # the sizes (the launches' size symbols, evaluated) complete the key.
        launches = op.launches
        symbols: set[sympy.Symbol] = set()
        for launch in launches:
            symbols |= attr_symbols(launch.grid) | attr_symbols(launch.scalars)
        sizes = python_tuple([self.expr(s) for s in sorted(symbols, key=lambda s: s.name)])
        devices = {str(a.type.device) for a in launches[0].args if isinstance(a.type, BufferType)}
        device = next(iter(sorted(d for d in devices if d != "cpu")), "cpu")
        self.emit(f'autotune("{op.key.data}", {sizes}, [')
        for launch in launches:
            self.emit(f"lambda: {self.launch_call(launch)},", 2)
        self.emit(f'], device="{device}", digest="{self.autotune_digest(op)}")')

    @print_op.register
    def _(self, op: H.VariantsOp) -> None:
        # host.variants: the first launch whose bound the size is within, else the last.
        size = self.expr(op.size.data)
        launches, bounds = op.launches, op.bound_values
        for launch in launches:  # the stream is read before the branches, once
            self.stream(self.launch_args(launch)[1])
        for k, launch in enumerate(launches):
            if k < len(bounds):
                self.emit(f"{'if' if k == 0 else 'elif'} {size} <= {bounds[k]}:")
            else:
                self.emit("else:")
            self.emit(self.launcher_call(launch), 2)

    @print_op.register
    def _(self, op: ConstantOp) -> None:
        # A scalar outside any extern: a forward graph returning a size for the
        # backward (dynamic training), printed where it is used.
        self.names[op.result] = self.literal(op.python_value)

    @print_op.register
    def _(self, op: H.ReturnOp) -> None:
        outs = [self.name(v) for v in op.values]
        tree = self.fn.attributes.get("coil.output_tree")
        if isinstance(tree, StringAttr):
            self.emit(f"return {_rebuild(ast.literal_eval(tree.data), outs)}")
        else:
            self.emit(f"return {python_tuple(outs)}")

    @print_op.register
    def _(self, op: H.ExternOp) -> None:
        line = source_line(op.location)
        self.emit_source([line] if line is not None else [])
        block = op.body.block
        for arg, operand in zip(block.args, op.args):
            self.names[arg] = self.name(operand)
        term = block.last_op
        assert isinstance(term, H.YieldOp)
        # A value the region yields is named after the extern's result.
        self.hints = {}
        for r, v in zip(op.res, term.values):
            if v not in block.args and v not in self.hints:
                self.hints[v] = r.name_hint or v.name_hint
        for inner in block.ops:
            if inner is not term:
                self.print_aten(inner)
        # Temporaries of the region (a padded operand, say) die with the call.
        temps = [
            self.names[r]
            for inner in block.ops
            for r in inner.results
            if r not in term.values
            and r in self.names
            and r not in self.hoisted
            and isinstance(r.type, TensorType)
        ]
        if temps:
            self.emit(f"del {', '.join(temps)}")
        taken: set[SSAValue] = set()
        for r, v in zip(op.res, term.values):
            if v in block.args or v in taken:
                self.emit(f"{self.define(r)} = {self.name(v)}")
            elif v in self.written:
                # A call's result that is an argument it writes (an in-place
                # op's self): known aligned where that argument is.
                self.names[r] = self.name(v)
                source = self.written[v]
                if isinstance(source, BlockArgument) and source.owner is block:
                    source = op.args[source.index]
                for known in (self.fresh, self.aligned):
                    if source in known:
                        known.add(r)
            else:
                self.names[r] = self.name(v)
                owner = v.owner
                if (isinstance(owner, AtenOp) and owner.OVERLOAD in PUBLIC_BINDINGS) or (
                    v.index == 0 and _overload_name(owner) in FRESH_FIRST_RESULT
                ):
                    # A matmul's, convolution's or fused attention's result is a
                    # fresh allocation (offset 0, aligned): kernels reading it
                    # need no check.
                    self.fresh.add(r)
                    self.aligned.add(r)
            taken.add(v)
        # Unbacked sizes: known once ATen has computed the result.
        for r in op.res:
            self.bind_from(r, r.type)


def _overload_name(op: Operation) -> str | None:
    """``aten.<op>.<overload>`` of an aten op, or of a generic ``aten.operator``
    (an overload outside the generated set, such as the fused attention kernels)."""
    if isinstance(op, AtenOp):
        return op.OVERLOAD
    if isinstance(op, OperatorOp) and (overload := op.resolve()) is not None:
        return f"{overload._schema.name.replace('::', '.')}.{overload._overloadname}"
    return None


def _natural(name: str) -> tuple[str, int]:
    """``s2`` before ``s10``."""
    head = name.rstrip("0123456789")
    return head, int(name[len(head) :] or 0)


def _paren(text: str) -> str:
    """``text`` as an operand of ``+``/``-``: parenthesized unless a bare name or number."""
    return text if re.fullmatch(r"\w+(\.\w+)?", text) else f"({text})"


def _rebuild(node: Any, outs: Sequence[str]) -> str:
    """``decode_output_tree`` as source: ints index the outputs."""
    if isinstance(node, int):
        return outs[node]
    if isinstance(node, tuple):
        return python_tuple([_rebuild(n, outs) for n in node])
    if isinstance(node, list):
        return "[" + ", ".join(_rebuild(n, outs) for n in node) + "]"
    if isinstance(node, dict):
        return "{" + ", ".join(f"{k!r}: {_rebuild(v, outs)}" for k, v in node.items()) + "}"
    return repr(node)


def constant_positions(constants: H.FuncOp) -> list[int]:
    """Where the entry function's arguments hold the constants function's inputs
    (their ``coil.input``)."""
    attrs = constants.arg_attrs.data if constants.arg_attrs is not None else []
    out = []
    for k in range(len(constants.args)):
        given = attrs[k].data.get("coil.input") if k < len(attrs) else None
        if not isinstance(given, IntegerAttr):
            raise PythonTargetError(
                f"-t python: argument {k} of @{constants.sym_name.data} has no coil.input "
                "(the entry function's argument it takes)"
            )
        out.append(given.value.data)
    return out


def host_functions(module: ModuleOp) -> tuple[H.FuncOp, H.FuncOp | None]:
    """The module's entry host.func and the constants function it names
    (``coil.constants``, made by buffer-hoist-constants), if any; fails with a
    sentence on anything else."""
    fns = []
    for op in module.ops:
        if isinstance(op, H.FuncOp):
            fns.append(op)
        elif not isinstance(op, tt.FuncOp | cpu.FuncOp):
            hint = (
                " -- run convert-loop-to-tt and convert-buffer-to-host first"
                if op.name == "func.func"
                else ""
            )
            raise PythonTargetError(
                f"-t python expects a host.func and tt.func kernels; found {op.name}{hint}"
            )
    named = {
        ref.root_reference.data
        for f in fns
        if isinstance(ref := f.attributes.get("coil.constants"), builtin.SymbolRefAttr)
    }
    entries = [f for f in fns if f.sym_name.data not in named]
    if len(entries) != 1 or len(fns) > 2:
        raise PythonTargetError(
            "-t python expects exactly one host.func (and the constants function it names), "
            f"found {len(fns)}"
        )
    (entry,) = entries
    constants = next((f for f in fns if f is not entry), None)
    if constants is None and named:
        raise PythonTargetError(
            f"-t python: @{entry.sym_name.data} names a constants function "
            f"@{sorted(named)[0]} that the module does not hold"
        )
    return entry, constants


def emit_python(module: ModuleOp) -> str:
    """The Python source of ``module``'s host program and kernels."""
    from coil.targets import triton as T

    fn, constants = host_functions(module)
    kernels = T.emit_kernels(module) if any(isinstance(o, tt.FuncOp) for o in module.ops) else ""
    return HostPrinter(module, fn, constants).print_module(kernels, T.uses_libdevice(module))


@dataclass(frozen=True)
class PythonTarget(Target):
    """``-t python``: one importable module with ``call(args)`` and its kernels."""

    name = "python"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(emit_python(module))
