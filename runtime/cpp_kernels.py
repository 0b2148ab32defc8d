"""Build and load the C++ CPU kernels (``-t cpp-kernels``) of a graph.

A graph's kernels are one translation unit, compiled by one compiler process
(g++'s start alone is 0.3-1 s: one per kernel would dominate a compile) into a
shared library that ``ctypes`` loads. The compiler is found at run time
(``COIL_CXX``, ``$CXX``, then ``g++``, ``clang++``, ``c++`` on ``PATH``;
``COIL_CXX=none`` hides them all), with ``-O3 -march=native`` and ``-fopenmp``
where a probe compile says the compiler has OpenMP (the library then shares the
``libgomp.so.1`` torch has loaded, by its soname, so one thread pool serves
both). Libraries are cached under ``$COIL_CACHE_DIR/cpp/`` (or
``$COIL_CPP_CACHE_DIR``) keyed by sha256 of
the source, the compiler (path and version), the flags and the CPU's feature
flags, written atomically, so a later process (or the graph cache's rebuild)
loads them without compiling. Inductor's ``CppCodeCache`` (codecache.py) and
``cpp_builder.py`` are the reference.

Most of a small graph's compile is parsing ``<cmath>`` and ``<algorithm>``
(g++ 12: 0.45 of 0.5 s of CPU for 140 lines of kernels), so the source's
leading ``#include <...>`` lines are precompiled once per compiler, flags and
CPU (:mod:`coil.runtime.cpp_pch`, GCC only) and passed as ``-include``: the
source's own includes are then no-ops. Only that leading block is
precompiled, so the source means what it says; a PCH that breaks a compile
is removed and the library built without it, said once.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import re
import shutil
import subprocess
import tempfile
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coil import config
from coil.runtime import cpp_pch
from coil.runtime.codecache import write_atomic

BASE_FLAGS = (
    "-O3",
    "-march=native",
    "-std=c++17",
    "-shared",
    "-fPIC",
    # errno and FP traps are never observed: without them exp/sqrt vectorize.
    "-fno-math-errno",
    "-fno-trapping-math",
    "-w",
)


def vector_bytes() -> int:
    """Bytes of the vectors the kernels are compiled for (:func:`_vector_width`):
    64 where they prefer 512-bit vectors, else 32. ``convert-loop-to-cpp``'s
    ``vector-bytes``: a row reduction's accumulators and steps that wide."""
    return 64 if "-mprefer-vector-width=512" in _vector_width() else 32


