"""Building and loading C++ wrappers (``-t cpp``): a shared library plus cubins.

:func:`build` turns a host-level module into a directory::

    wrapper.cpp          the -t cpp source
    wrapper.so           it, compiled with the system C++ compiler against libtorch
    kernels/NAME.cubin   each tt.func, compiled by Triton for the GPU's architecture
    kernels/NAME.meta    what Triton's launcher needs to launch it (see below)

The directory is the standalone form: a C++ program loads ``wrapper.so`` with
``dlopen`` and calls its ``coil_run`` (examples/run_cpp.cpp), no Python
needed. ``wrapper.so`` finds ``kernels/`` beside itself.

Kernels. Each kernel is compiled by ``triton.compile`` from the ``-t triton``
source with the signature :func:`coil.targets.cpp_launch.kernel_signature` gives (no
constexprs, no specialization on values: the cubin runs for any sizes, as the
wrapper passes them) and the ``host.launch``'s options (num_warps,
num_stages). ``NAME.meta`` records the compiled kernel's metadata the launch
needs: its function name, num_warps, num_ctas, shared memory, and one
``scratch SIZE ALIGN`` line for each scratch pointer the installed Triton's
launcher appends after the kernel's own arguments -- ``global_scratch`` and,
since Triton 3.5, ``profile_scratch``, each exactly when the compiled kernel's
metadata has the field, which is how ``CudaLauncher`` reads them (Triton 3.6
and 3.9 alike: ``triton/backends/nvidia/driver.py``).

The cache. Like the Python module cache (:mod:`coil.runtime.codecache`), a
build is keyed by sha256 of everything it is made of: the C++ source, the
kernels' Triton source and launch options, the runtime header, the target
architecture, the compile command and the coil/torch/triton/Python versions.
It lives in ``<cache_dir>/cpp/<key>/``, built in a temporary directory and
renamed into place, so a reader sees a complete build or none, and two
processes building the same key both end with one complete directory.

Loading. :func:`load` returns a :class:`CppWrapper` whose ``call(args)``
behaves as the Python wrapper's: inputs in order (the list is emptied),
outputs as the function's ``coil.output_tree`` or a tuple. It calls the library
through a small bridge (runtime/cpp/coil_py_bridge.cpp, built once per
environment into the cache, loaded with ``ctypes.PyDLL``) that converts
tensors and scalars to ``c10::IValue`` and raises
:class:`~coil.runtime.wrapper.CoilInputError` for inputs that do not match.

Module state (caches, not options): the in-process memo of loaded wrappers and
the loaded bridge.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import functools
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr

import coil.dialects.torch_library  # noqa: F401  (torch.ops.coil.*, which wrappers call)
from coil import config
from coil.dialects.signature import decode_output_tree
from coil.runtime import cpp_pch
from coil.runtime.codecache import cache_dir, write_atomic

RUNTIME_DIR = Path(__file__).parent / "cpp"
HEADER = RUNTIME_DIR / "coil_runtime.h"
BRIDGE = RUNTIME_DIR / "coil_py_bridge.cpp"

_lock = threading.RLock()
_loaded: dict[str, CppWrapper] = {}


class CppBuildError(RuntimeError):
    """A C++ wrapper could not be built (the message says why and how)."""


# ---- the toolchain ----------------------------------------------------------------


def find_compiler() -> str | None:
    """The C++ compiler: ``$CXX``, else ``c++``, ``g++`` or ``clang++`` on PATH."""
    if explicit := os.environ.get("CXX"):
        return shutil.which(explicit) or explicit
    for name in ("c++", "g++", "clang++"):
        if path := shutil.which(name):
            return path
    return None


def cuda_include_dir() -> Path | None:
    """A directory holding ``cuda.h``: Triton's own copy (what its launcher is compiled
    against), else ``$CUDA_HOME/include``, else ``/usr/local/cuda/include``."""
    candidates = []
    try:
        import triton

        candidates.append(Path(triton.__file__).parent / "backends" / "nvidia" / "include")
    except ImportError:
        pass
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if home := os.environ.get(var):
            candidates.append(Path(home) / "include")
    candidates.append(Path("/usr/local/cuda/include"))
    return next((d for d in candidates if (d / "cuda.h").is_file()), None)


def toolchain_problem() -> str | None:
    """Why C++ wrappers cannot be built here (a sentence), or None when they can."""
    if find_compiler() is None:
        return "no C++ compiler found (set CXX, or install g++)"
    if cuda_include_dir() is None:
        return "cuda.h not found (Triton's copy, $CUDA_HOME/include, /usr/local/cuda/include)"
    return None


# Host glue: -O1, as Inductor compiles its AOT wrapper (compile_wrapper_opt_level).
# benchmarks/cpp_build_time.py, g++ 12, fake driver on CPU tensors: host time
# per call -O1/-O2/-O3 14.9/15.5/15.9 us (a 3-op graph), 236/239/237 us (a
# transformer block, its matmuls run by ATen), while -O1 compiles 1.3 s of CPU
# faster than -O2 with the PCH (5.1-5.4 s against 6.3-6.7).
WRAPPER_OPT = "-O1"


def compile_flags(*, python: bool = False) -> list[str]:
    """Every flag of a wrapper's compile but its source, output and link flags
    (``python=True``: the bridge's, with Python's headers); a precompiled header
    is valid for exactly these."""
    import torch
    from torch.utils import cpp_extension

    problem = toolchain_problem()
    if problem is not None:
        raise CppBuildError(f"coil: cannot build the C++ wrapper: {problem}")
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    includes = [str(RUNTIME_DIR), *cpp_extension.include_paths(), str(cuda_include_dir())]
    if python:
        includes.append(sysconfig.get_paths()["include"])
    return [
        "-fPIC",
        WRAPPER_OPT,
        "-std=c++20",
        # Default visibility: with -fvisibility=hidden the library gets private
        # copies of libstdc++'s template statics (the locale facets' ids), and
        # iostreams crash in it (seen with g++ 13). Wrappers are loaded
        # RTLD_LOCAL, and their own state has internal linkage, so two wrappers
        # in one process never bind to each other's.
        "-w",
        f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
        *(f"-I{d}" for d in includes),
    ]


def link_flags(*, python: bool = False) -> list[str]:
    from torch.utils import cpp_extension

    lib_dirs = cpp_extension.library_paths()
    libs = ["torch_python"] if python else []
    libs += ["torch", "torch_cpu", "c10"]
    return [
        "-shared",
        *(f"-L{d}" for d in lib_dirs),
        *(f"-Wl,-rpath,{d}" for d in lib_dirs),
        *(f"-l{lib}" for lib in libs),
        "-ldl",
    ]


def compile_command(
    source: Path, output: Path, *, python: bool = False, pch_dir: Path | None = None
) -> list[str]:
    """The compiler line for one wrapper library (``python=True``: the bridge, which
    also includes Python's headers and links libtorch_python; ``pch_dir``: a
    directory of precompiled headers searched first, :mod:`coil.runtime.cpp_pch`)."""
    flags = compile_flags(python=python)
    first = [f"-I{pch_dir}"] if pch_dir is not None else []
    return [
        find_compiler(),
        str(source),
        "-o",
        str(output),
        *first,
        *flags,
        *link_flags(python=python),
    ]


def _pch_extra() -> str:
    """What a wrapper PCH depends on beyond its flags and header text."""
    import torch

    return f"torch {torch.__version__} {torch.__file__}"


# With this many CPUs or more, the first wrapper of a cold cache is compiled in
# full while the PCH builds beside it in a thread (it waits ~13 s, not 17 + 5:
# benchmarks/results/cpp_build_time.md, CPU seconds); with fewer, the two would
# share the CPUs (and a test run's other workers), so the PCH is built first.
BACKGROUND_PCH_MIN_CPUS = 4


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def wrapper_pch_dir(wait: bool = True) -> Path | None:
    """The precompiled ``coil_runtime.h`` for wrapper builds (None: build without;
    ``wait=False``: None while it is built in the background)."""
    return cpp_pch.include_dir(
        find_compiler(), HEADER, compile_flags(), extra=_pch_extra(), wait=wait
    )


def _run_compiler(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True)


def _failure(source: Path, cmd: list[str], proc: subprocess.CompletedProcess) -> CppBuildError:
    tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-30:])
    return CppBuildError(
        f"coil: compiling {source.name} failed (exit {proc.returncode}):\n{shlex.join(cmd)}\n{tail}"
    )


def compile_library(source: Path, output: Path, *, python: bool = False) -> None:
    """Compile one C++ file into a shared library; a failure raises with the
    compiler's command and its last lines of output. A wrapper (not the bridge)
    is compiled against the precompiled ``coil_runtime.h`` where there is one; a
    compile that fails with it and succeeds without it (a corrupt ``.gch``)
    removes the PCH and says so once."""
    pch_dir = None if python else wrapper_pch_dir(wait=_cpus() < BACKGROUND_PCH_MIN_CPUS)
    cmd = compile_command(source, output, python=python, pch_dir=pch_dir)
    proc = _run_compiler(cmd)
    if proc.returncode != 0 and pch_dir is not None:
        plain = compile_command(source, output, python=python)
        retry = _run_compiler(plain)
        if retry.returncode == 0:
            first = next(iter((proc.stderr or proc.stdout).strip().splitlines()), "")
            cpp_pch.discard(pch_dir)
            cpp_pch.say_once(
                f"coil: the precompiled header in {pch_dir} broke a C++ build ({first}); "
                "built without it and removed it (the next build makes a new one)"
            )
            return
        cmd, proc = plain, retry
    if proc.returncode != 0:
        raise _failure(source, cmd, proc)


# ---- kernels ------------------------------------------------------------------------


def launch_options(module: ModuleOp) -> dict[str, dict[str, Any]]:
    """Kernel name -> the options its ``host.launch`` gives (num_warps, num_stages ...)."""
    from coil.dialects import host as H

    options: dict[str, dict[str, Any]] = {}
    for op in module.walk():
        if not isinstance(op, H.LaunchOp):
            continue
        opts: dict[str, Any] = {}
        if op.config is not None:
            for key, value in op.config.data.items():
                if key == "launch_pdl":
                    # The C++ runtime launches with cuLaunchKernel, without
                    # launch attributes: a kernel built for programmatic
                    # dependent launch runs fully ordered there (its
                    # grid-dependency wait returns at once), which is correct.
                    continue
                if isinstance(value, IntegerAttr):
                    opts[key] = value.value.data
                elif isinstance(value, StringAttr):
                    opts[key] = value.data
        previous = options.setdefault(op.kernel_name, opts)
        if previous != opts:
            raise CppBuildError(
                f"coil: kernel @{op.kernel_name} is launched with two configurations "
                f"({previous} and {opts}); a cubin has one"
            )
    return options


def scratch_fields(metadata: Any) -> list[str]:
    """The scratch pointers Triton's launcher appends, in order: each of
    ``global_scratch`` and ``profile_scratch`` whose size the metadata has."""
    return [f for f in ("global_scratch", "profile_scratch") if hasattr(metadata, f + "_size")]


def meta_text(metadata: Any) -> str:
    """A compiled kernel's ``.meta`` file (parsed by coil::KernelMeta)."""
    lines = [
        f"name {metadata.name}",
        f"num_warps {metadata.num_warps}",
        f"num_ctas {getattr(metadata, 'num_ctas', 1)}",
        f"shared {metadata.shared}",
        f"launch_cooperative_grid {int(bool(getattr(metadata, 'launch_cooperative_grid', 0)))}",
        f"launch_pdl {int(bool(getattr(metadata, 'launch_pdl', 0)))}",
    ]
    for field in scratch_fields(metadata):
        size = getattr(metadata, field + "_size")
        align = getattr(metadata, field + "_align", 1)
        lines.append(f"scratch {size} {align}  # {field}")
    return "\n".join(lines) + "\n"


