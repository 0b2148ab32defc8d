"""Kernel launches in the C++ wrapper (``-t cpp``): each launch's arguments
typed by the kernel's Triton signature (:func:`kernel_signature`, also what
the kernels are compiled with), the device it runs on, the CPU scalars a GPU
kernel reads. A mixin of ``targets/cpp.CppPrinter``, whose naming state it
uses."""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Attribute

from coil.dialects import host as H
from coil.dialects import tt
from coil.dialects.buffer import BufferType
from coil.targets.cpp_values import CppTargetError, cpp_device

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


class LaunchPrinter:
    """How ``host.launch`` ops print (see ``CppPrinter``)."""

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
