"""Kernel launchers for generated modules: Triton's compiled kernel bound once.

A launch through ``kernel[grid](*args)`` (Triton's ``JITFunction.run``) binds
the arguments, computes their specialization (dtypes, 16-byte alignment of
every pointer, ranges of every int), hashes it into a cache key and looks the
compiled kernel up, on every call: tens of microseconds of Python per launch.
Everything it decides is known when coil emits the module, so a
:class:`Launcher` decides it once (Inductor's ``CachingAutotuner`` launcher and
static launcher do the same):

* the kernel is compiled once for its signature (``warmup`` with the pointer
  dtypes; every pointer assumed 16-byte aligned unless the kernel's
  ``do_not_specialize_on_alignment`` lists it, every size an i64), through
  Triton's own JIT and disk cache, so its compile is exactly Triton's;
* its loaded function, packed metadata and C launcher are kept, and a launch is
  one call of that launcher: ``run(gx, gy, gz, stream, *args)``.

The emitter guarantees what the binding assumes: a pointer is passed only
where it is 16-byte aligned unless the kernel opts out for that argument, and
the wrapper checks its inputs' alignment (``runtime/wrapper.py``).

Under Triton's interpreter (CPU tensors) a launcher simply calls
``kernel[grid](...)``. :func:`compile_all` binds a module's launchers in
parallel threads (Triton's compile runs much of its time outside the GIL, in
MLIR passes and ``ptxas``); a module loaded on its own binds each launcher at
its first launch.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import Any

log = logging.getLogger("coil")

# A size argument of this value makes Triton type it i64 (not i32), so one
# compiled kernel takes every size.
_I64 = 2**40


class KernelCompileError(RuntimeError):
    """Triton failed to compile a generated kernel (the message holds its source)."""


def raw_stream(device: str) -> int | None:
    """The current CUDA stream of ``device`` as Triton's launcher takes it (None on
    the CPU, where the interpreter ignores streams)."""
    index = _device_index(device)
    if index is None:
        return None
    import torch

    return torch._C._cuda_getCurrentRawStream(index)


@functools.cache
def _device_index(device: str) -> int | None:
    if not device.startswith("cuda"):
        return None
    import torch

    return int(device.split(":")[1]) if ":" in device else torch.cuda.current_device()


class Launcher:
    """Launches kernel ``name`` of a generated module (looked up in ``scope``, the
    module's globals, when first bound: the code cache may wrap it for the
    interpreter after the module is executed).

    ``pdl``: compile it with Triton's ``launch_pdl``, so every launch carries
    CUDA's programmatic-stream-serialization attribute (the kernel may start
    while the previous one runs; it waits for it itself:
    ``lowering/loop_to_tt/pdl.py``). Ignored by the interpreter.

    ``signature`` has ``"*<torch dtype>"`` (``"*bfloat16"``) per pointer and
    ``"i64"`` per size or seed. ``run(gx, gy, gz, stream, *args)`` launches; it
    binds on first use. ``checked`` are the positions of pointers the emitter
    cannot prove 16-byte aligned (inputs, ATen results, odd views): a launch
    where one of them is not aligned goes through Triton's own specializing
    launch instead (correct for any alignment, just slower).
    """

    def __init__(
        self,
        scope: dict[str, Any],
        name: str,
        signature: Sequence[str],
        device: str,
        num_warps: int,
        num_stages: int,
        checked: Sequence[int] = (),
        pdl: bool = False,
    ) -> None:
        self.scope = scope
        self.pdl = pdl
        self.checked = tuple(checked)
        self.name = name
        self.signature = tuple(signature)
        self.device = device
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.run: Callable[..., None] = self._bind_and_run

    def _bind_and_run(self, gx: int, gy: int, gz: int, stream: Any, *args: Any) -> None:
        self.bind()
        self.run(gx, gy, gz, stream, *args)

    def bind(self) -> None:
        """Compile (or load from Triton's cache) and keep the fast launch path."""
        if self.run != self._bind_and_run:
            return
        kernel = self.scope[self.name]
        jit = _jit_function(kernel)
        warps, stages = self.num_warps, self.num_stages
        extra = compile_options(jit, self.pdl)

        def specializing(gx: int, gy: int, gz: int, stream: Any, *args: Any) -> None:
            kernel[(gx, gy, gz)](*args, num_warps=warps, num_stages=stages, **extra)

        if jit is None:  # interpreted (CPU): Triton's own launch
            self.run = specializing
            return
        fast, direct = self._compile(jit)
        checked = self.checked
        if not checked:
            self.run = fast
            return
        if direct is not None and len(checked) <= 2:
            # One Python frame a launch (a cProfile of GPT-2 on an H100 spent
            # 4 us a launch in the check loop and the closure it called).
            self.run = _checked_direct(checked, specializing, *direct)
            return

        def run(gx: int, gy: int, gz: int, stream: Any, *args: Any) -> None:
            for k in checked:
                if args[k].data_ptr() % 16:
                    return specializing(gx, gy, gz, stream, *args)
            return fast(gx, gy, gz, stream, *args)

        self.run = run

    def _compile(self, jit: Any) -> tuple[Callable[..., None], tuple | None]:
        """(the fast launch, and where the C launcher is called directly its
        ``(c_launch, fixed arguments)``, else None)."""
        import torch
        from triton.runtime.jit import MockTensor

        args = [_mock_arg(t, MockTensor) for t in self.signature]
        index = _device_index(self.device) or 0
        try:
            with torch.cuda.device(index):
                compiled = jit.warmup(
                    *args,
                    grid=(1,),
                    num_warps=self.num_warps,
                    num_stages=self.num_stages,
                    **compile_options(jit, self.pdl),
                )
                if hasattr(compiled, "result"):  # Triton's async compile mode
                    compiled = compiled.result()
                run = compiled.run  # loads the module on this device
        except Exception as e:
            source = getattr(jit, "src", "") or ""
            raise KernelCompileError(
                f"coil: Triton could not compile kernel {self.name} "
                f"({type(e).__name__}: {e})\n{source}"
            ) from e
        function, metadata = compiled.function, compiled.packed_metadata
        direct = _c_entry(run)
        if direct is not None:
            c_launch, coop, pdl = direct
            # The launcher's arguments between the stream and the kernel's own:
            # function, cooperative, pdl, global and profile scratch, metadata,
            # the three hooks.
            fixed = (function, coop, pdl, None, None, metadata, None, None, None)

            def launch(gx: int, gy: int, gz: int, stream: Any, *args: Any) -> None:
                c_launch(gx, gy, gz, stream, *fixed, *args)

            return launch, (c_launch, fixed)

        def launch_via_launcher(gx: int, gy: int, gz: int, stream: Any, *args: Any) -> None:
            run(gx, gy, gz, stream, function, metadata, None, None, None, *args)

        return launch_via_launcher, None


def _checked_direct(
    checked: tuple[int, ...],
    specializing: Callable[..., None],
    c_launch: Callable[..., None],
    fixed: tuple,
) -> Callable[..., None]:
    """A launch that checks the 16-byte alignment of one or two pointers and
    calls the C launcher itself (else Triton's specializing launch)."""
    a, b = checked[0], checked[-1]

    def run(gx: int, gy: int, gz: int, stream: Any, *args: Any) -> None:
        if (args[a].data_ptr() | args[b].data_ptr()) % 16:
            return specializing(gx, gy, gz, stream, *args)
        c_launch(gx, gy, gz, stream, *fixed, *args)

    return run


FP_FUSION: dict[str, Any] = {"enable_fp_fusion": True}
"""Compile option of every kernel coil compiles: multiply-adds may fuse into FMAs,
as Inductor asks for (``enable_fp_fusion = not emulate_precision_casts``). Triton
3.9 warns when it is left to its default (which 3.10 changes), so it is given."""


def compile_options(jit: Any, pdl: bool = False) -> dict[str, Any]:
    """Compile options of a compiled (not interpreted) kernel: :data:`FP_FUSION`,
    for one emitted with ``@triton.jit(debug=True)`` (it has device
    assertions, see ``tt.has_device_asserts``) Triton's integer-overflow
    sanitizer, which debug mode turns on as well, off, as Inductor compiles its
    kernels with ``assert_indirect_indexing``, and with ``pdl`` Triton's
    ``launch_pdl`` (its launcher then launches with programmatic dependent launch)."""
    if jit is None:  # interpreted: Triton's interpreter takes no compile options
        return {}
    options = dict(FP_FUSION)
    if getattr(jit, "debug", False):
        options["sanitize_overflow"] = False
    if pdl:
        options["launch_pdl"] = True
    return options


def _c_entry(launcher: Any) -> tuple[Callable[..., None], bool, bool] | None:
    """The C launch function behind Triton's ``CudaLauncher`` where calling it
    directly is exactly what the launcher's ``__call__`` would do: Triton 3.5/3.6
    launchers (``launch(grid, stream, function, cooperative, pdl, global scratch,
    profile scratch, metadata, hooks..., args)``) of kernels that need no scratch
    memory. Elsewhere None: the launcher's own ``__call__`` is used."""
    import inspect

    try:
        params = list(inspect.signature(type(launcher).__call__).parameters)
    except (TypeError, ValueError):
        return None
    if params != ["self", "gridX", "gridY", "gridZ", "stream", "function", "args"]:
        return None
    if getattr(launcher, "global_scratch_size", 1) or getattr(launcher, "profile_scratch_size", 1):
        return None
    c_launch = getattr(launcher, "launch", None)
    if c_launch is None or not hasattr(launcher, "launch_pdl"):
        return None
    return c_launch, bool(launcher.launch_cooperative_grid), bool(launcher.launch_pdl)


def _mock_arg(t: str, mock: Any) -> Any:
    import torch

    if t.startswith("*"):
        return mock(getattr(torch, t[1:]))
    return _I64


def _jit_function(kernel: Any) -> Any:
    """The ``JITFunction`` behind ``kernel``, or None when it is interpreted."""
    from triton.runtime.jit import JITFunction

    return kernel if isinstance(kernel, JITFunction) else None


def launchers(module: ModuleType) -> list[Launcher]:
    return [v for v in vars(module).values() if isinstance(v, Launcher)]


def _prime_triton_key() -> None:
    """Compute Triton's cache key of its own build once, before the threads that
    compile (or load) kernels start: it hashes libtriton (about 500 MB) behind an
    ``lru_cache`` that does not lock, so threads binding their first kernels at
    once each hash it (8 threads on a 2-core CPU: 1.54 s, against 0.38 s once)."""
    import importlib

    # Newer Triton keeps it in runtime.cache, older releases in compiler.compiler.
    for where in ("triton.runtime.cache", "triton.compiler.compiler"):
        try:
            key = getattr(importlib.import_module(where), "triton_key", None)
        except ImportError:
            continue
        if key is not None:
            key()
            return


def compile_all(module: ModuleType, workers: int | None = None) -> None:
    """Bind every launcher of ``module``, compiling its kernels in parallel."""
    todo = launchers(module)
    if not todo:
        return
    workers = workers or min(len(todo), os.cpu_count() or 1, 32)
    if workers <= 1:
        for launcher in todo:
            launcher.bind()
        return
    if any(_jit_function(lr.scope.get(lr.name)) is not None for lr in todo):
        _prime_triton_key()
    with ThreadPoolExecutor(workers, thread_name_prefix="coil-compile") as pool:
        for future in [pool.submit(launcher.bind) for launcher in todo]:
            future.result()
