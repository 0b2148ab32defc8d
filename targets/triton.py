"""``-t triton``: every ``tt.func`` of a module as ``@triton.jit`` Python source.

The output reads like TorchInductor's kernels: one assignment per op, named
after the SSA name hints (``tmp0``, ``tmp1`` ... where there are none)::

    # kind: pointwise
    @triton.jit(do_not_specialize=["s0"])
    def coil_add_0(in_ptr0, out_ptr0, s0):
        s0 = s0.to(tl.int64)
        pid = tl.program_id(0)
        off = pid * 1024
        ...

``KernelPrinter`` holds all naming state and prints one op per small method
(a ``singledispatchmethod`` keyed by op class, as Inductor's 2022
``TritonOverrides`` had one method per op). ``tt.reduce`` combiners are
outlined into their own ``@triton.jit`` functions (``<kernel>_combine<n>``), as
are ``tt.scan``'s (``tl.associative_scan``); a lone ``arith.addf``/``addi``
combiner prints as ``tl.sum`` (a scan's as ``tl.cumsum``). Only Triton's stable
``triton.language`` surface is used, so the source runs on Triton 3.6 and 3.9
and under its interpreter (``TRITON_INTERPRET=1``).

``emit_kernels(module)`` gives the kernels without imports (the python target
prepends its own); ``uses_libdevice(module)`` says whether they need
``from triton.language.extra import libdevice``.
"""

from __future__ import annotations

import keyword
import math as pymath
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import singledispatchmethod
from typing import IO

from xdsl.context import Context
from xdsl.dialects import arith, math, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from coil.dialects import host, tt
from coil.dialects.arith import splat_value
from coil.dialects.tt import element_of, shape_of
from coil.ir import short_lines

# Ops a tt.func may contain, by dialect prefix.
_KERNEL_DIALECTS = ("tt.", "arith.", "math.", "scf.")

# Names the generated module binds at top level (or Python itself): never a value name.
_RESERVED = {"tl", "triton", "libdevice", "range", "float", "int", "min", "max", "print", "len"}

# Triton's math functions accept only fp32/fp64 (math.py's _check_dtype): f16/bf16
# operands go through f32 and back, as Inductor does.
_F32_ONLY = {
    math.ExpOp: "exp",
    math.Exp2Op: "exp2",
    math.LogOp: "log",
    math.Log2Op: "log2",
    math.SinOp: "sin",
    math.CosOp: "cos",
    math.SqrtOp: "sqrt",
    math.RsqrtOp: "rsqrt",
    math.ErfOp: "erf",
    math.FloorOp: "floor",
    math.CeilOp: "ceil",
}

_INFIX = {
    arith.AddiOp: "+",
    arith.AddfOp: "+",
    arith.SubiOp: "-",
    arith.SubfOp: "-",
    arith.MuliOp: "*",
    arith.MulfOp: "*",
    arith.DivfOp: "/",
    # Triton's integer // and % truncate toward zero (arith.divsi / remsi).
    arith.DivSIOp: "//",
    arith.RemSIOp: "%",
    arith.AndIOp: "&",
    arith.OrIOp: "|",
    arith.XOrIOp: "^",
    arith.ShLIOp: "<<",
    # >> on a signed Triton integer is an arithmetic shift.
    arith.ShRSIOp: ">>",
}

# Unsigned integer ops: computed on uint bitcasts of the operands.
_UNSIGNED_INFIX = {arith.DivUIOp: "//", arith.RemUIOp: "%", arith.ShRUIOp: ">>"}

_MIN_MAX = {
    arith.MaxSIOp: "tl.maximum",
    arith.MinSIOp: "tl.minimum",
    arith.MaxnumfOp: "tl.maximum",
    arith.MinnumfOp: "tl.minimum",
}