def gpu_arch(module: ModuleOp | None = None) -> int:
    """The compute capability to compile for: the module's CUDA device's (the
    first CUDA device when it names none), 90 (Hopper) where there is no GPU."""
    import torch

    if not torch.cuda.is_available():
        return 90
    index = 0
    if module is not None:
        from coil.dialects.buffer import BufferType

        for op in module.walk():
            for v in op.results:
                if isinstance(v.type, BufferType) and v.type.device.type == "cuda":
                    index = v.type.device.index or 0
                    break
    major, minor = torch.cuda.get_device_capability(index)
    return major * 10 + minor


def compile_kernels(module: ModuleOp, kernel_source: str, arch: int) -> dict[str, Any]:
    """Kernel name -> Triton's compiled kernel (``.asm["cubin"]``, ``.metadata``)."""
    import triton
    from triton.backends.compiler import GPUTarget

    from coil.dialects import tt
    from coil.runtime.codecache import load_module
    from coil.runtime.launch import FP_FUSION
    from coil.targets.cpp_launch import kernel_signature

    jit_module = load_module(kernel_source) if kernel_source else None
    options = launch_options(module)
    target = GPUTarget("cuda", arch, 32)
    compiled = {}
    for op in module.ops:
        if not isinstance(op, tt.FuncOp):
            continue
        name = op.sym_name.data
        fn = getattr(jit_module, name)
        src = triton.compiler.ASTSource(fn, signature=kernel_signature(op), constexprs={})
        opts = {**FP_FUSION, **options.get(name, {})}
        if tt.has_device_asserts(op):  # as the -t triton source's @triton.jit(debug=True)
            opts.update(debug=True, sanitize_overflow=False)
        compiled[name] = triton.compile(src, target=target, options=opts)
    return compiled


