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
launches (``cpp_launch.py``) and the ATen calls of extern regions
(``cpp_aten.py``) are mixins of it, and the values they share print through
``cpp_values.py``. The text depends only on the IR, so the build cache may key
on its hash.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import singledispatchmethod
from typing import IO, Any

import sympy
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import ArrayAttr, IntegerType, ModuleOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.target import Target

from coil.dialects import cpu, tt
from coil.dialects import host as H
from coil.dialects.aten import ConstantOp
from coil.dialects.buffer import BufferType
from coil.dialects.symbolic import ExprAttr, to_expr
from coil.ir import short_lines, source_line
from coil.targets.cpp_aten import AtenCallPrinter
from coil.targets.cpp_launch import LaunchPrinter, kernel_signature
from coil.targets.cpp_values import (
    CppTargetError,
    cpp_device,
    cpp_expr,
    cpp_scalar_type,
    cpp_string,
)
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


def _ints(items: Sequence[str]) -> str:
    return "{" + ", ".join(items) + "}"


# ---- the printer ----------------------------------------------------------------------


class CppPrinter(LaunchPrinter, AtenCallPrinter):
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
        # C++ kernels of a CPU graph (cpu.func): called through coil::CpuKernel.
        self.cpu_kernels: dict[str, cpu.FuncOp] = {}
        for op in module.ops:
            if isinstance(op, cpu.FuncOp):
                self.cpu_kernels[op.sym_name.data] = op
                self.used.add(op.sym_name.data)
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
        if self.cpu_kernels and not self.kernels:
            what = [
                "// its C++ CPU kernels (runtime/cpp/coil_runtime.h). coil.runtime.cpp_wrapper",
                "// builds it, with the kernels' library (kernels/cpu_kernels.so), into a shared",
            ]
        else:
            what = [
                "// its Triton kernels through the CUDA driver API (runtime/cpp/coil_runtime.h).",
                "// coil.runtime.cpp_wrapper builds it, with the kernels' cubins, into a shared",
            ]
        head = [
            f"// Generated by coil (-t cpp): the C++ wrapper of @{fn.sym_name.data}, launching",
            *what,
            "// library: coil_run(args, outputs, error) takes the inputs in order and returns",
            "// the outputs flat.",
            "",
            f'#include "{RUNTIME_HEADER}"',
            "",
            "namespace {",
            "",
            "// The kernel files: kernels/ beside this library (coil_set_kernel_dir).",
            "std::string kernel_dir = coil::default_kernel_dir(&kernel_dir);",
        ]
        for name, kernel in self.kernels.items():
            sig = ", ".join(f"{k}: {v}" for k, v in kernel_signature(kernel).items())
            head.append("")
            head.append(f"// {name}({sig})")
            head.append(f'coil::Kernel {name}("{name}", &kernel_dir);')
        if self.cpu_kernels:
            head += [
                "",
                "// The CPU kernels (-t cpp-kernels): kernels/cpu_kernels.so, built by",
                "// coil.runtime.cpp_kernels from the same source the Python wrapper loads.",
            ]
        for name, kernel in self.cpu_kernels.items():
            kind = f"coil::CpuKernel<{cpu_kernel_type(kernel)}>"
            head.append(f'{kind} {name}("{name}", &kernel_dir);')
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
        if op.kernel_name in self.cpu_kernels:
            self.emit(self.cpu_call(op) + ";")
            return
        self.emit(self.launch_call(op) + ";")

    def cpu_call(self, op: H.LaunchOp) -> str:
        """``coil_cpp_k(buf.data_ptr(), ..., s0)``: a C++ kernel called directly (its
        arguments as the Python wrapper's ctypes call passes them)."""
        kernel = self.cpu_kernels[op.kernel_name]
        n = len(op.args) + len(op.scalars.data)
        if n != len(kernel.args):
            raise CppTargetError(
                f"-t cpp: host.launch of @{op.kernel_name} passes {n} argument(s); the kernel "
                f"takes {len(kernel.args)}"
            )
        values = [
            f"{self.name(a)}.data_ptr()" if isinstance(a.type, BufferType) else self.name(a)
            for a in op.args
        ] + [self.expr(e) for e in op.scalars.data]
        return f"{op.kernel_name}({', '.join(values)})"

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


def cpu_kernel_type(kernel: cpu.FuncOp) -> str:
    """A ``cpu.func``'s C function type as ``-t cpp-kernels`` defines it: ``int(void*,
    ..., int64_t)`` (buffers as pointers, size symbols as ``int64_t``; nonzero: an
    index out of range)."""
    types = ["void*" if isinstance(a.type, BufferType) else "int64_t" for a in kernel.args]
    return f"int({', '.join(types)})"


def _paren(text: str) -> str:
    """``text`` as an operand of ``+``/``-``: parenthesized unless a bare name or number."""
    return text if re.fullmatch(r"\w+", text) else f"({text})"


def host_function(module: ModuleOp) -> H.FuncOp:
    """The module's one host.func; fails with a sentence on anything else."""
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
            raise CppTargetError(
                f"-t cpp expects a host.func and tt.func or cpu.func kernels; found {op.name}{hint}"
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