_CMPI = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">="}
_CMPI_UNSIGNED = {"ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}

# Ordered float predicates are Python's comparisons; une is !=.
_CMPF = {"oeq": "==", "ogt": ">", "oge": ">=", "olt": "<", "ole": "<=", "une": "!="}
# Unordered predicates: the negation of the opposite ordered comparison.
_CMPF_NEGATED = {"ugt": "<=", "uge": "<", "ult": ">=", "ule": ">"}

_CACHE = {"ca": ".ca", "cg": ".cg", "cs": ".cs", "wb": ".wb", "wt": ".wt", "cv": ".cv"}

_ATOMICS = {
    "add": "tl.atomic_add",
    "fadd": "tl.atomic_add",
    "max": "tl.atomic_max",
    "min": "tl.atomic_min",
    "umax": "tl.atomic_max",
    "umin": "tl.atomic_min",
    "and": "tl.atomic_and",
    "or": "tl.atomic_or",
    "xor": "tl.atomic_xor",
    "exch": "tl.atomic_xchg",
}


def _fail(message: str) -> None:
    raise DiagnosticException(message)


def dtype(t: Attribute) -> str:
    """Triton's name for an element type (``tl.float32``, ``tl.pointer_type(...)``)."""
    t = element_of(t)
    if isinstance(t, tt.PointerType):
        return f"tl.pointer_type({dtype(t.pointee_type)})"
    if isinstance(t, IndexType):
        return "tl.int64"
    if isinstance(t, IntegerType):
        if t.width.data not in (1, 8, 16, 32, 64):
            _fail(f"-t triton: Triton has no i{t.width.data} type")
        return f"tl.int{t.width.data}"
    names = {
        Float16Type: "tl.float16",
        BFloat16Type: "tl.bfloat16",
        Float32Type: "tl.float32",
        Float64Type: "tl.float64",
        Float8E4M3FNType: "tl.float8e4nv",
        Float8E5M2Type: "tl.float8e5",
    }
    if type(t) in names:
        return names[type(t)]
    _fail(f"-t triton: Triton has no type for {t}")
    raise AssertionError


def _width(t: Attribute) -> int:
    t = element_of(t)
    return 64 if isinstance(t, IndexType) else t.width.data


def _shape(t: Attribute) -> str:
    return "[" + ", ".join(str(d) for d in shape_of(t)) + "]"


def _float_literal(value: float, t: Attribute) -> str:
    """Python source for a float of type ``t``; ``float("inf")`` for non-finite ones."""
    if pymath.isnan(value):
        return 'float("nan")'
    if pymath.isinf(value):
        return 'float("inf")' if value > 0 else 'float("-inf")'
    if isinstance(t, Float32Type):
        # The shortest decimal that rounds back to the same f32.
        f32 = struct.unpack("f", struct.pack("f", value))[0]
        for digits in range(6, 18):
            text = f"{f32:.{digits}g}"
            if struct.unpack("f", struct.pack("f", float(text)))[0] == f32:
                break
        return repr(float(text))
    return repr(float(value))


def _int_literal(value: int, t: Attribute) -> str:
    if _width(t) == 1:
        return "1" if value else "0"
    return str(value)


def sanitize(hint: str) -> str:
    """A Python identifier from an SSA name hint."""
    name = re.sub(r"\W", "_", hint)
    if not name or name[0].isdigit():
        name = "v" + name
    if keyword.iskeyword(name) or name in _RESERVED:
        name += "_"
    return name


@dataclass
class _Scope:
    """Naming and output state of the function being printed."""

    names: dict[SSAValue, str] = field(default_factory=dict)
    literals: dict[SSAValue, str] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)
    lines: list[str] = field(default_factory=list)
    indent: int = 1
    counter: int = 0