# ---- building -----------------------------------------------------------------------


@functools.cache
def _versions() -> str:
    import torch
    import triton

    import coil

    return "\0".join((coil.__version__, torch.__version__, triton.__version__, sys.version))


def build_key(cpp_source: str, kernel_source: str, options: dict, arch: int) -> str:
    digest = hashlib.sha256(_versions().encode())
    for part in (
        cpp_source,
        kernel_source,
        repr(sorted((k, sorted(v.items())) for k, v in options.items())),
        HEADER.read_text(),
        str(arch),
        shlex.join(compile_command(Path("wrapper.cpp"), Path("wrapper.so"))),
        cpp_pch.compiler_version(find_compiler()),
    ):
        digest.update(b"\0")
        digest.update(part.encode())
    return digest.hexdigest()


def _emit(module: ModuleOp) -> tuple[str, str]:
    from coil.dialects import tt
    from coil.targets import triton as T
    from coil.targets.cpp import emit_cpp

    cpp = emit_cpp(module)
    has_kernels = any(isinstance(op, tt.FuncOp) for op in module.ops)
    kernels = T.header(module) + "\n\n" + T.emit_kernels(module) if has_kernels else ""
    return cpp, kernels


def cpu_kernel_source(module: ModuleOp) -> str:
    """The module's ``cpu.func`` kernels as ``-t cpp-kernels`` prints them ("" for none)."""
    from coil.dialects import cpu

    if not any(isinstance(op, cpu.FuncOp) for op in module.ops):
        return ""
    from coil.targets.cpp_kernels import emit_cpp_kernels

    return emit_cpp_kernels(module)


