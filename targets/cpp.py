"""``-t cpp``: a host module (``host.func`` + ``tt.func`` kernels) as one C++ source
file, the wrapper that runs the compiled Triton kernels without Python
(Inductor's ``cpp_wrapper`` / AOTInductor idea)::

    #include "coil_runtime.h"

    namespace {
    std::string kernel_dir = coil::default_kernel_dir(&kernel_dir);
    // coil_softmax_0(in_ptr0: *fp32, out_ptr0: *fp32, s0: i64)
    coil::Kernel coil_softmax_0("coil_softmax_0", &kernel_dir);

    std::vector<c10::IValue> call(std::vector<c10::IValue>& args) {
      if (args.size() != 1) throw coil::InputError(...);
      at::Tensor arg0_1 = coil::tensor_input(args, 0, "arg0_1");
      args.clear();
      int64_t s0 = arg0_1.size(0);
      coil::check_input("arg0_1", arg0_1, {s0, 64}, {64, 1}, at::ScalarType::Float,
                        at::Device(at::kCUDA, 0));
      c10::DeviceGuard device_guard(at::Device(at::kCUDA, 0));
      at::Tensor buf0 = coil::empty_strided({s0, 64}, {64, 1}, at::ScalarType::Float,
                                            at::Device(at::kCUDA, 0));
      coil_softmax_0.launch(at::Device(at::kCUDA, 0), s0, 1, 1,
                            {coil::ptr(arg0_1), coil::ptr(buf0), coil::i64(s0)});
      return {buf0};
    }
    }  // namespace

    COIL_DEFINE_ENTRY(call, 1, kernel_dir)

The statements mirror ``-t python`` one for one: size symbols bound from the
inputs in the same order (an ``index`` argument with ``coil.symbol``, a size or
stride that is exactly the symbol, a linear size solved, an unbacked size right
after the extern that makes it), input checks, allocations with the ATen C++
API, ``host.free`` as ``reset()`` (the last use), ``host.extern`` regions as
boxed calls through the dispatcher (every schema argument in order, defaults
filled from the schema), launches through ``coil::Kernel`` (runtime/cpp/
coil_runtime.h: the CUDA driver API, the argument layout of Triton's
launcher). Each launch argument's C type comes from the ``tt.func``
signature (:func:`kernel_signature`), which is also the signature the kernels
are compiled with (coil.runtime.cpp_wrapper), so the two cannot disagree.

The file needs nothing of Python: ``coil.runtime.cpp_wrapper`` compiles it and
the kernels' cubins into a shared library that the backend calls through a
small bridge, and that a C++ program loads by itself (examples/run_cpp.cpp).
Outputs are returned flat; the Python shim rebuilds ``coil.output_tree``.

``CppPrinter`` holds all naming state and prints one op per small method; the
text depends only on the IR, so the build cache may key on its hash.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import singledispatchmethod
from typing import IO, Any

import sympy
import torch
from torch.utils._sympy.functions import FloorDiv, ModularIndexing, PythonMod
from torch.utils._sympy.functions import Max as TorchMax
from torch.utils._sympy.functions import Min as TorchMin
from torch.utils._sympy.functions import Mod as TorchMod
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import (
    ArrayAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    NoneAttr,
    StringAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from coil.dialects import dtypes, tt
from coil.dialects import host as H
from coil.dialects.aten import (
    AtenOp,
    ConstantOp,
    OperandRefAttr,
    OperatorOp,
    TensorConstantOp,
    TensorType,
)
from coil.dialects.aten_schema import Kind, argument_kinds, parse_enum
from coil.dialects.buffer import BufferType
from coil.dialects.symbolic import ExprAttr, ShapeAttr, to_expr
from coil.ir import short_lines, source_line
from coil.targets.lifetimes import released_after
from coil.targets.python_values import attr_symbols, symbols_of
from coil.targets.scalar_inputs import moved_to_device

RUNTIME_HEADER = "coil_runtime.h"

_CPP_KEYWORDS = set(
    """alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
    char16_t char32_t class compl concept const consteval constexpr constinit const_cast
    continue co_await co_return co_yield decltype default delete do double dynamic_cast else
    enum explicit export extern false float for friend goto if inline int long mutable
    namespace new noexcept not not_eq nullptr operator or or_eq private protected public
    register reinterpret_cast requires return short signed sizeof static static_assert
    static_cast struct switch template this thread_local throw true try typedef typeid
    typename union unsigned using virtual void volatile wchar_t while xor xor_eq""".split()
)

# Names generated code uses itself: never a value's name.
_RESERVED = _CPP_KEYWORDS | {
    "args",
    "call",
    "coil",
    "at",
    "c10",
    "std",
    "kernel_dir",
    "device_guard",
    "int64_t",
    "int32_t",
    "main",
    "NULL",
    "errno",
    "assert",
}

# torch dtype -> c10::ScalarType enumerator.
_SCALAR_TYPES = {
    torch.float32: "Float",
    torch.float64: "Double",
    torch.float16: "Half",
    torch.bfloat16: "BFloat16",
    torch.int64: "Long",
    torch.int32: "Int",
    torch.int16: "Short",
    torch.int8: "Char",
    torch.uint8: "Byte",
    torch.bool: "Bool",
    torch.complex64: "ComplexFloat",
    torch.complex128: "ComplexDouble",
    torch.complex32: "ComplexHalf",
    torch.uint16: "UInt16",
    torch.uint32: "UInt32",
    torch.uint64: "UInt64",
    torch.float8_e4m3fn: "Float8_e4m3fn",
    torch.float8_e5m2: "Float8_e5m2",
    torch.float8_e4m3fnuz: "Float8_e4m3fnuz",
    torch.float8_e5m2fnuz: "Float8_e5m2fnuz",
}
_LAYOUTS = {torch.strided: "Strided", torch.sparse_coo: "Sparse", torch._mkldnn: "Mkldnn"}
_MEMORY_FORMATS = {
    torch.contiguous_format: "Contiguous",
    torch.preserve_format: "Preserve",
    torch.channels_last: "ChannelsLast",
    torch.channels_last_3d: "ChannelsLast3d",
}

# Triton's names for the element types a kernel pointer or scalar may have.
_TRITON_TYPES = {
    "f32": "fp32",
    "f16": "fp16",
    "bf16": "bf16",
    "f64": "fp64",
    "i1": "i1",
    "i8": "i8",
    "i16": "i16",
    "i32": "i32",
    "i64": "i64",
    "ui8": "u8",
    "ui16": "u16",
    "ui32": "u32",
    "ui64": "u64",
    "f8E4M3FN": "fp8e4nv",
    "f8E5M2": "fp8e5",
}

# A scalar kernel argument's Triton type -> the runtime's Arg constructor (the C
# type Triton's launcher passes: ty_to_cpp plus its packing of floats).
_SCALAR_ARGS = {
    "i64": "coil::i64",
    "u64": "coil::i64",
    "i32": "coil::i32",
    "u32": "coil::i32",
    "i16": "coil::i16",
    "u16": "coil::i16",
    "i8": "coil::i8",
    "u8": "coil::i8",
    "i1": "coil::i8",
    "fp32": "coil::f32",
    "fp64": "coil::f64",
}


class CppTargetError(DiagnosticException):
    """The module cannot be printed as a C++ host program (the message says why)."""


def kernel_signature(fn: tt.FuncOp) -> dict[str, str]:
    """The kernel's Triton signature, argument name -> type (``*fp32``, ``i64``): what
    the kernel is compiled with and what decides each launch argument's C type."""
    out: dict[str, str] = {}
    names = [a.name_hint or f"arg{i}" for i, a in enumerate(fn.body.block.args)]
    for name, t in zip(names, fn.function_type.inputs.data):
        if isinstance(t, tt.PointerType):
            out[name] = "*" + _triton_type(t.pointee_type, fn)
        else:
            out[name] = _triton_type(t, fn)
    return out


