"""Run in a subprocess by test_cpp_target.py, with a fake libcuda.so.1 that records
launches (fake_libcuda.c): launches each kernel of a C++ wrapper through the
wrapper and the same kernel through Triton's own launcher, with the same
arguments, and prints both launch records as JSON.

    python cpp_launch_check.py FAKE_LIBCUDA BUILD_DIR INPUTS.pt [BUILD_DIR INPUTS.pt ...] \
        [--kernels-only]

One JSON line per build, in order (several builds share one process: its start,
torch and Triton imported, is most of a check's CPU). ``--kernels-only``: the
wrappers call no extern (skip the x @ w and input checks).

The wrapper runs on CPU tensors (a "device pointer" is any address to the fake
driver). Triton's launcher is the installed one, unmodified: ``CudaDriver`` with
its ``driver.c`` compiled against the fake library, driven the way
``JITFunction.run`` drives it (``CompiledKernel.run(grid, stream, function,
packed_metadata, launch_metadata, hooks, *args)``), on the kernel compiled
from the same source, signature and options as the wrapper's cubin.
"""

from __future__ import annotations

import ctypes
import json
import os
import struct
import sys
from pathlib import Path


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--kernels-only"]
    kernels_only = "--kernels-only" in sys.argv[1:]
    fake, pairs = args[0], args[1:]
    assert pairs and len(pairs) % 2 == 0, "BUILD_DIR INPUTS.pt pairs"
    # One libcuda.so.1 for the whole process: Triton's compiled driver module
    # needs the soname, the wrapper opens COIL_LIBCUDA_PATH.
    lib = ctypes.CDLL(fake, mode=ctypes.RTLD_GLOBAL)
    lib.fake_log.restype = ctypes.c_char_p
    os.environ["COIL_LIBCUDA_PATH"] = fake
    os.environ["TRITON_LIBCUDA_PATH"] = str(Path(fake).parent)
    for build_dir, inputs_path in zip(pairs[::2], pairs[1::2]):
        print(json.dumps(check(lib, Path(build_dir), inputs_path, kernels_only)), flush=True)


def check(lib: ctypes.CDLL, build: Path, inputs_path: str, kernels_only: bool) -> dict:
    """Both launch records of one build (and the extern's and input check's results)."""
    import torch
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.driver import CudaDriver
    from xdsl.parser import Parser

    from coil.dialects import tt
    from coil.ir import coil_context
    from coil.runtime import cpp_wrapper
    from coil.runtime.codecache import load_module
    from coil.runtime.launch import FP_FUSION
    from coil.targets.cpp_launch import kernel_signature

    module = Parser(coil_context(), (build / "host.mlir").read_text()).parse_module()
    kernels = {op.sym_name.data: op for op in module.ops if isinstance(op, tt.FuncOp)}
    for name in kernels:
        sizes = [
            size
            for _, _, size in cubin_params((build / "kernels" / f"{name}.cubin").read_bytes(), name)
        ]
        lib.fake_set_params(name.encode(), len(sizes), (ctypes.c_int * len(sizes))(*sizes))

    # 1. The wrapper.
    wrapper = cpp_wrapper.CppWrapper(build, None, "")
    inputs = torch.load(inputs_path)
    tensors = [v for v in inputs if isinstance(v, torch.Tensor)]
    outputs = wrapper.call(list(inputs))
    ours = lib.fake_log().decode().splitlines()
    lib.fake_clear()
    extern_error, input_error = None, None
    if not kernels_only:
        # The extern ran for real (ATen on the CPU): its output is x @ w.
        extern_error = float((outputs[0] - tensors[0] @ tensors[1]).abs().max())
        try:
            wrapper.call([v.double() if isinstance(v, torch.Tensor) else v for v in inputs])
        except Exception as e:  # CoilInputError, checked by the test
            input_error = f"{type(e).__name__}: {e}"

    # 2. Triton's launcher, with the argument values the wrapper passed.
    driver = CudaDriver()
    driver.get_current_device = lambda: 0
    driver.get_current_stream = lambda *_: 0
    triton.runtime.driver.set_active(driver)
    jit = load_module((build / "kernels.py").read_text())
    options = cpp_wrapper.launch_options(module)
    for line in ours:
        name, grid, args = parse_launch(line)
        signature = kernel_signature(kernels[name])
        src = triton.compiler.ASTSource(getattr(jit, name), signature=signature, constexprs={})
        compiled = triton.compile(
            src, target=GPUTarget("cuda", 90, 32), options={**FP_FUSION, **options.get(name, {})}
        )
        values = [decode(hexbytes, ty) for hexbytes, ty in zip(args, signature.values())]
        compiled.run(
            *grid, 0, compiled.function, compiled.packed_metadata, None, None, None, *values
        )
    theirs = lib.fake_log().decode().splitlines()
    result = {"ours": ours, "theirs": theirs, "extern_max_error": extern_error}
    result["x_ptr"] = tensors[0].data_ptr().to_bytes(8, "little").hex()
    lib.fake_clear()
    return {**result, "input_error": input_error}


def parse_launch(line: str) -> tuple[str, list[int], list[str]]:
    words = line.split()
    name = words[0]
    grid = [int(w) for w in words[2:5]]
    params = words[words.index("params") + 1 :]
    return name, grid, params


def decode(hexbytes: str, ty: str) -> int | float:
    raw = bytes.fromhex(hexbytes)
    if ty.startswith("*") or ty in ("i64", "u64"):
        return (
            struct.unpack("<q", raw)[0] if not ty.startswith("*") else struct.unpack("<Q", raw)[0]
        )
    if ty in ("i32", "u32"):
        return struct.unpack("<i", raw)[0]
    if ty == "fp32":
        return struct.unpack("<f", raw)[0]
    raise ValueError(ty)


def cubin_params(cubin: bytes, kernel: str) -> list[tuple[int, int, int]]:
    """(ordinal, offset, size) of each kernel parameter, from the cubin's
    ``.nv.info.<kernel>`` section (EIATTR_KPARAM_INFO records)."""
    assert cubin[:4] == b"\x7fELF" and cubin[4] == 2, "not a 64-bit ELF cubin"
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    headers = [
        struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)
    ]
    names_at = headers[shstrndx][4]

    def section_name(offset: int) -> str:
        start = names_at + offset
        return cubin[start : cubin.index(b"\0", start)].decode()

    info = next(
        cubin[h[4] : h[4] + h[5]] for h in headers if section_name(h[0]) == f".nv.info.{kernel}"
    )
    params, pos = [], 0
    while pos < len(info):
        fmt, attr = info[pos], info[pos + 1]
        pos += 2
        if fmt == 0x04:  # EIFMT_SVAL: a 16-bit size, then the payload
            (size,) = struct.unpack_from("<H", info, pos)
            payload = info[pos + 2 : pos + 2 + size]
            pos += 2 + size
            if attr == 0x17:  # EIATTR_KPARAM_INFO
                _, ordinal, offset, flags = struct.unpack("<IHHI", payload)
                params.append((ordinal, offset, (flags >> 18) & 0x3FFF))  # size: bits 18..31
        else:  # EIFMT_NVAL/BVAL/HVAL: a 2-byte value slot
            pos += 2
    return sorted(params)


if __name__ == "__main__":
    main()