def _cpu_kernels_key(source: str) -> str:
    """What the CPU kernel library depends on (its own cache key: the source, the
    compiler and its flags, the CPU's features), "" without CPU kernels."""
    if not source:
        return ""
    from coil.runtime import cpp_kernels

    compiler = cpp_kernels.find_compiler()
    return cpp_kernels.library_key(source, compiler) if compiler is not None else "no compiler"


def _build_into(directory: Path, module: ModuleOp, cpp: str, kernels: str, arch: int) -> None:
    (directory / "kernels").mkdir(parents=True, exist_ok=True)
    if cpu_source := cpu_kernel_source(module):
        # The library the Python wrapper would load (built once, in its cache),
        # copied beside the wrapper: the directory stands alone (run_cpp.cpp).
        from coil.runtime.cpp_kernels import load_cpp_kernels

        shutil.copyfile(load_cpp_kernels(cpu_source).path, directory / "kernels" / "cpu_kernels.so")
        (directory / "kernels.cpp").write_text(cpu_source)
    (directory / "kernels.py").write_text(kernels)
    (directory / "wrapper.cpp").write_text(cpp)
    # The C++ compiler (a subprocess) runs while Triton compiles the kernels in
    # this thread: the wrapper loads its cubins only when it runs.
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="coil-cxx") as pool:
        library = pool.submit(compile_library, directory / "wrapper.cpp", directory / "wrapper.so")
        for name, k in compile_kernels(module, kernels, arch).items():
            (directory / "kernels" / f"{name}.cubin").write_bytes(k.asm["cubin"])
            (directory / "kernels" / f"{name}.meta").write_text(meta_text(k.metadata))
        library.result()


def build(
    module: ModuleOp, out_dir: str | os.PathLike | None = None, *, arch: int | None = None
) -> Path:
    """Build ``module`` (host level) into a wrapper directory and return its path:
    ``out_dir`` when given (the standalone form, rebuilt), else the cache entry
    for its key (reused when present). ``arch`` defaults to :func:`gpu_arch`."""
    arch = arch if arch is not None else gpu_arch(module)
    cpp, kernels = _emit(module)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        _build_into(out, module, cpp, kernels, arch)
        return out
    cpu_key = _cpu_kernels_key(cpu_kernel_source(module))
    key = build_key(cpp, kernels + cpu_key, launch_options(module), arch)
    final = cache_dir() / "cpp" / key
    if (final / "wrapper.so").is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key[:16]}.", dir=final.parent))
    try:
        _build_into(tmp, module, cpp, kernels, arch)
        try:
            os.replace(tmp, final)
        except OSError:
            # Another process finished the same build first: keep theirs.
            if not (final / "wrapper.so").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