class KernelPrinter:
    """Prints the ``tt.func`` ops of one module as ``@triton.jit`` functions."""

    def __init__(self, module: ModuleOp, *, sum_shortcut: bool = True):
        self.module = module
        # Print a lone-add combiner as tl.sum (same semantics, reads better).
        self.sum_shortcut = sum_shortcut
        self.funcs = [op for op in module.ops if isinstance(op, tt.FuncOp)]
        self.func_names = {f.sym_name.data for f in self.funcs}
        self.uses_libdevice = False
        self.scope = _Scope()
        self.kernel = ""
        self.combiners: list[str] = []
        self.on_gpu = False  # the kernel being printed runs on a CUDA device

    # -- checks ---------------------------------------------------------------

    def check(self) -> None:
        """Fail with a sentence unless the module holds tt.func kernels of tt/arith/math/scf."""
        if not self.funcs:
            if any(isinstance(op, host.FuncOp) for op in self.module.ops):
                return  # lowered, and every op runs through ATen: no kernel to print
            found = next(
                (
                    op.name
                    for op in self.module.walk()
                    if not op.name.startswith(("builtin.", "func.", "host."))
                ),
                None,
            )
            what = f"found {found}" if found else "found none"
            _fail(f"-t triton expects tt.func kernels; {what} — run convert-loop-to-tt first")
        for func in self.funcs:
            for op in func.walk():
                if op is not func and not op.name.startswith(_KERNEL_DIALECTS):
                    _fail(
                        f"-t triton expects only tt/arith/math/scf ops in tt.func; found "
                        f"{op.name} in @{func.sym_name.data} — run convert-loop-to-tt first"
                    )

    # -- output ---------------------------------------------------------------

    def print_module(self) -> str:
        self.check()
        if not self.funcs:
            return "# No Triton kernels: every op of this module is an ATen call (host.extern)."
        chunks = []
        for func in self.funcs:
            self.combiners = []
            kernel = self.print_func(func)
            chunks.extend(self.combiners)
            chunks.append(kernel)
        return "\n\n\n".join(chunks)

    def line(self, text: str) -> None:
        self.scope.lines.append("    " * self.scope.indent + text)

    # -- names ----------------------------------------------------------------

    def fresh(self, hint: str | None) -> str:
        scope = self.scope
        if hint:
            base = sanitize(hint)
            name, n = base, 0
            while name in scope.taken or name in self.func_names:
                n += 1
                name = f"{base}_{n}"
        else:
            while True:
                name = f"tmp{scope.counter}"
                scope.counter += 1
                if name not in scope.taken and name not in self.func_names:
                    break
        scope.taken.add(name)
        return name

    def define(self, value: SSAValue, hint: str | None = None) -> str:
        name = self.fresh(hint if hint is not None else value.name_hint)
        self.scope.names[value] = name
        return name

    def val(self, value: SSAValue) -> str:
        """The value as an operand: a variable, or an inlined i32/f32 literal."""
        if value in self.scope.literals:
            return self.scope.literals[value]
        if value not in self.scope.names:
            _fail(f"-t triton: a value of type {value.type} is used before it is defined")
        return self.scope.names[value]

    def tval(self, value: SSAValue) -> str:
        """The value as a Triton tensor (literals wrapped in ``tl.full``), for ``.to`` etc."""
        if value in self.scope.literals:
            return f"tl.full([], {self.scope.literals[value]}, {dtype(value.type)})"
        return self.val(value)

    def operands(self, *values: SSAValue) -> list[str]:
        """Operands of an expression: at least one must be a Triton value, not a literal."""
        out = [self.val(v) for v in values]
        if all(v in self.scope.literals for v in values):
            out[0] = self.tval(values[0])
        return out

    def ordered(self, *values: SSAValue) -> list[str]:
        """Operands of a comparison / min / max: bf16 goes through f32 (exact), since
        Triton's interpreter orders bf16 by its raw bits (-5 > 1)."""
        if not isinstance(element_of(values[0].type), BFloat16Type):
            return self.operands(*values)
        return [f"{self.tval(v)}.to(tl.float32)" for v in values]

    @staticmethod
    def narrowed(expr: str, type_: Attribute) -> str:
        """``expr`` (computed by :meth:`ordered`) back in ``type_``'s element type."""
        if not isinstance(element_of(type_), BFloat16Type):
            return expr
        return f"{expr}.to(tl.bfloat16)"

    def assign(self, op: Operation, expr: str) -> None:
        names = [self.define(r) for r in op.results]
        if names:
            self.line(f"{', '.join(names)} = {expr}")
        else:
            self.line(expr)

    def unsigned(self, value: SSAValue) -> str:
        w = _width(value.type)
        if w == 1:
            return f"{self.tval(value)}.to(tl.int32)"
        return f"{self.tval(value)}.to(tl.uint{w}, bitcast=True)"

    def signed(self, expr: str, t: Attribute) -> str:
        return f"({expr}).to({dtype(t)}, bitcast=True)"

    # -- functions ------------------------------------------------------------

    def print_func(self, func: tt.FuncOp) -> str:
        self.scope = _Scope()
        self.kernel = func.sym_name.data
        public = func.sym_visibility is None or func.sym_visibility.data == "public"
        block = func.body.block
        args = [self.define(a, a.name_hint or f"arg{i}") for i, a in enumerate(block.args)]
        scalars = [n for a, n in zip(block.args, args) if _is_i64(a.type)]
        header = []
        attrs = func.attributes
        device = attrs.get("coil.device")
        self.on_gpu = isinstance(device, StringAttr) and device.data.startswith("cuda")
        kind = attrs.get("coil.kind")
        if isinstance(kind, StringAttr):
            header.append(f"# kind: {kind.data}")
        lines = attrs.get("coil.source_lines")
        if isinstance(lines, ArrayAttr) and lines.data:
            header.append("# fused from: " + short_lines([s.data for s in lines.data]))
        aten = attrs.get("coil.aten_ops")
        if isinstance(aten, ArrayAttr) and aten.data:  # as Inductor's kernel comments
            header.append(f"# Original ATen: [{', '.join(s.data for s in aten.data)}]")
        cost = attrs.get("coil.cost")
        if isinstance(cost, StringAttr):
            header.append(f"# cost: {cost.data}")
        plan = attrs.get("coil.plan")  # why the kernel is shaped as it is (strategy/plan.py)
        if isinstance(plan, StringAttr):
            header.append(f"# plan: {plan.data}")
        jit_args = []
        if public and scalars:
            quoted = ", ".join(f'"{n}"' for n in scalars)
            jit_args.append(f"do_not_specialize=[{quoted}]")
        if tt.has_device_asserts(func):
            jit_args.append("debug=True")  # tl.device_assert is a no-op otherwise
        header.append(f"@triton.jit({', '.join(jit_args)})" if jit_args else "@triton.jit")
        header.append(f"def {self.kernel}({', '.join(args)}):")
        if public:
            # Triton passes small ints as i32: widen size symbols before any arithmetic.
            for n in scalars:
                self.line(f"{n} = {n}.to(tl.int64)")
        self.print_block(block)
        return "\n".join(header + (self.scope.lines or ["    pass"]))

    def print_block(self, block: Block, targets: Sequence[str] | None = None) -> None:
        """The ops of a block; its ``scf.yield`` assigns ``targets``."""
        for op in block.ops:
            if isinstance(op, scf.YieldOp):
                self.assign_targets(targets or [], op.operands)
            else:
                self.emit(op)

    def assign_targets(self, targets: Sequence[str], values: Sequence[SSAValue]) -> None:
        pairs = [(t, self.tval(v)) for t, v in zip(targets, values) if self.val(v) != t]
        if pairs:
            self.line(f"{', '.join(t for t, _ in pairs)} = {', '.join(e for _, e in pairs)}")

    def nested(self, block: Block, targets: Sequence[str] | None = None) -> None:
        self.scope.indent += 1
        before = len(self.scope.lines)
        self.print_block(block, targets)
        if len(self.scope.lines) == before:
            self.line("pass")
        self.scope.indent -= 1

    # -- dispatch -------------------------------------------------------------

    @singledispatchmethod
    def emit(self, op: Operation) -> None:
        _fail(f"-t triton cannot print {op.name}: Triton has no equivalent for it here")

    # tt ---------------------------------------------------------------------

    @emit.register
    def _(self, op: tt.ReturnOp) -> None:
        # A void tt.return ends the function body: Python needs nothing there.
        if op.srcs:
            self.line("return " + ", ".join(self.val(v) for v in op.srcs))

    @emit.register
    def _(self, op: tt.GetProgramIdOp) -> None:
        self.assign(op, f"tl.program_id({op.axis.value.data})")

    @emit.register
    def _(self, op: tt.GetNumProgramsOp) -> None:
        self.assign(op, f"tl.num_programs({op.axis.value.data})")

    @emit.register
    def _(self, op: tt.MakeRangeOp) -> None:
        self.assign(op, f"tl.arange({op.start.value.data}, {op.end.value.data})")

    @emit.register
    def _(self, op: tt.SplatOp) -> None:
        shape = _shape(op.result.type)
        if isinstance(op.src.type, tt.PointerType):
            self.assign(op, f"{self.val(op.src)} + tl.zeros({shape}, tl.int32)")
        else:
            self.assign(op, f"tl.full({shape}, {self.val(op.src)}, {dtype(op.src.type)})")

    @emit.register
    def _(self, op: tt.BroadcastOp) -> None:
        self.assign(op, f"tl.broadcast_to({self.val(op.src)}, {_shape(op.result.type)})")

    @emit.register
    def _(self, op: tt.ExpandDimsOp) -> None:
        self.assign(op, f"tl.expand_dims({self.val(op.src)}, {op.axis.value.data})")

    @emit.register
    def _(self, op: tt.ReshapeOp) -> None:
        self.assign(op, f"tl.reshape({self.val(op.src)}, {_shape(op.result.type)})")

    @emit.register
    def _(self, op: tt.MultipleOfOp) -> None:
        self.assign(op, f"tl.multiple_of({self.val(op.src)}, {list(op.hint())})")

    @emit.register
    def _(self, op: tt.MaxContiguousOp) -> None:
        self.assign(op, f"tl.max_contiguous({self.val(op.src)}, {list(op.hint())})")

    @emit.register
    def _(self, op: tt.AddPtrOp) -> None:
        self.assign(op, f"{self.val(op.ptr)} + {self.val(op.offset)}")

    def memory_kwargs(self, op: tt.LoadOp | tt.StoreOp) -> list[str]:
        kwargs = []
        if op.cache.data in _CACHE:
            kwargs.append(f'cache_modifier="{_CACHE[op.cache.data]}"')
        if op.evict.data != "normal":
            kwargs.append(f'eviction_policy="{op.evict.data}"')
        return kwargs

    @emit.register
    def _(self, op: tt.LoadOp) -> None:
        args = [self.val(op.ptr)]
        if op.mask is not None:
            args.append(self.val(op.mask))
        if op.other is not None:
            args.append(f"other={self.other(op.other)}")
        args += self.memory_kwargs(op)
        if op.is_volatile.value.data:
            args.append("volatile=True")
        self.assign(op, f"tl.load({', '.join(args)})")

    def other(self, value: SSAValue) -> str:
        """A load's ``other``: the scalar when it is a splat constant, as Inductor prints it."""
        literal = _splat_literal(value)
        return literal if literal is not None else self.val(value)

    @emit.register
    def _(self, op: tt.StoreOp) -> None:
        args = [self.val(op.ptr), self.tval(op.value)]
        if op.mask is not None:
            args.append(self.val(op.mask))
        self.line(f"tl.store({', '.join(args + self.memory_kwargs(op))})")

    @emit.register
    def _(self, op: tt.AtomicRMWOp) -> None:
        kind = op.atomic_rmw_op.data
        ptr, val = self.val(op.ptr), self.tval(op.val)
        elem = element_of(op.val.type)
        if kind in ("umax", "umin"):
            # Triton picks signed or unsigned by the pointee type: view the memory as uint.
            w = _width(elem)
            ptr = f"{ptr}.to(tl.pointer_type(tl.uint{w}))"
            val = f"{val}.to(tl.uint{w}, bitcast=True)"
        args = [ptr, val]
        if op.mask is not None:
            args.append(f"mask={self.val(op.mask)}")
        args += [f'sem="{op.sem.data}"', f'scope="{op.scope.data}"']
        expr = f"{_ATOMICS[kind]}({', '.join(args)})"
        if kind in ("umax", "umin"):
            expr = self.signed(expr, elem)
        self.assign(op, expr)

    @emit.register
    def _(self, op: tt.DotOp) -> None:
        args = [self.val(op.a), self.val(op.b), f"acc={self.val(op.c)}"]
        if isinstance(element_of(op.a.type), Float32Type):
            # Triton reads the precision of f32 operands only; 16-bit ones
            # multiply in their own type (Inductor prints none for them).
            args.append(f'input_precision="{op.input_precision.data}"')
        out = element_of(op.c.type)
        if not isinstance(out, Float32Type):
            args.append(f"out_dtype={dtype(out)}")
        self.assign(op, f"tl.dot({', '.join(args)})")

    @emit.register
    def _(self, op: tt.BitcastOp) -> None:
        to = element_of(op.result.type)
        if isinstance(to, tt.PointerType):
            self.assign(op, f"{self.val(op.src)}.to({dtype(to)})")
        else:
            self.assign(op, f"{self.tval(op.src)}.to({dtype(to)}, bitcast=True)")

    @emit.register
    def _(self, op: tt.FpToFpOp) -> None:
        src, to = element_of(op.src.type), element_of(op.result.type)
        rounding = ""
        if op.rounding.data != "rtne" and _fp_bits(to) < _fp_bits(src):
            # Triton accepts a rounding mode only for narrowing conversions.
            rounding = f', fp_downcast_rounding="{op.rounding.data}"'
        self.assign(op, f"{self.tval(op.src)}.to({dtype(to)}{rounding})")

    @emit.register
    def _(self, op: tt.ExternElementwiseOp) -> None:
        self.uses_libdevice = True
        symbol = op.symbol.data
        if symbol.startswith("__nv_"):
            # A CUDA libdevice symbol: libdevice's Python name drops the prefix and the
            # f32 suffix (__nv_tanhf -> tanh).
            symbol = symbol[len("__nv_") :]
            if isinstance(element_of(op.result.type), Float32Type) and symbol.endswith("f"):
                symbol = symbol[:-1]
        args = ", ".join(self.tval(s) for s in op.srcs)
        self.assign(op, f"libdevice.{symbol}({args})")

    @emit.register
    def _(self, op: tt.PrintOp) -> None:
        args = [repr(op.prefix.data)] + [self.val(a) for a in op.args]
        if op.hex.value.data:
            args.append("hex=True")
        self.line(f"tl.device_print({', '.join(args)})")

    @emit.register
    def _(self, op: tt.DebugBarrierOp) -> None:
        self.line("tl.debug_barrier()")

    @emit.register
    def _(self, op: tt.GridDependencyWaitOp) -> None:
        self.line("tl.extra.cuda.gdc_wait()")

    @emit.register
    def _(self, op: tt.GridDependencyLaunchDependentsOp) -> None:
        self.line("tl.extra.cuda.gdc_launch_dependents()")

    @emit.register
    def _(self, op: tt.AssertOp) -> None:
        self.line(f"tl.device_assert({self.val(op.condition)}, {op.message.data!r})")

    @emit.register
    def _(self, op: tt.CallOp) -> None:
        callee = op.callee.string_value()
        if callee.startswith("libdevice."):
            self.uses_libdevice = True
        elif not callee.startswith("tl.") and callee not in self.func_names:
            _fail(
                f"-t triton: tt.call @{callee} names neither a tl.* function nor a tt.func "
                "of this module"
            )
        self.assign(op, f"{callee}({', '.join(self.val(a) for a in op.args)})")

    @emit.register
    def _(self, op: tt.ReduceOp) -> None:
        axis = op.axis.value.data
        srcs = [self.val(s) for s in op.srcs]
        if self.sum_shortcut and _is_lone_add(op):
            self.assign(op, f"tl.sum({srcs[0]}, {axis})")
            return
        combine = self.outline_combiner(op)
        arg = srcs[0] if len(srcs) == 1 else "(" + ", ".join(srcs) + ")"
        self.assign(op, f"tl.reduce({arg}, {axis}, {combine})")

    @emit.register
    def _(self, op: tt.ScanOp) -> None:
        axis = op.axis.value.data
        srcs = [self.val(s) for s in op.srcs]
        reverse = ", reverse=True" if op.reverse.value.data else ""
        if self.sum_shortcut and _is_lone_add(op):
            self.assign(op, f"tl.cumsum({srcs[0]}, {axis}{reverse})")
            return
        combine = self.outline_combiner(op)
        arg = srcs[0] if len(srcs) == 1 else "(" + ", ".join(srcs) + ")"
        self.assign(op, f"tl.associative_scan({arg}, {axis}, {combine}{reverse})")

    def outline_combiner(self, op: tt.ReduceOp | tt.ScanOp) -> str:
        """Print the combiner region as its own ``@triton.jit`` function; its name."""
        outer = self.scope
        name = f"{self.kernel}_combine{len(self.combiners)}"
        self.func_names.add(name)
        self.scope = _Scope()
        block = op.combine_op.block
        n = len(op.srcs)
        args = [self.define(a, f"{'ab'[i // n]}{i % n}") for i, a in enumerate(block.args)]
        for inner in block.ops:
            if isinstance(inner, tt.ReduceReturnOp | tt.ScanReturnOp):
                self.line("return " + ", ".join(self.val(v) for v in inner.result))
            else:
                self.emit(inner)
        text = "\n".join([f"@triton.jit\ndef {name}({', '.join(args)}):", *self.scope.lines])
        self.scope = outer
        self.combiners.append(text)
        return name

    # arith ------------------------------------------------------------------

    @emit.register
    def _(self, op: arith.ConstantOp) -> None:
        value, t = op.value, op.result.type
        if _splat_literal(op.result) is not None and all(
            isinstance(use.operation, tt.LoadOp) and use.operation.other is op.result
            for use in op.result.uses
        ):
            return  # only ever a load's `other`, printed inline there
        if isinstance(t, TensorType):
            if not isinstance(value, DenseIntOrFPElementsAttr):
                _fail(f"-t triton: cannot print the constant {value}")
            splat = splat_value(value)
            if splat is None:
                _fail("-t triton prints only splat tensor constants (dense<v>)")
            lit = _scalar_literal(splat, element_of(t))
            self.assign(op, f"tl.full({_shape(t)}, {lit}, {dtype(t)})")
            return
        if not isinstance(value, IntegerAttr | FloatAttr):
            _fail(f"-t triton: cannot print the constant {value}")
        lit = _scalar_literal(value.value.data, t)
        if _literal_is_exact(t) and "float(" not in lit:
            # Python int/float literals are i32/f32 in Triton: inline them.
            self.scope.literals[op.result] = lit
        else:
            self.assign(op, f"tl.full([], {lit}, {dtype(t)})")

    @emit.register(
        arith.AddiOp
        | arith.AddfOp
        | arith.SubiOp
        | arith.SubfOp
        | arith.MuliOp
        | arith.MulfOp
        | arith.DivfOp
        | arith.DivSIOp
        | arith.RemSIOp
        | arith.AndIOp
        | arith.OrIOp
        | arith.XOrIOp
        | arith.ShLIOp
        | arith.ShRSIOp
    )
    def _(self, op: Operation) -> None:
        a, b = self.operands(*op.operands)
        self.assign(op, f"{a} {_INFIX[type(op)]} {b}")

    @emit.register(arith.DivUIOp | arith.RemUIOp | arith.ShRUIOp)
    def _(self, op: Operation) -> None:
        a, b = (self.unsigned(v) for v in op.operands)
        self.assign(op, self.signed(f"{a} {_UNSIGNED_INFIX[type(op)]} {b}", op.result.type))

    @emit.register
    def _(self, op: arith.FloorDivSIOp) -> None:
        a, b = self.operands(op.operands[0], op.operands[1])
        # Truncated quotient, one less where the remainder is nonzero and the signs differ.
        q, inexact = f"{a} // {b}", f"({a} % {b} != 0)"
        self.assign(op, f"tl.where({inexact} & (({a} ^ {b}) < 0), {q} - 1, {q})")

    @emit.register
    def _(self, op: arith.CeilDivSIOp) -> None:
        a, b = self.operands(op.operands[0], op.operands[1])
        q, inexact = f"{a} // {b}", f"({a} % {b} != 0)"
        self.assign(op, f"tl.where({inexact} & (({a} ^ {b}) >= 0), {q} + 1, {q})")

    @emit.register
    def _(self, op: arith.CeilDivUIOp) -> None:
        a, b = self.unsigned(op.operands[0]), self.unsigned(op.operands[1])
        q = f"tl.where({a} % {b} != 0, {a} // {b} + 1, {a} // {b})"
        self.assign(op, self.signed(q, op.result.type))

    @emit.register
    def _(self, op: arith.NegfOp) -> None:
        # Not `-x`: Triton 3.6 lowers unary minus to `0 - x`, which turns -0.0 into +0.0.
        self.assign(op, f"{self.tval(op.operands[0])} * -1.0")

    @emit.register(arith.MaxSIOp | arith.MinSIOp | arith.MaxnumfOp | arith.MinnumfOp)
    def _(self, op: Operation) -> None:
        a, b = self.ordered(*op.operands)
        self.assign(op, self.narrowed(f"{_MIN_MAX[type(op)]}({a}, {b})", op.result.type))

    @emit.register(arith.MaximumfOp | arith.MinimumfOp)
    def _(self, op: Operation) -> None:
        a, b = self.ordered(*op.operands)
        fn = "tl.maximum" if isinstance(op, arith.MaximumfOp) else "tl.minimum"
        expr = f"{fn}({a}, {b}, propagate_nan=tl.PropagateNan.ALL)"
        self.assign(op, self.narrowed(expr, op.result.type))

    @emit.register(arith.MaxUIOp | arith.MinUIOp)
    def _(self, op: Operation) -> None:
        a, b = (self.unsigned(v) for v in op.operands)
        fn = "tl.maximum" if isinstance(op, arith.MaxUIOp) else "tl.minimum"
        self.assign(op, self.signed(f"{fn}({a}, {b})", op.result.type))

    @emit.register
    def _(self, op: arith.CmpiOp) -> None:
        pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        if pred in _CMPI and _width(op.operands[0].type) != 1:
            a, b = self.operands(op.operands[0], op.operands[1])
            self.assign(op, f"{a} {_CMPI[pred]} {b}")
        elif pred in ("eq", "ne"):
            a, b = self.operands(op.operands[0], op.operands[1])
            self.assign(op, f"{a} {_CMPI[pred]} {b}")
        elif pred in _CMPI_UNSIGNED:
            a, b = self.unsigned(op.operands[0]), self.unsigned(op.operands[1])
            self.assign(op, f"{a} {_CMPI_UNSIGNED[pred]} {b}")
        else:
            # Signed order of i1: true is -1.
            a, b = (f"(0 - {self.tval(v)}.to(tl.int32))" for v in (op.operands[0], op.operands[1]))
            self.assign(op, f"{a} {_CMPI[pred]} {b}")

    @emit.register
    def _(self, op: arith.CmpfOp) -> None:
        pred = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
        a, b = self.ordered(op.operands[0], op.operands[1])
        if pred in _CMPF:
            expr = f"{a} {_CMPF[pred]} {b}"
        elif pred in _CMPF_NEGATED:
            expr = f"~({a} {_CMPF_NEGATED[pred]} {b})"
        elif pred == "one":
            expr = f"({a} < {b}) | ({a} > {b})"
        elif pred == "ueq":
            expr = f"~(({a} < {b}) | ({a} > {b}))"
        elif pred == "uno":
            expr = f"({a} != {a}) | ({b} != {b})"
        elif pred == "ord":
            expr = f"({a} == {a}) & ({b} == {b})"
        else:  # false / true
            value = "1" if pred == "true" else "0"
            expr = f"tl.full({_shape(op.result.type)}, {value}, tl.int1)"
        self.assign(op, expr)

    @emit.register
    def _(self, op: arith.SelectOp) -> None:
        c, a, b = (self.val(v) for v in op.operands)
        if op.operands[0] in self.scope.literals and op.operands[1] in self.scope.literals:
            a = self.tval(op.operands[0])
        self.assign(op, f"tl.where({c}, {a}, {b})")

    @emit.register(
        arith.ExtFOp | arith.TruncFOp | arith.SIToFPOp | arith.FPToSIOp | arith.IndexCastOp
    )
    def _(self, op: Operation) -> None:
        src = op.operands[0]
        to_bf16 = isinstance(element_of(op.result.type), BFloat16Type)
        if isinstance(op, arith.TruncFOp) and to_bf16:
            self.assign(op, self._bf16(self.tval(src), element_of(src.type).bitwidth))
            return
        if isinstance(op, arith.SIToFPOp) and _width(src.type) == 1:
            # sitofp of i1 true is -1.0; Triton converts i1 as unsigned.
            value = f"(0 - {self.tval(src)}.to(tl.int32))"
        else:
            value = self.tval(src)
        if isinstance(op, arith.SIToFPOp) and to_bf16:
            # Integers reach bfloat16 through f32, as eager converts them (and
            # the interpreter's direct int -> bf16 yields garbage bits).
            self.assign(op, self._bf16(f"{value}.to(tl.float32)", 32))
            return
        self.assign(op, f"{value}.to({dtype(op.result.type)})")

    def _bf16(self, x: str, bitwidth: int) -> str:
        """``x`` (a float of ``bitwidth`` bits) rounded to bfloat16 to nearest-even.
        A CUDA kernel's f32 -> bf16 cast already does (``cvt.rn``); Triton's
        interpreter truncates, so kernels for the CPU say it in integer
        arithmetic. Other widths go through f32 (eager's double -> bfloat16 also
        goes through float)."""
        if self.on_gpu and bitwidth == 32:
            return f"{x}.to(tl.bfloat16)"
        if bitwidth != 32:
            x = f"{x}.to(tl.float32)"
        bits = f"{x}.to(tl.uint32, bitcast=True)"
        rounded = f"((({bits} + 0x7FFF + (({bits} >> 16) & 1)) >> 16) << 16)"
        return f"tl.where({x} != {x}, {x}, {rounded}.to(tl.float32, bitcast=True)).to(tl.bfloat16)"

    @emit.register
    def _(self, op: arith.ExtSIOp) -> None:
        src = self.tval(op.operands[0])
        if _width(op.operands[0].type) == 1:
            # Triton widens i1 as unsigned; extsi of true is -1.
            self.assign(op, f"0 - {src}.to({dtype(op.result.type)})")
        else:
            self.assign(op, f"{src}.to({dtype(op.result.type)})")

    @emit.register
    def _(self, op: arith.ExtUIOp) -> None:
        to = dtype(op.result.type)
        if _width(op.operands[0].type) == 1:
            self.assign(op, f"{self.tval(op.operands[0])}.to({to})")
        else:
            self.assign(op, f"{self.unsigned(op.operands[0])}.to({to})")

    @emit.register
    def _(self, op: arith.UIToFPOp) -> None:
        value = self.unsigned(op.operands[0])
        if isinstance(element_of(op.result.type), BFloat16Type):  # as sitofp
            self.assign(op, self._bf16(f"{value}.to(tl.float32)", 32))
            return
        self.assign(op, f"{value}.to({dtype(op.result.type)})")

    @emit.register
    def _(self, op: arith.FPToUIOp) -> None:
        w = _width(op.result.type)
        to = f"tl.uint{w}" if w > 1 else "tl.int1"
        self.assign(op, self.signed(f"{self.tval(op.operands[0])}.to({to})", op.result.type))

    @emit.register
    def _(self, op: arith.TruncIOp) -> None:
        src = self.tval(op.operands[0])
        if _width(op.result.type) == 1:
            # Triton's int -> i1 conversion tests != 0; trunci keeps the low bit.
            self.assign(op, f"({src} & 1) != 0")
        else:
            self.assign(op, f"{src}.to({dtype(op.result.type)})")

    @emit.register
    def _(self, op: arith.BitcastOp) -> None:
        self.assign(op, f"{self.tval(op.operands[0])}.to({dtype(op.result.type)}, bitcast=True)")

    # math -------------------------------------------------------------------

    @emit.register(
        math.ExpOp
        | math.Exp2Op
        | math.LogOp
        | math.Log2Op
        | math.SinOp
        | math.CosOp
        | math.SqrtOp
        | math.RsqrtOp
        | math.ErfOp
        | math.FloorOp
        | math.CeilOp
    )
    def _(self, op: Operation) -> None:
        fn = _F32_ONLY[type(op)]
        src = self.tval(op.operands[0])
        elem = element_of(op.result.type)
        if isinstance(elem, Float16Type | BFloat16Type):
            self.assign(op, f"tl.{fn}({src}.to(tl.float32)).to({dtype(elem)})")
        else:
            self.assign(op, f"tl.{fn}({src})")

    @emit.register(math.AbsFOp | math.AbsIOp)
    def _(self, op: Operation) -> None:
        self.assign(op, f"tl.abs({self.tval(op.operands[0])})")

    @emit.register
    def _(self, op: math.FmaOp) -> None:
        a, b, c = (self.tval(v) for v in op.operands)
        self.assign(op, f"tl.fma({a}, {b}, {c})")

    # scf --------------------------------------------------------------------

    @emit.register
    def _(self, op: scf.ForOp) -> None:
        body = op.body.block
        carried = []
        for init, arg, res in zip(op.iter_args, body.args[1:], op.res):
            name = self.fresh(res.name_hint or arg.name_hint or None)
            self.scope.names[arg] = self.scope.names[res] = name
            self.line(f"{name} = {self.tval(init)}")
            carried.append(name)
        iv = self.define(body.args[0], body.args[0].name_hint or "i")
        bounds = [self.val(op.lb), self.val(op.ub)]
        if self.val(op.step) != "1":
            bounds.append(self.val(op.step))
        self.line(f"for {iv} in range({', '.join(bounds)}):")
        self.nested(body, carried)

    @emit.register
    def _(self, op: scf.IfOp) -> None:
        names = [self.define(r) for r in op.results]
        self.line(f"if {self.val(op.cond)}:")
        self.nested(op.true_region.block, names)
        if op.false_region.blocks and (op.false_region.block.ops.first is not None):
            false_block = op.false_region.block
            if names or len(false_block.ops) > 1:
                self.line("else:")
                self.nested(false_block, names)