def _vector_width() -> tuple[str, ...]:
    """The vector width the kernels prefer on x86: 512 bits where ATen's own
    kernels run AVX-512 (torch's CPU capability), else 256. Some x86 tunings
    (-march=native on Zen 1) prefer 128-bit vectors; glibc's 8-wide AVX2
    exp/erf/tanh were 1.3x faster than the 4-wide ones on a 256x1024 softmax
    there. On an AVX-512 Xeon g++ 12 tunes for 256 bits; 512 ran the kernels
    alone (one thread, 25 interleaved rounds, best us) tanh-GELU 64x2048 169 ->
    69, exact GELU 102 -> 79, softmax 256x1024 196 -> 188 (benchmarks/RESULTS.md,
    twenty-first session); the bf16 norms moved within noise (twentieth)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return ()
    import torch

    wide = torch.backends.cpu.get_cpu_capability() in ("AVX512", "AVX512_BF16", "AMX")
    return (f"-mprefer-vector-width={512 if wide else 256}",)


BASE_FLAGS = BASE_FLAGS + _vector_width()

_lock = threading.Lock()
_loaded: dict[str, CppKernels] = {}


class CppCompileError(RuntimeError):
    """The system compiler rejected the generated kernels (a bug in coil)."""


@dataclass(frozen=True)
class Compiler:
    path: str
    version: str
    openmp: bool

    @property
    def flags(self) -> tuple[str, ...]:
        return BASE_FLAGS + (("-fopenmp",) if self.openmp else ())


def _candidates() -> list[str]:
    given = config.cxx()
    if given is not None:
        return [] if given.lower() == "none" else [given]
    names = [os.environ["CXX"]] if os.environ.get("CXX") else []
    return names + ["g++", "clang++", "c++"]


@functools.cache
def find_compiler() -> Compiler | None:
    """The C++ compiler for CPU kernels, or None where there is none."""
    for name in _candidates():
        path = shutil.which(name)
        if path is None:
            continue
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        if out.returncode != 0:
            continue
        version = out.stdout.splitlines()[0] if out.stdout else name
        return Compiler(path, version, _has_openmp(path, version))
    return None


def _has_openmp(path: str, version: str) -> bool:
    """Whether ``path -fopenmp`` builds a shared library (probed once per compiler,
    the answer kept in the cache)."""
    key = hashlib.sha256(f"{path}\0{version}".encode()).hexdigest()[:16]
    root = config.cpp_cache_dir()
    marker = root / f"openmp-{key}"
    if marker.exists():
        return marker.read_text().strip() == "1"
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "probe.cpp"
        src.write_text('#include <omp.h>\nextern "C" int f() { return omp_get_max_threads(); }\n')
        ok = (
            subprocess.run(
                [path, "-shared", "-fPIC", "-fopenmp", str(src), "-o", str(Path(tmp) / "p.so")],
                capture_output=True,
            ).returncode
            == 0
        )
    try:
        root.mkdir(parents=True, exist_ok=True)
        marker.write_text("1" if ok else "0")
    except OSError:
        pass
    return ok


@functools.cache
def _cpu_features() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine() + platform.processor()


def library_key(source: str, compiler: Compiler) -> str:
    digest = hashlib.sha256()
    flags = " ".join(compiler.flags)
    for part in (source, compiler.path, compiler.version, flags, _cpu_features()):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


_INCLUDE = re.compile(r"#include <[A-Za-z0-9_./]+>")


def leading_includes(source: str) -> list[str]:
    """The ``#include <...>`` lines that open ``source`` (after comments and blank
    lines): what can be precompiled without changing what the source means."""
    lines = []
    for line in source.splitlines():
        text = line.strip()
        if not text or text.startswith("//"):
            continue
        if not _INCLUDE.fullmatch(text):
            break
        lines.append(text)
    return lines


def prelude_pch(source: str, compiler: Compiler) -> Path | None:
    """The precompiled header of ``source``'s leading system includes
    (:mod:`coil.runtime.cpp_pch`), passed as ``-include DIR/NAME``; None where
    there is none to use. The header file is written into the PCH cache, named
    by its text."""
    includes = leading_includes(source)
    if not includes:
        return None
    text = "// The leading includes of coil's CPU kernels (runtime/cpp_kernels.py).\n"
    text += "\n".join(includes) + "\n"
    name = f"coil_cpu_prelude_{hashlib.sha256(text.encode()).hexdigest()[:16]}.h"
    header = cpp_pch.pch_root() / "headers" / name
    try:
        if not header.is_file():
            header.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(header, text)
    except OSError:
        return None
    flags = [f for f in compiler.flags if f != "-shared"]  # a link flag
    pch = cpp_pch.include_dir(compiler.path, header, flags, extra=_cpu_features())
    return pch / name if pch is not None else None


def _compile(compiler: Compiler, src: Path, out: Path, pch: Path | None):
    first = ["-include", str(pch)] if pch is not None else []
    return subprocess.run(
        [compiler.path, *compiler.flags, *first, str(src), "-o", str(out)],
        capture_output=True,
        text=True,
    )


def _build(source: str, compiler: Compiler, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    pch = prelude_pch(source, compiler)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        src = Path(tmp) / "kernels.cpp"
        src.write_text(source)
        out = Path(tmp) / "kernels.so"
        result = _compile(compiler, src, out, pch)
        if result.returncode != 0 and pch is not None:
            retry = _compile(compiler, src, out, None)
            if retry.returncode == 0:
                first = next(iter(result.stderr.strip().splitlines()), "")
                cpp_pch.discard(pch.parent)
                cpp_pch.say_once(
                    f"coil: the precompiled header in {pch.parent} broke a C++ build ({first}); "
                    "built without it and removed it (the next build makes a new one)"
                )
            result = retry
        if result.returncode != 0:
            raise CppCompileError(
                f"coil: {compiler.path} failed on the generated CPU kernels:\n"
                + result.stderr[-4000:]
            )
        os.replace(out, target)


class CppKernels:
    """A loaded library of kernels; ``kernel(name, nargs)`` is a ctypes function."""

    def __init__(self, path: Path):
        self.path = path
        self.lib = ctypes.CDLL(str(path))

    def kernel(self, name: str, nargs: int) -> Any:
        fn = getattr(self.lib, name)
        fn.argtypes = [ctypes.c_int64] * nargs
        fn.restype = ctypes.c_int
        return fn


def load_cpp_kernels(source: str) -> CppKernels:
    """Compile (or find in the cache) and load ``source``'s kernels."""
    compiler = find_compiler()
    if compiler is None:
        raise CppCompileError(
            "coil: no C++ compiler found for CPU kernels (COIL_CXX, CXX, g++, clang++, c++)"
        )
    key = library_key(source, compiler)
    with _lock:
        if key in _loaded:
            return _loaded[key]
        path = config.cpp_cache_dir() / key[:2] / f"{key}.so"
        if not path.exists():
            try:
                _build(source, compiler, path)
            except OSError:  # an unwritable cache: build in a temporary directory
                path = Path(tempfile.mkdtemp(prefix="coil-cpp-")) / f"{key}.so"
                _build(source, compiler, path)
        kernels = _loaded[key] = CppKernels(path)
        return kernels


def kernel_index_error(name: str) -> None:
    """A kernel flagged an out-of-range indirect index (eager raises the same)."""
    raise IndexError(f"coil: an index is out of bounds in CPU kernel {name}")


_said: set[str] = set()


def say_once(message: str) -> None:
    """Warn with ``message`` once per process."""
    if message not in _said:
        _said.add(message)
        warnings.warn(message, stacklevel=3)
