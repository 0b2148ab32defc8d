"""Kernel launches in the Python wrapper (``-t python``): the bound launchers'
calls, Triton's own launch path for autotune candidates, C++ kernels through
ctypes, the streams, and the CPU scalars GPU kernels read. A mixin of
``targets/python.HostPrinter``, whose naming state it uses."""

from __future__ import annotations

import hashlib

from xdsl.dialects.builtin import IntegerAttr, StringAttr

from coil.dialects import host as H
from coil.dialects import tt
from coil.dialects.buffer import BufferType
from coil.ir import source_line
from coil.targets.python_values import PythonTargetError
from coil.targets.scalar_inputs import kernel_writes


class LaunchPrinter:
    """How ``host.launch`` ops print (see ``HostPrinter``)."""

    def cpp_call(self, op: H.LaunchOp) -> str:
        """``coil_cpp_k(buf.data_ptr(), ..., s0)``: a C++ kernel through ctypes."""
        args = [
            f"{self.name(a)}.data_ptr()" if isinstance(a.type, BufferType) else self.name(a)
            for a in op.args
        ] + [self.expr(s) for s in op.scalars.data]
        lines = self.kernel_lines.get(op.kernel_name) or [source_line(op.location)]
        self.emit_source([t for t in lines if t is not None])
        call = f"{op.kernel_name}({', '.join(args)})"
        if self.cpp_kernels[op.kernel_name][1]:
            return f'if {call}:\n        kernel_index_error("{op.kernel_name}")'
        return call

    def launch_args(self, op: H.LaunchOp) -> tuple[list[str], str]:
        """The launch's argument expressions, and the device it runs on."""
        devices = {str(a.type.device) for a in op.args if isinstance(a.type, BufferType)}
        gpu = sorted(d for d in devices if d != "cpu")
        kernel = None
        args = []
        for k, a in enumerate(op.args):
            name = self.name(a)
            if gpu and isinstance(a.type, BufferType) and str(a.type.device) == "cpu":
                # A CPU scalar tensor (a lifted Python float, say) read by a GPU
                # kernel: the kernel needs it in device memory, from a copy
                # made once for its value. A GPU kernel cannot write it: the
                # write would go to a copy and be lost.
                kernel = kernel or self.kernel_func(op.kernel_name)
                if kernel is not None and kernel_writes(kernel, k):
                    raise PythonTargetError(
                        f"-t python: GPU kernel @{op.kernel_name} writes the CPU tensor "
                        f"{name}; a GPU kernel can only read CPU scalars"
                    )
                if kernel is None:  # not a kernel of this module: a copy per launch
                    name = f"{name}.to({gpu[0]!r})"
                else:
                    self.uses_device_scalar = True
                    name = f"device_scalar({name}, {gpu[0]!r})"
            args.append(name)
        args += [self.expr(s) for s in op.scalars.data]
        return args, (gpu[0] if gpu else "cpu")

    def launcher_call(self, op: H.LaunchOp) -> str:
        """``coil_k_launch.run(gx, gy, gz, stream, args...)``: the bound launcher."""
        args, device = self.launch_args(op)
        config = {
            k: v.value.data
            for k, v in (op.config.data if op.config else {}).items()
            if isinstance(v, IntegerAttr)
        }
        key = (
            op.kernel_name,
            device,
            config.get("num_warps", 4),
            config.get("num_stages", 1),
            bool(config.get("launch_pdl", 0)),
        )
        signature = [
            f"*{str(a.type.dtype).removeprefix('torch.')}"
            if isinstance(a.type, BufferType)
            else "i64"
            for a in op.args
        ] + ["i64"] * len(op.scalars.data)
        checked = {
            k
            for k, a in enumerate(op.args)
            if isinstance(a.type, BufferType) and a not in self.aligned
        }
        entry = self.launchers.get(key)
        if entry is None:
            name = self.fresh_name(f"{op.kernel_name}_launch", "launch")
            entry = self.launchers[key] = [name, signature, set()]
        entry[2] |= checked
        stream = self.stream(device)
        grid = ", ".join(self.expr(g) for g in op.grid.data)
        lines = self.kernel_lines.get(op.kernel_name) or [source_line(op.location)]
        self.emit_source([t for t in lines if t is not None])
        return f"{entry[0]}.run({grid}, {stream}, {', '.join(args)})"

    def stream(self, device: str) -> str:
        """The name of ``device``'s current stream in ``call``, read on first use."""
        if device not in self.streams:
            stream = self.fresh_name("stream", "stream")
            self.streams[device] = stream
            self.emit(f'{stream} = raw_stream("{device}")')
        return self.streams[device]

    def kernel_func(self, name: str) -> tt.FuncOp | None:
        """The Triton kernel ``name`` of the module (None where it is not one)."""
        for func in self.module.ops:
            if isinstance(func, tt.FuncOp) and func.sym_name.data == name:
                return func
        return None

    def autotune_digest(self, op: H.AutotuneOp) -> str:
        """What the candidates are, for the on-disk choice cache: a hash of the
        candidate launches (grids, configs) and the kernels they launch, as IR.
        The runtime adds the sizes, the GPU and the Triton version."""
        digest = hashlib.sha256(str(op).encode())
        kernels = {launch.kernel_name for launch in op.launches}
        for func in self.module.ops:
            if isinstance(func, tt.FuncOp) and func.sym_name.data in kernels:
                digest.update(str(func).encode())
        return digest.hexdigest()[:32]

    def launch_call(self, op: H.LaunchOp) -> str:
        """``kernel[(grid)](args..., num_warps=..)``: one launch through Triton's own
        specializing path (autotune candidates)."""
        grid = ", ".join(self.expr(g) for g in op.grid.data)
        args, _ = self.launch_args(op)
        options = []
        if op.config is not None:
            for key, value in op.config.data.items():
                if isinstance(value, IntegerAttr):
                    options.append(f"{key}={value.value.data}")
                elif isinstance(value, StringAttr):
                    options.append(f"{key}={value.data!r}")
        lines = self.kernel_lines.get(op.kernel_name) or [source_line(op.location)]
        self.emit_source([t for t in lines if t is not None])
        return f"{op.kernel_name}[({grid})]({', '.join(args + options)})"