def _triton_type(t: Attribute, fn: tt.FuncOp) -> str:
    text = str(t)
    if isinstance(t, IntegerType) and t.signedness.data.name == "UNSIGNED":
        text = f"ui{t.width.data}"
    if text not in _TRITON_TYPES:
        raise CppTargetError(
            f"-t cpp: kernel @{fn.sym_name.data} takes an argument of type {t}, which the "
            "C++ launcher cannot pass"
        )
    return _TRITON_TYPES[text]


# ---- expressions ----------------------------------------------------------------------

_ATOM, _MUL, _ADD = 3, 2, 1


def cpp_expr(expr: Any, names: dict[sympy.Symbol, str] | None = None) -> str:
    """A size expression as C++ over int64_t symbols (``floordiv``/``mod`` with Python's
    rounding through ``coil::floordiv``/``coil::mod``)."""
    return _cpp(to_expr(expr), names or {})[0]


def _cpp(e: sympy.Expr, names: dict[sympy.Symbol, str]) -> tuple[str, int]:
    if e.is_Integer:
        value = int(e)
        text = str(value) if -(2**31) <= value < 2**31 else f"int64_t{{{value}LL}}"
        return text, _ATOM if value >= 0 else _ADD
    if e.is_Symbol:
        return names.get(e, e.name), _ATOM
    if isinstance(e, sympy.Add):
        terms = e.as_ordered_terms()
        text = _wrap(_cpp(terms[0], names), _ADD)
        for term in terms[1:]:
            if term.as_coeff_Mul()[0] < 0:
                text += " - " + _wrap(_cpp(-term, names), _MUL + 1)
            else:
                text += " + " + _wrap(_cpp(term, names), _ADD)
        return text, _ADD
    if isinstance(e, sympy.Mul):
        coeff, rest = e.as_coeff_Mul()
        if not coeff.is_Integer:
            raise CppTargetError(f"-t cpp: non-integer coefficient in size expression {e}")
        if coeff < 0:
            return "-" + _wrap(_cpp(-e, names), _ATOM), _ADD
        factors = [_wrap(_cpp(f, names), _MUL) for f in e.as_ordered_factors()]
        return "*".join(factors), _MUL
    if isinstance(e, sympy.Pow):
        base, exp = e.args
        if not (exp.is_Integer and int(exp) > 0):
            raise CppTargetError(f"-t cpp: cannot print power {e}")
        return "*".join([_wrap(_cpp(base, names), _ATOM)] * int(exp)), _MUL
    if isinstance(e, FloorDiv):
        a, b = e.args
        return f"coil::floordiv({_cpp(a, names)[0]}, {_cpp(b, names)[0]})", _ATOM
    if isinstance(e, PythonMod | TorchMod | sympy.Mod):
        a, b = e.args
        return f"coil::mod({_cpp(a, names)[0]}, {_cpp(b, names)[0]})", _ATOM
    if isinstance(e, ModularIndexing):
        base, div, mod = e.args
        return _cpp(PythonMod(FloorDiv(base, div), mod), names)
    if isinstance(e, sympy.Max | sympy.Min | TorchMax | TorchMin):
        fname = "max" if isinstance(e, sympy.Max | TorchMax) else "min"
        args = ", ".join(f"int64_t({_cpp(a, names)[0]})" for a in e.args)
        return f"std::{fname}({{{args}}})", _ATOM
    raise CppTargetError(f"-t cpp: cannot print size expression {e} ({type(e).__name__})")


