"""One place for coil's options, each read from a ``COIL_*`` environment variable.

Options are functions rather than module constants so a test (or a user) can
change the environment after ``import coil`` and be heard.

* ``COIL_CACHE_DIR`` -- where compiled modules and the graph cache are written
  (:mod:`coil.runtime.codecache`, :mod:`coil.runtime.graphcache`). Default:
  ``$XDG_CACHE_HOME/coil``, else ``~/.cache/coil``.
* ``COIL_DISABLE_CACHE=1`` -- compile every graph, neither reading nor writing
  the graph cache (the backend option ``cache=False`` does the same for one
  ``torch.compile``). Generated modules still load through the code cache.
* ``COIL_AOT_CACHE=0`` -- leave torch's AOTAutograd cache out (coil stores
  inference graphs there, keyed by the Dynamo graph: a warm start skips
  AOTAutograd too; :mod:`coil.runtime.aotcache`); the graph cache stays on.
* ``COIL_LOG=timing`` -- after each graph, print the seconds of every stage
  (import, each pass, emit, load, the cache's lookup and store) on stderr
  (:mod:`coil.timing`). A comma-separated list of topics; ``timing`` is the one
  there is.
* ``COIL_PROGRESS=<seconds>`` -- a compile running longer than this (default 5)
  says on stderr which stage it is in, once per stage; ``0`` turns it off (so
  does the backend option ``progress=False``).
* ``COIL_DUMP_DIR=dir`` -- write every stage's IR and the generated code per
  graph (see :mod:`coil.compile_driver`); compiles with a dump bypass the graph cache.
* ``COIL_FALLBACK`` -- the backend's fallback policy when ``options`` names none
  (``eager``, ``extern`` or ``error``; see ``coil.backend.OPTIONS``). Default:
  ``eager``. The test suite sets ``extern`` so that a graph coil fails to
  compile fails its test instead of passing through eager PyTorch.
* ``COIL_TRACEBACK=1`` -- ``fx-opt`` and ``coil`` print the Python traceback
  of an internal error after their one-line message (which they print alone
  otherwise).
* ``COIL_CPU_KERNELS`` -- how kernels over CPU tensors run when the backend's
  ``cpu_kernels`` option names none: ``cpp`` (the default: C++/OpenMP kernels
  built with the system compiler, ``runtime/cpp_kernels.py``) or ``triton``
  (Triton's interpreter, the reference for the Triton kernels).
* ``COIL_CPP_CACHE_DIR`` -- where compiled C++ kernel libraries are kept
  (default: ``$COIL_CACHE_DIR/cpp``). They are keyed by their source, the
  compiler and flags, and the CPU, so one directory can serve many runs: the
  test suite keeps its libraries in the user's cache across runs while every
  run gets a fresh ``COIL_CACHE_DIR``. The precompiled headers of the C++
  wrapper (``runtime/cpp_pch.py``) and its Python bridge live there too.
* ``COIL_CPP_PCH=0`` -- build the C++ wrapper without a precompiled header
  (by default one is built once per compiler, flags and torch, and reused).
* ``COIL_CXX`` -- the C++ compiler for CPU kernels (default: ``$CXX``, then
  ``g++``, ``clang++``, ``c++`` on ``PATH``); ``none`` hides every compiler
  (the fallback path: CPU graphs run as ATen ops).
* ``COIL_CUDAGRAPH_POOL`` -- where a compiled graph's CUDA graphs (one per
  input layout: per size under dynamic shapes) allocate: ``shared`` (the
  default: one memory pool for all of a graph's recordings, as cudagraph trees
  share theirs) or ``per-graph`` (a pool of its own for each recording: more
  memory, no recording's allocations ever overlap another's; a diagnostic for
  a replay failing after recordings at other sizes, ``runtime/cudagraphs.py``).
* ``COIL_SHAPE_GUARDS`` -- ``cpp`` (the default) or ``python``: with ``cpp``,
  the first graph coil compiles with symbolic sizes (``dynamic=True``, or a
  dynamic recompile) turns on Dynamo's C++ symbolic-shape guards
  (``torch._dynamo.config.enable_cpp_symbolic_shape_guards``) for the rest of
  the process: Dynamo otherwise checks every compiled frame's size guards,
  and the nn.Module float attributes ``dynamic=True`` makes symbolic, in one
  Python lambda per call (0.2-0.3 ms a call on GPT-2 and ResNet-50; with C++
  guards coil's dynamic compiles ran at 0.94-0.96x of its static ones on an
  H200, ``benchmarks/RESULTS.md``, eighteenth session). Dynamo falls back to
  the Python guards by itself where it cannot build C++ ones (no compiler,
  values beyond int64). The price is compile time: each dynamic frame's
  guards are then built by the C++ compiler (about ten small builds a frame on
  a cold Inductor cache, ~17 s of CPU for a 3-line function on the 2-core CI
  machine; cached after). ``python`` leaves Dynamo's setting alone (the test
  suite's setting, test/python/conftest.py).
* ``COIL_PDL=1`` -- the backend's ``pdl`` option when ``options`` does not give
  it: kernels on sm90+ GPUs launched with programmatic dependent launch, their
  static inputs (weights) loaded before they wait for the previous kernel
  (``convert-loop-to-tt{pdl=true}``, ``lowering/loop_to_tt/pdl.py``). Off by
  default.
* ``COIL_LIBCUDA_PATH`` -- read by the C++ wrapper's runtime
  (``runtime/cpp/coil_runtime.h``), not by Python: the CUDA driver library it
  opens instead of ``libcuda.so.1``.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_PROGRESS_SECONDS = 5.0

_FALSE = ("", "0", "false", "no", "off")


def cache_dir() -> Path:
    """The code cache's root directory (not created here)."""
    if explicit := os.environ.get("COIL_CACHE_DIR"):
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return Path(base).expanduser() / "coil"