def _is_i64(t: Attribute) -> bool:
    return isinstance(t, IndexType) or (isinstance(t, IntegerType) and t.width.data == 64)


def _fp_bits(t: Attribute) -> int:
    return t.bitwidth if hasattr(t, "bitwidth") else 0


def _literal_is_exact(t: Attribute) -> bool:
    return isinstance(t, Float32Type) or (isinstance(t, IntegerType) and t.width.data == 32)


def _scalar_literal(value: float | int, t: Attribute) -> str:
    if isinstance(t, IntegerType | IndexType):
        return _int_literal(int(value), t)
    return _float_literal(float(value), t)


def _splat_literal(value: SSAValue) -> str | None:
    """The Python literal of an i32/f32 splat tensor constant, else None."""
    const = value.owner
    if not isinstance(const, arith.ConstantOp) or not isinstance(
        const.value, DenseIntOrFPElementsAttr
    ):
        return None
    elem = element_of(value.type)
    splat = splat_value(const.value) if _literal_is_exact(elem) else None
    if splat is None:
        return None
    literal = _scalar_literal(splat, elem)
    return None if "float(" in literal else literal


def _is_lone_add(op: tt.ReduceOp | tt.ScanOp) -> bool:
    """A one-operand combiner that only adds its two arguments: ``tl.sum`` (a scan's:
    ``tl.cumsum``) prints it."""
    block = op.combine_op.block
    ops = list(block.ops)
    if len(op.srcs) != 1 or len(ops) != 2:
        return False
    add, ret = ops
    elem = element_of(op.srcs[0].type)
    # tl.sum/tl.cumsum widen integers narrower than 32 bits: keep those general.
    wide = isinstance(elem, Float32Type | Float64Type) or (
        isinstance(elem, IntegerType) and elem.width.data in (32, 64)
    )
    return (
        wide
        and isinstance(add, arith.AddfOp | arith.AddiOp)
        and set(add.operands) == set(block.args)
        and isinstance(ret, tt.ReduceReturnOp | tt.ScanReturnOp)
        and list(ret.result) == [add.result]
    )


def emit_kernels(module: ModuleOp) -> str:
    """The ``@triton.jit`` source of every tt.func of ``module``, without imports."""
    return KernelPrinter(module).print_module() + "\n"


def uses_libdevice(module: ModuleOp) -> bool:
    """Whether the kernels call ``libdevice`` (tt.extern_elementwise or a libdevice call)."""
    for op in module.walk():
        if isinstance(op, tt.ExternElementwiseOp):
            return True
        if isinstance(op, tt.CallOp) and op.callee.string_value().startswith("libdevice."):
            return True
    return False


def header(module: ModuleOp) -> str:
    """The imports the kernels of ``module`` need."""
    lines = ["import triton", "import triton.language as tl"]
    if uses_libdevice(module):
        lines.append("from triton.language.extra import libdevice")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class TritonTarget(Target):
    """``-t triton``: the module's tt.func kernels as an importable Triton source file."""

    name = "triton"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        kernels = emit_kernels(module)
        output.write(header(module) + "\n\n" + kernels)