# ---- loading ------------------------------------------------------------------------


@functools.cache
def _bridge() -> Any:
    """The Python bridge library, built once per environment (keyed like a build)."""
    source = BRIDGE.read_text()
    digest = hashlib.sha256(_versions().encode())
    digest.update(source.encode())
    digest.update(shlex.join(compile_command(BRIDGE, Path("bridge.so"), python=True)).encode())
    digest.update(cpp_pch.compiler_version(find_compiler()).encode())
    # Keyed by everything it is made of, so it is kept with the C++ kernel
    # libraries (config.cpp_cache_dir: across runs, as the test suite keeps them).
    path = config.cpp_cache_dir() / f"bridge-{digest.hexdigest()[:32]}.so"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
            out = Path(tmp) / "bridge.so"
            compile_library(BRIDGE, out, python=True)
            os.replace(out, path)
    lib = ctypes.PyDLL(str(path))
    fn = lib.coil_bridge_call
    fn.restype = ctypes.py_object
    fn.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.py_object]
    return fn


@dataclass
class CppWrapper:
    """A loaded wrapper library: ``call(args)`` as the Python wrapper's."""

    directory: Path
    output_tree: str | None
    source: str

    def __post_init__(self) -> None:
        from coil.runtime.wrapper import CoilInputError

        self.library = ctypes.CDLL(str(self.directory / "wrapper.so"))
        self.library.coil_set_kernel_dir.argtypes = [ctypes.c_char_p]
        self.library.coil_set_kernel_dir(str(self.directory / "kernels").encode())
        self._run = ctypes.cast(self.library.coil_run, ctypes.c_void_p).value
        self._bridge = _bridge()
        self._error = CoilInputError

    def call_flat(self, args: list[Any]) -> list[Any]:
        """The outputs as the library returns them, flat (``args`` is emptied)."""
        return self._bridge(self._run, args, self._error)

    def call(self, args: list[Any]) -> Any:
        outs = self._bridge(self._run, args, self._error)
        if self.output_tree is not None:
            return decode_output_tree(self.output_tree, outs)
        return tuple(outs)


def load(module: ModuleOp, *, arch: int | None = None) -> CppWrapper:
    """Build (or find in the cache) and load the C++ wrapper of ``module``."""
    from coil.targets.cpp import host_function

    fn = host_function(module)
    tree = fn.attributes.get("coil.output_tree")
    directory = build(module, arch=arch)
    with _lock:
        wrapper = _loaded.get(str(directory))
        if wrapper is None:
            wrapper = _loaded[str(directory)] = CppWrapper(
                directory,
                tree.data if isinstance(tree, StringAttr) else None,
                (directory / "wrapper.cpp").read_text(),
            )
        return wrapper


# ---- the standalone form -------------------------------------------------------------


def write_example_io(
    directory: str | os.PathLike, inputs: Sequence[Any], outputs: Sequence[Any]
) -> None:
    """Write ``io.txt`` plus raw tensor files: inputs to run and the outputs they
    should give, for a C++ program to check a standalone build
    (examples/run_cpp.cpp reads them)."""
    import torch

    from coil.targets.cpp_values import SCALAR_TYPES

    directory = Path(directory)
    lines = []
    for role, values in (("input", inputs), ("output", outputs)):
        for k, v in enumerate(values):
            if isinstance(v, torch.Tensor):
                file = f"{role}{k}.bin"
                data = v.detach().contiguous().cpu()
                (directory / file).write_bytes(data.view(torch.uint8).numpy().tobytes())
                device = "cpu" if v.device.type == "cpu" else f"cuda:{v.device.index or 0}"
                lines.append(
                    f"{role} tensor {SCALAR_TYPES[v.dtype]} {device} {v.dim()} "
                    f"{' '.join(map(str, v.shape))} {' '.join(map(str, v.stride()))} {file}"
                )
            elif isinstance(v, bool | int):
                lines.append(f"{role} int {int(v)}")
            else:
                raise CppBuildError(f"coil: cannot write {role} {k} ({type(v).__name__})")
    write_atomic(directory / "io.txt", "\n".join(lines) + "\n")