def cpp_cache_dir() -> Path:
    """Where compiled C++ kernel libraries are kept (not created here)."""
    if explicit := os.environ.get("COIL_CPP_CACHE_DIR"):
        return Path(explicit).expanduser()
    return cache_dir() / "cpp"


def cache_disabled() -> bool:
    """``COIL_DISABLE_CACHE`` set to anything but 0/false/no/off."""
    return os.environ.get("COIL_DISABLE_CACHE", "").strip().lower() not in _FALSE


def aot_cache_enabled() -> bool:
    """``COIL_AOT_CACHE`` is not set to 0/false/no/off."""
    value = os.environ.get("COIL_AOT_CACHE", "1").strip().lower()
    return value == "" or value not in _FALSE


def dump_dir() -> str | None:
    """``COIL_DUMP_DIR``: where every graph's stages and code are written, or ``None``."""
    return os.environ.get("COIL_DUMP_DIR") or None


def traceback() -> bool:
    """``COIL_TRACEBACK`` set to anything but 0/false/no/off: the command-line tools
    print an internal error's Python traceback."""
    return os.environ.get("COIL_TRACEBACK", "").strip().lower() not in _FALSE


def log_topics() -> set[str]:
    """The comma-separated topics of ``COIL_LOG`` (lower case)."""
    return {t.strip().lower() for t in os.environ.get("COIL_LOG", "").split(",") if t.strip()}


def log_timing() -> bool:
    """``COIL_LOG`` names ``timing``: print per-stage compile times on stderr."""
    return "timing" in log_topics()


def progress_after(option: bool | float | None = None) -> float | None:
    """Seconds after which a compile reports its stages, or ``None`` (off).

    ``option`` is the backend option ``progress`` (``False``/``0``: off,
    ``True``: the default, a number: that many seconds); without it
    ``COIL_PROGRESS`` decides, then :data:`DEFAULT_PROGRESS_SECONDS`."""
    if option is None:
        text = os.environ.get("COIL_PROGRESS", "").strip().lower()
        if not text:
            return DEFAULT_PROGRESS_SECONDS
        if text in _FALSE:
            return None
        try:
            option = float(text)
        except ValueError:
            raise ValueError(
                f"COIL_PROGRESS must be a number of seconds or 0 (off), not {text!r}"
            ) from None
    if option is True:
        return DEFAULT_PROGRESS_SECONDS
    if option is False or option <= 0:
        return None
    return float(option)


FALLBACKS = ("eager", "extern", "error")
"""The fallback policies, most lenient first (``coil.backend.OPTIONS`` says what
each allows)."""


CPU_KERNELS = ("cpp", "triton")


def cpu_kernels(option: str | None = None) -> str:
    """How CPU kernels run: the backend option, else ``COIL_CPU_KERNELS``, else
    ``cpp`` (C++ kernels; ``triton`` runs Triton's interpreter)."""
    value = option or os.environ.get("COIL_CPU_KERNELS") or "cpp"
    if value not in CPU_KERNELS:
        which = "option cpu_kernels" if option else "COIL_CPU_KERNELS"
        raise ValueError(
            f"coil: {which} must be one of {', '.join(map(repr, CPU_KERNELS))}, not {value!r}"
        )
    return value


def _choice(name: str, choices: tuple[str, ...]) -> str:
    """Environment variable ``name``, lower case, one of ``choices`` (the first
    when unset)."""
    value = os.environ.get(name, "").strip().lower() or choices[0]
    if value not in choices:
        raise ValueError(f"coil: {name} must be one of {', '.join(choices)}, not {value!r}")
    return value


CUDAGRAPH_POOLS = ("shared", "per-graph")


def cudagraph_pool() -> str:
    """``COIL_CUDAGRAPH_POOL`` (``shared`` when unset)."""
    return _choice("COIL_CUDAGRAPH_POOL", CUDAGRAPH_POOLS)


SHAPE_GUARDS = ("cpp", "python")


def shape_guards() -> str:
    """``COIL_SHAPE_GUARDS`` (``cpp`` when unset)."""
    return _choice("COIL_SHAPE_GUARDS", SHAPE_GUARDS)


def pdl() -> bool:
    """``COIL_PDL`` set to anything but 0/false/no/off."""
    return os.environ.get("COIL_PDL", "").strip().lower() not in _FALSE


def cpp_pch() -> bool:
    """``COIL_CPP_PCH`` is not set to 0/false/no/off."""
    return os.environ.get("COIL_CPP_PCH", "1").strip().lower() not in _FALSE


def cxx() -> str | None:
    """``COIL_CXX`` as given (``None`` when unset)."""
    return os.environ.get("COIL_CXX") or None


def fallback() -> str:
    """The default fallback policy (``COIL_FALLBACK``, else ``eager``)."""
    value = os.environ.get("COIL_FALLBACK") or "eager"
    if value not in FALLBACKS:
        raise ValueError(
            f"coil: COIL_FALLBACK must be one of {', '.join(FALLBACKS)}, not {value!r}"
        )
    return value