def _wrap(part: tuple[str, int], min_prec: int) -> str:
    text, prec = part
    return f"({text})" if prec < min_prec else text


def cpp_string(text: str) -> str:
    """A C++ string literal (non-printable and non-ASCII bytes as octal escapes)."""
    out = []
    for byte in text.encode():
        ch = chr(byte)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= byte < 127 and ch != "?":  # "?" would start a trigraph in old modes
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def cpp_double(value: float) -> str:
    if math.isnan(value):
        return "std::numeric_limits<double>::quiet_NaN()"
    if math.isinf(value):
        inf = "std::numeric_limits<double>::infinity()"
        return inf if value > 0 else "-" + inf
    text = repr(float(value))
    return text if any(c in text for c in ".en") else text + ".0"


def cpp_scalar_type(dtype: torch.dtype) -> str:
    if dtype not in _SCALAR_TYPES:
        raise CppTargetError(f"-t cpp: dtype {dtype} has no C++ ScalarType here")
    return f"at::ScalarType::{_SCALAR_TYPES[dtype]}"


def cpp_device(device: torch.device | str) -> str:
    d = torch.device(device)
    if d.type == "cuda":
        return f"at::Device(at::kCUDA, {d.index or 0})"
    if d.type == "cpu":
        return "at::Device(at::kCPU)"
    raise CppTargetError(f"-t cpp: device {d} is neither cpu nor cuda")


def _ints(items: Sequence[str]) -> str:
    return "{" + ", ".join(items) + "}"


# ---- the printer ----------------------------------------------------------------------


class CppPrinter:
    """Prints one ``host.func`` (and declarations of the module's kernels) as C++."""

    def __init__(self, module: ModuleOp, fn: H.FuncOp):
        self.module = module
        self.fn = fn
        self.lines: list[str] = []
        self.names: dict[SSAValue, str] = {}
        # Region values that are not tensors (scalars an aten op returned): c10::IValue.
        self.scalars: set[SSAValue] = set()
        self.used: set[str] = set(_RESERVED)
        self.bound: set[sympy.Symbol] = set()
        self.fresh: set[SSAValue] = set()
        self.counters: dict[str, int] = {}
        self.hints: dict[SSAValue, str | None] = {}
        self.kernels: dict[str, tt.FuncOp] = {}
        self.kernel_lines: dict[str, list[str]] = {}
        self.ops: dict[str, tuple[str, str]] = {}  # handle function -> (name, overload)
        self.tuners: dict[str, str] = {}  # autotune key -> Autotuner object name
        self.semaphores: list[tuple[str, str]] = []  # host.semaphores: (object, n)
        for op in module.ops:
            if isinstance(op, tt.FuncOp):
                self.kernels[op.sym_name.data] = op
                self.used.add(op.sym_name.data)
                lines = op.attributes.get("coil.source_lines")
                if isinstance(lines, ArrayAttr):
                    self.kernel_lines[op.sym_name.data] = [s.data for s in lines.data]
        self.symbols = symbols_of(fn)
        self.used |= {s.name for s in self.symbols}
        self.guard_device = self._first_cuda_device()

    def _first_cuda_device(self) -> str | None:
        for op in [self.fn, *self.fn.walk()]:
            values = [*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)]
            for v in values:
                if isinstance(v.type, BufferType) and v.type.device.type == "cuda":
                    return str(v.type.device)
        return None

    # ---- naming ------------------------------------------------------------

    def fresh_name(self, hint: str | None, default: str) -> str:
        base = re.sub(r"\W", "_", hint or "")
        if base[:1].isdigit():
            base = "_" + base
        if base.startswith("__") or re.match(r"_[A-Z]", base):
            base = "v" + base  # reserved for the implementation in C++
        if base and base not in _CPP_KEYWORDS:
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
            raise CppTargetError(f"-t cpp: a value of type {value.type} is used undefined")
        return self.names[value]

    def emit(self, line: str, indent: int = 1) -> None:
        self.lines.append("  " * indent + line)

    def emit_source(self, lines: Sequence[str | None]) -> None:
        lines = [t for t in lines if t is not None]
        if lines:
            self.emit(f"// {short_lines(list(lines))}")

    # ---- size symbols ------------------------------------------------------

    def expr(self, e: Any) -> str:
        e = to_expr(e)
        missing = sorted(s.name for s in e.free_symbols - self.bound)
        if missing:
            raise CppTargetError(
                f"-t cpp: size symbol(s) {', '.join(missing)} of @{self.fn.sym_name.data} "
                "are not bound by its inputs (nor by an extern's result)"
            )
        return cpp_expr(e)

    def exprs(self, es: Sequence[Any]) -> str:
        return _ints([self.expr(e) for e in es])

    def bind_from(self, value: SSAValue, t: Attribute) -> None:
        """Bind the symbols that are exactly a size (then a stride) of ``value``."""
        if not isinstance(t, BufferType):
            return
        for method, dims in (("size", t.shape_attr.data), ("stride", t.strides_attr.data)):
            for d, e in enumerate(dims):
                e = to_expr(e)
                if e.is_Symbol and e not in self.bound:
                    self.emit(f"int64_t {e.name} = {self.name(value)}.{method}({d});")
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
                    num = f"{size} - {_paren(cpp_expr(b))}" if b != 0 else size
                    value = f"coil::floordiv({num}, {int(a)})" if int(a) != 1 else num
                    self.emit(f"int64_t {s.name} = {value};")
                    self.bound.add(s)
                    progress = True

    # ---- the file ------------------------------------------------------------------

    def print_file(self) -> str:
        fn = self.fn
        self.print_call()
        head = [
            f"// Generated by coil (-t cpp): the C++ wrapper of @{fn.sym_name.data}, launching",
            "// its Triton kernels through the CUDA driver API (runtime/cpp/coil_runtime.h).",
            "// coil.runtime.cpp_wrapper builds it, with the kernels' cubins, into a shared",
            "// library: coil_run(args, outputs, error) takes the inputs in order and returns",
            "// the outputs flat.",
            "",
            f'#include "{RUNTIME_HEADER}"',
            "",
            "namespace {",
            "",
            "// The .cubin/.meta files: kernels/ beside this library (coil_set_kernel_dir).",
            "std::string kernel_dir = coil::default_kernel_dir(&kernel_dir);",
        ]
        for name, kernel in self.kernels.items():
            sig = ", ".join(f"{k}: {v}" for k, v in kernel_signature(kernel).items())
            head.append("")
            head.append(f"// {name}({sig})")
            head.append(f'coil::Kernel {name}("{name}", &kernel_dir);')
        for handle, (op_name, overload) in self.ops.items():
            head += [
                "",
                f"const c10::OperatorHandle& {handle}() {{",
                f"  static const c10::OperatorHandle op = coil::find_op("
                f"{cpp_string(op_name)}, {cpp_string(overload)});",
                "  return op;",
                "}",
            ]
        for tuner in self.tuners.values():
            head += ["", f"coil::Autotuner {tuner};"]
        for state, n in self.semaphores:
            head += ["", f"coil::Semaphores {state}({n});"]
        tail = [
            "",
            "}  // namespace",
            "",
            f"COIL_DEFINE_ENTRY(call, {len(fn.args)}, kernel_dir)",
        ]
        return "\n".join([*head, "", *self.lines, *tail]) + "\n"

    def print_call(self) -> None:
        fn = self.fn
        args = list(fn.args)
        self.lines.append("std::vector<c10::IValue> call(std::vector<c10::IValue>& args) {")
        self.emit(f"if (args.size() != {len(args)}) {{")
        self.emit(
            f'throw coil::InputError(coil::cat("call takes {len(args)} inputs, got ", '
            "args.size()));",
            2,
        )
        self.emit("}")
        for k, arg in enumerate(args):
            name = self.define(arg, "arg")
            if isinstance(arg.type, BufferType):
                self.emit(f'at::Tensor {name} = coil::tensor_input(args, {k}, "{name}");')
            elif isinstance(arg.type, builtin.IndexType | IntegerType):
                self.emit(f'int64_t {name} = coil::int_input(args, {k}, "{name}");')
            else:
                raise CppTargetError(
                    f"-t cpp: input #{k} of @{fn.sym_name.data} has type {arg.type}; the C++ "
                    "wrapper takes tensors and sizes"
                )
        self.emit("args.clear();")
        arg_attrs = fn.arg_attrs.data if fn.arg_attrs is not None else [None] * len(args)
        for arg, attrs in zip(args, arg_attrs):
            sym = attrs.data.get("coil.symbol") if attrs is not None else None
            if isinstance(sym, ExprAttr) and sym.data.is_Symbol and sym.data not in self.bound:
                self.emit(f"int64_t {sym.data.name} = {self.name(arg)};")
                self.bound.add(sym.data)
        for arg in args:
            self.bind_from(arg, arg.type)
        self.bind_derived(args)
        for arg in args:
            t = arg.type
            if isinstance(t, BufferType):
                self.emit(
                    f'coil::check_input("{self.name(arg)}", {self.name(arg)}, '
                    f"{self.exprs(t.shape_attr.data)}, {self.exprs(t.strides_attr.data)}, "
                    f"{cpp_scalar_type(t.dtype)}, {cpp_device(t.device)});"
                )
                if moved_to_device(arg):
                    # check_input lets a 0-d CPU tensor stand for a CUDA scalar.
                    name = self.name(arg)
                    self.emit(f"{name} = {name}.to({cpp_device(t.device)});")
        # The graph is a pure function of its inputs: ATen builds no autograd
        # graph for the calls, and an out= call (memory-plan's GEMMs) is legal
        # on inputs that require grad (C++ callers run with grad mode on).
        self.emit("at::NoGradGuard no_grad;")
        if self.guard_device is not None:
            # Kernels load into, and launch on, the current device's context.
            self.emit(f"c10::DeviceGuard device_guard({cpp_device(self.guard_device)});")
        # Views and reused buffers are released at their last read
        # (targets/lifetimes.py), or a handle would keep a storage alive to the
        # end of the call.
        ops = list(fn.body.block.ops)
        released = released_after(ops, list(fn.args))
        for i, op in enumerate(ops):
            self.print_op(op)
            for v in released.get(i, []):
                self.emit(f"{self.name(v)}.reset();")
        self.lines.append("}")

    # ---- ops -------------------------------------------------------------------

    @singledispatchmethod
    def print_op(self, op: Operation) -> None:
        raise CppTargetError(f"-t cpp: no printer for {op.name} in a host.func")

    @print_op.register
    def _(self, op: H.EmptyStridedOp) -> None:
        t = op.result.type
        name = self.define(op.result)
        self.fresh.add(op.result)
        sizes, strides = self.exprs(t.shape_attr.data), self.exprs(t.strides_attr.data)
        where = f"{cpp_scalar_type(t.dtype)}, {cpp_device(t.device)}"
        if to_expr(t.offset_attr.data) == 0:
            self.emit(f"at::Tensor {name} = coil::empty_strided({sizes}, {strides}, {where});")
        else:
            numel = self.expr(t.storage_numel())
            offset = self.expr(t.offset_attr.data)
            self.emit(
                f"at::Tensor {name} = coil::empty_with_offset({numel}, {sizes}, {strides}, "
                f"{offset}, {where});"
            )

    @print_op.register
    def _(self, op: H.ReinterpretOp) -> None:
        src, t = op.source, op.result.type
        src_name = self.name(src)
        name = self.define(op.result, "view")
        sizes, strides = self.exprs(t.shape_attr.data), self.exprs(t.strides_attr.data)
        offset = to_expr(t.offset_attr.data)
        if src in self.fresh:
            # A fresh allocation's storage starts at 0: the type's offset is absolute.
            self.fresh.add(op.result)
            off = self.expr(offset)
        else:
            # An input or ATen result may start anywhere in its storage.
            delta = sympy.expand(offset - to_expr(src.type.offset_attr.data))
            off = f"{src_name}.storage_offset()"
            if delta != 0:
                off += f" + {_paren(self.expr(delta))}"
        self.emit(f"at::Tensor {name} = {src_name}.as_strided({sizes}, {strides}, {off});")

    @print_op.register
    def _(self, op: H.FreeOp) -> None:
        self.emit(f"{self.name(op.buffer)}.reset();")

    @print_op.register
    def _(self, op: H.SemaphoresOp) -> None:
        # The module keeps the counters (zero between launches), one set per stream.
        t = op.result.type
        state = f"sems{len(self.semaphores)}"
        self.semaphores.append((state, self.expr(t.shape_attr.data[0])))
        name = self.define(op.result, "sem")
        self.emit(f"at::Tensor {name} = {state}.on({cpp_device(t.device)});")

    @print_op.register
    def _(self, op: H.SeedOp) -> None:
        name = self.define(op.result, "seed")
        self.emit(f"int64_t {name} = coil::draw_seed();")

    @print_op.register
    def _(self, op: H.LaunchOp) -> None:
        self.emit_source(self.kernel_lines.get(op.kernel_name) or [source_line(op.location)])
        self.emit(self.launch_call(op) + ";")

    @print_op.register
    def _(self, op: H.AutotuneOp) -> None:
        launches = op.launches
        symbols: set[sympy.Symbol] = set()
        for launch in launches:
            symbols |= attr_symbols(launch.grid) | attr_symbols(launch.scalars)
        sizes = _ints([self.expr(s) for s in sorted(symbols, key=lambda s: s.name)])
        key = op.key.data
        tuner = self.tuners.get(key)
        if tuner is None:
            tuner = self.tuners[key] = self.fresh_name(f"autotune_{key}", "autotune")
        device = self.launch_device(launches[0])
        self.emit(f"{tuner}.run({cpp_device(device)}, {sizes}, {{")
        for launch in launches:
            self.emit(f"[&] {{ {self.launch_call(launch)}; }},", 2)
        self.emit("});")

    @print_op.register
    def _(self, op: H.VariantsOp) -> None:
        # host.variants: the first launch whose bound the size is within, else the last.
        size = self.expr(op.size.data)
        launches, bounds = op.launches, op.bound_values
        for k, launch in enumerate(launches):
            if k < len(bounds):
                head = "if" if k == 0 else "} else if"
                self.emit(f"{head} ({size} <= {bounds[k]}) {{")
            else:
                self.emit("} else {")
            self.emit(f"    {self.launch_call(launch)};")
        self.emit("}")

    def launch_device(self, op: H.LaunchOp) -> str:
        devices = {str(a.type.device) for a in op.args if isinstance(a.type, BufferType)}
        gpu = sorted(d for d in devices if d != "cpu")
        return gpu[0] if gpu else "cpu"

    def launch_call(self, op: H.LaunchOp) -> str:
        """``kernel.launch(device, gx, gy, gz, {args})``: one launch; each argument's C
        type is the kernel signature's."""
        kernel = self.kernels.get(op.kernel_name)
        if kernel is None:
            raise CppTargetError(f"-t cpp: host.launch names @{op.kernel_name}, no tt.func here")
        signature = list(kernel_signature(kernel).values())
        n = len(op.args) + len(op.scalars.data)
        if n != len(signature):
            raise CppTargetError(
                f"-t cpp: host.launch of @{op.kernel_name} passes {n} argument(s); the kernel "
                f"takes {len(signature)}"
            )
        device = self.launch_device(op)
        values: list[str] = []
        for a, ty in zip(op.args, signature):
            if isinstance(a.type, BufferType):
                if not ty.startswith("*"):
                    raise CppTargetError(
                        f"-t cpp: @{op.kernel_name} takes {ty} where the launch passes a buffer"
                    )
                name = self.name(a)
                if device != "cpu" and str(a.type.device) == "cpu":
                    # A CPU scalar tensor read by a GPU kernel: copied to the device.
                    name = f"{name}.to({cpp_device(device)}, {name}.scalar_type())"
                values.append(f"coil::ptr({name})")
            else:
                values.append(self.scalar_arg(op, ty, self.name(a)))
        for e, ty in zip(op.scalars.data, signature[len(op.args) :]):
            values.append(self.scalar_arg(op, ty, self.expr(e)))
        grid = ", ".join(self.expr(g) for g in op.grid.data)
        return f"{op.kernel_name}.launch({cpp_device(device)}, {grid}, {{{', '.join(values)}}})"

    def scalar_arg(self, op: H.LaunchOp, ty: str, value: str) -> str:
        if ty not in _SCALAR_ARGS:
            raise CppTargetError(
                f"-t cpp: @{op.kernel_name} takes {ty} where the launch passes a scalar"
            )
        return f"{_SCALAR_ARGS[ty]}({value})"

    @print_op.register
    def _(self, op: ConstantOp) -> None:
        # A scalar outside any extern (a size a forward graph returns): used where
        # it is returned.
        self.names[op.result] = self.ivalue(op.python_value, None)
        self.scalars.add(op.result)

    @print_op.register
    def _(self, op: H.ReturnOp) -> None:
        outs = []
        for v in op.values:
            name = self.name(v)
            outs.append(name if v in self.scalars else f"c10::IValue({name})")
        self.emit(f"return {{{', '.join(outs)}}};")

    @print_op.register
    def _(self, op: H.ExternOp) -> None:
        self.emit_source([source_line(op.location)])
        block = op.body.block
        for arg, operand in zip(block.args, op.args):
            self.names[arg] = self.name(operand)
        term = block.last_op
        assert isinstance(term, H.YieldOp)
        self.hints = {}
        for r, v in zip(op.res, term.values):
            if v not in block.args and v not in self.hints:
                self.hints[v] = r.name_hint or v.name_hint
        for inner in block.ops:
            if inner is not term:
                self.print_aten(inner)
        taken: set[SSAValue] = set()
        for r, v in zip(op.res, term.values):
            if v in self.scalars:
                raise CppTargetError(
                    f"-t cpp: host.extern {op.kernel_name} yields a scalar; results are buffers"
                )
            if v in block.args or v in taken:
                self.emit(f"at::Tensor {self.define(r)} = {self.name(v)};")
            else:
                self.names[r] = self.name(v)
            taken.add(v)
        for r in op.res:
            self.bind_from(r, r.type)

    # ---- aten ops inside an extern region ------------------------------------

    def print_aten(self, op: Operation) -> None:
        if isinstance(op, ConstantOp):
            self.names[op.result] = self.ivalue(op.python_value, None)
            self.scalars.add(op.result)
            return
        if isinstance(op, TensorConstantOp):
            self.print_tensor_constant(op)
            return
        if isinstance(op, AtenOp):
            overload = op.overload()
            stack = self.aten_stack(op, overload)
        elif isinstance(op, OperatorOp):
            overload = op.resolve()
            if overload is None:
                raise CppTargetError(
                    f"-t cpp: operator {op.overload_name.data} is not registered in this process"
                )
            stack = self.operator_stack(op, overload)
        else:
            raise CppTargetError(f"-t cpp: {op.name} cannot be called in a host.extern")
        handle = self.op_handle(overload)
        call = f"coil::call_op({handle}(), {{{', '.join(stack)}}})"
        results = list(op.results)
        returns = overload._schema.returns
        if not results or (
            len(results) == 1 and not results[0].uses and _returns_written_argument(returns)
        ):
            # (an ``out=`` call of memory-plan's: its readers read the buffer it writes)
            self.emit(call + ";")
            return
        names = []
        for r in results:
            names.append(self.fresh_name(self.hints.get(r, r.name_hint), "buf"))
            self.names[r] = names[-1]
        # As the Python wrapper: an IR value never holds a list; a list return's
        # elements are the op's results.
        one_list = len(returns) == 1 and isinstance(returns[0].type, torch.ListType)
        if len(results) == 1 and not one_list:
            result = results[0]
            self.emit(f"{self.declare(result, names[0])} = {call}[0]{self.convert(result)};")
            return
        out = self.fresh_name(f"{names[0]}_out", "out")
        self.emit(f"auto {out} = {call};")
        if one_list:
            items = self.fresh_name(f"{names[0]}_list", "list")
            self.emit(f"auto {items} = {out}[0].toTensorVector();")
            for k, name in enumerate(names):
                self.emit(f"at::Tensor {name} = {items}[{k}];")
            return
        for k, (r, name) in enumerate(zip(results, names)):
            self.emit(f"{self.declare(r, name)} = {out}[{k}]{self.convert(r)};")

    def declare(self, value: SSAValue, name: str) -> str:
        if _is_tensor(value):
            return f"at::Tensor {name}"
        self.scalars.add(value)
        return f"c10::IValue {name}"

    def convert(self, value: SSAValue) -> str:
        return ".toTensor()" if _is_tensor(value) else ""

    def print_tensor_constant(self, op: TensorConstantOp) -> None:
        t = op.result.type
        values = list(op.value.get_values())
        if t.dtype.is_floating_point:
            kind, items = "double", [cpp_double(float(v)) for v in values]
        else:
            kind, items = "int64_t", [str(int(v)) for v in values]
        name = self.fresh_name(self.hints.get(op.result, op.result.name_hint), "const")
        self.names[op.result] = name
        self.emit(
            f"at::Tensor {name} = coil::constant_tensor<{kind}>({{{', '.join(items)}}}, "
            f"{self.exprs(t.shape)}, {cpp_scalar_type(t.dtype)}, {cpp_device(t.device)});"
        )

    def op_handle(self, overload: torch._ops.OpOverload) -> str:
        schema = overload._schema
        key = (schema.name, schema.overload_name)
        for handle, value in self.ops.items():
            if value == key:
                return handle
        qualified = schema.name.replace("::", "_") + "_" + (schema.overload_name or "default")
        base = "op_" + re.sub(r"\W", "_", qualified)
        handle = self.fresh_name(base, "op")
        self.ops[handle] = key
        return handle

    def aten_stack(self, op: AtenOp, overload: torch._ops.OpOverload) -> list[str]:
        """Every schema argument of a generated aten op, in order, as IValues."""
        specs = {s.name: s for s in op.schema().args}
        groups = op.operand_groups()
        stack = []
        for arg in overload._schema.arguments:
            spec = specs.get(arg.name)
            if spec is None:
                raise CppTargetError(
                    f"-t cpp: {op.name} has no argument '{arg.name}' of its ATen schema"
                )
            if spec.is_operand:
                values = groups[spec.name]
                stack.append(self.tensor_ivalue(values, spec.kind))
            else:
                stack.append(self.ivalue(op.arg(spec.name), spec.kind))
        return stack

    def operator_stack(self, op: OperatorOp, overload: torch._ops.OpOverload) -> list[str]:
        """Every schema argument of an ``aten.operator`` call, in order, as IValues:
        positionals, keywords by name, the rest from the schema's defaults."""
        kinds = argument_kinds(overload)
        schema_args = overload._schema.arguments
        given: dict[str, Attribute] = {}
        positional = [a.name for a in schema_args if not a.kwarg_only]
        for name, attr in zip(positional, op.args.data):
            given[name] = attr
        given.update(op.kwargs.data)
        stack = []
        for arg in schema_args:
            kind = kinds.get(arg.name)
            if arg.name in given:
                stack.append(self.attr_ivalue(op, given[arg.name], kind))
            elif arg.has_default_value():
                stack.append(self.ivalue(arg.default_value, kind))
            else:
                raise CppTargetError(
                    f"-t cpp: {op.overload_name.data} is called without argument '{arg.name}'"
                )
        return stack

    def attr_ivalue(self, op: OperatorOp, attr: Attribute, kind: Kind | None) -> str:
        if isinstance(attr, OperandRefAttr):
            return self.name(op.inputs[attr.data])
        if isinstance(attr, ArrayAttr) and any(isinstance(a, OperandRefAttr) for a in attr.data):
            names = [self.name(op.inputs[a.data]) for a in attr.data]  # a tensor list
            return f"coil::tensor_list({{{', '.join(names)}}})"
        return self.ivalue(_attr_value(attr, kind), kind)

    def tensor_ivalue(self, values: list[SSAValue | None], kind: Kind) -> str:
        names = ["std::nullopt" if v is None else self.name(v) for v in values]
        if kind is Kind.TENSOR:
            if values and values[0] in self.scalars:
                # A scalar where the schema has a Tensor (a folded 0-d constant):
                # a wrapped number, as torch.ops makes of a Python number.
                return f"coil::wrapped_number({names[0]})"
            return names[0] if names else "c10::IValue()"
        if kind is Kind.OPT_TENSOR_LIST:
            return f"coil::optional_tensor_list({{{', '.join(names)}}})"
        return f"coil::tensor_list({{{', '.join(names)}}})"

    def ivalue(self, value: Any, kind: Kind | None) -> str:
        """A non-tensor argument as a ``c10::IValue`` expression of the schema's kind."""
        if value is None:
            return "c10::IValue()"
        if isinstance(value, SSAValue):
            return self.name(value)
        if kind in (Kind.INT_LIST, Kind.FLOAT_LIST, Kind.BOOL_LIST) or isinstance(
            value, list | tuple
        ):
            return self.list_ivalue(list(value), kind)
        if kind is Kind.FLOAT or (kind is None and isinstance(value, float)):
            if isinstance(value, sympy.Expr) and not value.is_number:
                return f"c10::IValue(double({self.expr(value)}))"
            return f"c10::IValue({cpp_double(float(value))})"
        if isinstance(value, bool):
            return f"c10::IValue({'true' if value else 'false'})"
        if isinstance(value, int | sympy.Expr):
            if isinstance(value, sympy.Expr) and not value.is_Integer and value.is_number:
                return f"c10::IValue({cpp_double(float(value))})"
            return f"c10::IValue(int64_t({self.expr(value)}))"
        if isinstance(value, float):
            return f"c10::IValue({cpp_double(value)})"
        if isinstance(value, str):
            return f"c10::IValue(std::string({cpp_string(value)}))"
        if isinstance(value, torch.dtype):
            return f"c10::IValue({cpp_scalar_type(value)})"
        if isinstance(value, torch.layout):
            if value not in _LAYOUTS:
                raise CppTargetError(f"-t cpp: layout {value} has no C++ name here")
            return f"c10::IValue(c10::Layout::{_LAYOUTS[value]})"
        if isinstance(value, torch.memory_format):
            return f"c10::IValue(c10::MemoryFormat::{_MEMORY_FORMATS[value]})"
        if isinstance(value, torch.device):
            return f"c10::IValue({cpp_device(value)})"
        raise CppTargetError(f"-t cpp: cannot pass argument value {value!r} to an ATen op")

    def list_ivalue(self, items: list[Any], kind: Kind | None) -> str:
        if kind is Kind.FLOAT_LIST or (kind is None and any(isinstance(v, float) for v in items)):
            return f"c10::IValue(std::vector<double>{{{', '.join(cpp_double(v) for v in items)}}})"
        if kind is Kind.BOOL_LIST or (kind is None and items and isinstance(items[0], bool)):
            values = ", ".join("true" if v else "false" for v in items)
            return f"c10::IValue(c10::List<bool>({{{values}}}))"
        return f"c10::IValue(std::vector<int64_t>{{{', '.join(self.expr(v) for v in items)}}})"


def _is_tensor(value: SSAValue) -> bool:
    return isinstance(value.type, TensorType | BufferType)


def _attr_value(attr: Attribute, kind: Kind | None) -> Any:
    """An ``aten.operator`` argument attribute as the Python value it stands for."""
    if isinstance(attr, NoneAttr):
        return None
    if isinstance(attr, ExprAttr):
        return attr.data
    if isinstance(attr, ShapeAttr):
        return list(attr.data)
    if isinstance(attr, builtin.FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, IntegerAttr):
        if attr.type == builtin.i1:
            return bool(attr.value.data)
        return int(attr.value.data)
    if isinstance(attr, StringAttr):
        if kind in (Kind.LAYOUT, Kind.MEMORY_FORMAT, Kind.DEVICE):
            return parse_enum(attr.data, kind)
        return attr.data
    if dtypes.is_element_type(attr):
        return dtypes.to_torch(attr)
    if isinstance(attr, ArrayAttr):
        elem = {Kind.INT_LIST: Kind.INT, Kind.FLOAT_LIST: Kind.FLOAT}.get(kind)
        return [_attr_value(a, elem) for a in attr.data]
    raise CppTargetError(f"-t cpp: cannot pass argument {attr} to an ATen op")


def _paren(text: str) -> str:
    """``text`` as an operand of ``+``/``-``: parenthesized unless a bare name or number."""
    return text if re.fullmatch(r"\w+", text) else f"({text})"


def host_function(module: ModuleOp) -> H.FuncOp:
    """The module's one host.func; fails with a sentence on anything else."""
    fns = []
    for op in module.ops:
        if isinstance(op, H.FuncOp):
            fns.append(op)
        elif not isinstance(op, tt.FuncOp):
            hint = (
                " -- run convert-loop-to-tt and convert-buffer-to-host first"
                if op.name == "func.func"
                else ""
            )
            raise CppTargetError(
                f"-t cpp expects a host.func and tt.func kernels; found {op.name}{hint}"
            )
    if any("coil.constants" in f.attributes for f in fns):
        raise CppTargetError(
            "-t cpp does not run a constants function (buffer-hoist-constants); compile "
            "without buffer-hoist-constants{inference=true}, as the backend does for "
            "wrapper='cpp', or use -t python"
        )
    if len(fns) != 1:
        raise CppTargetError(f"-t cpp expects exactly one host.func, found {len(fns)}")
    return fns[0]


def emit_cpp(module: ModuleOp) -> str:
    """The C++ source of ``module``'s host program (the kernels are compiled apart)."""
    return CppPrinter(module, host_function(module)).print_file()


@dataclass(frozen=True)
class CppTarget(Target):
    """``-t cpp``: the host program as one C++ file over coil_runtime.h."""

    name = "cpp"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(emit_cpp(module))


def _returns_written_argument(returns: Any) -> bool:
    """Whether an op's one return is an argument it writes (``out=``, in place)."""
    return (
        len(returns) == 1 and returns[0].alias_info is not None and returns[0].alias_info.is_write
    )
