"""What generated host modules import at run time: ``cdiv``, ``CoilInputError``,
``check_input``, ``ConstantCache``, ``current_allocator``, ``empty_strided_on``, ``InputGuard``,
``interpret_kernels``, ``reinterpret_tensor``, ``Semaphores``.

Kept tiny and cheap: inputs are checked on every call. ``InputGuard`` makes the
common case (everything as on an earlier call with the same sizes) one C++ call
for all inputs (torch's ``TensorGuards``: sizes, strides, dtype, device); only
when it fails does ``check_input`` compare each input in Python and build the
message.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch

# Generated wrappers call coil's own torch operators (torch.ops.coil.*): a
# module loaded from the code cache in a new process needs them registered.
import coil.dialects.torch_library  # noqa: F401
from coil.intmath import cdiv

__all__ = [
    "CoilInputError",
    "ConstantCache",
    "InputGuard",
    "cdiv",
    "check_input",
    "current_allocator",
    "empty_strided_on",
    "interpret_kernels",
    "reinterpret_tensor",
    "Semaphores",
    "device_scalar",
]

try:
    # torch's C++ view constructor (Inductor's ``reinterpret_tensor``): a view of
    # ``base`` with the given sizes and strides, its storage offset moved by the
    # last argument. Half the host time of ``Tensor.as_strided`` (an H100
    # machine's cProfile of GPT-2: 130 views a call, 3.8 us each).
    from torch._C._dynamo.guards import _reinterpret_tensor as reinterpret_tensor
except ImportError:  # pragma: no cover - older torch

    def reinterpret_tensor(base, size, stride, offset_increment=0):
        return base.as_strided(size, stride, base.storage_offset() + offset_increment)


_DEVICE_SCALARS: dict[tuple, torch.Tensor] = {}


def device_scalar(t: torch.Tensor, device: str) -> torch.Tensor:
    """A 0-d CPU tensor that GPU kernels only read (a Python float Dynamo lifts to
    a graph input under ``dynamic=True``, such as ``math.pi`` in GPT-2's GELU),
    in device memory: one copy per value, kept. A copy per launch costs a host
    allocation and a pageable copy, twelve a call in GPT-2 (one per GELU): host
    work only its dynamic wrapper did, while its dynamic and static compiles ran
    the same GPU kernel time on an H200 (1.380 and 1.352 ms at 8x256) and the
    dynamic one 0.86-0.90x the static one's wall time. The key keeps -0.0 and
    NaN apart (``repr``)."""
    if t.device.type != "cpu":
        return t
    value = t.item()
    key = (repr(value), t.dtype, device)
    cached = _DEVICE_SCALARS.get(key)
    if cached is None:
        if len(_DEVICE_SCALARS) >= 1024:
            _DEVICE_SCALARS.clear()
        cached = _DEVICE_SCALARS[key] = t.to(device)
    return cached


def empty_strided_on(device: str) -> Callable[..., torch.Tensor]:
    """``alloc(sizes, strides, dtype)``: a new tensor on ``device`` through
    torch's C++ allocation helpers (Inductor's ``empty_strided_cuda``), which
    skip ``torch.empty_strided``'s argument parsing and dispatch: an H100
    machine's cProfile of ResNet-50 took 6.2 us per ``torch.empty_strided``
    against 2.9 for the helper; 1.1 against 0.44 us on a CPU. The CUDA helper
    allocates on the current device, so the call checks it is ``device``'s
    (a wrapper runs wherever the caller left the current device)."""
    kind, index = _device_key(device)
    try:
        from torch._C._dynamo import guards
    except ImportError:  # pragma: no cover - older torch
        guards = None
    if kind == "cpu" and hasattr(guards, "_empty_strided_cpu"):
        return guards._empty_strided_cpu  # type: ignore[union-attr]
    target = torch.device(kind, index) if kind != "cpu" else torch.device("cpu")
    # (A CPU build of torch lacks torch._C._cuda_getDevice: a CUDA module loads
    # there, say to be inspected, and allocates through torch.empty_strided.)
    current = getattr(torch._C, "_cuda_getDevice", None)
    if kind == "cuda" and hasattr(guards, "_empty_strided_cuda") and current is not None:
        fast = guards._empty_strided_cuda  # type: ignore[union-attr]

        def alloc(sizes, strides, dtype):
            if current() == index:
                return fast(sizes, strides, dtype)
            return torch.empty_strided(sizes, strides, dtype=dtype, device=target)

        def here() -> Callable[..., torch.Tensor]:
            # The device is checked once: a call allocates through the C++
            # helper itself while it stays current (current_allocator).
            return fast if current() == index else alloc

        alloc.here = here  # type: ignore[attr-defined]
        return alloc

    def alloc_any(sizes, strides, dtype):
        return torch.empty_strided(sizes, strides, dtype=dtype, device=target)

    return alloc_any


def current_allocator(alloc: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """What a call allocates through after its first allocation on ``alloc``'s
    device (``alloc`` an :func:`empty_strided_on` helper): on a GPU that is the
    current device, torch's C++ ``empty_strided_cuda`` itself, so the device is
    checked once a call and each allocation costs no Python frame (Inductor's
    wrapper likewise sets the device once and calls ``empty_strided_cuda``);
    elsewhere ``alloc`` unchanged. The current device does not change during a
    call: the wrapper never sets it, and ATen calls restore it."""
    here = getattr(alloc, "here", None)
    return alloc if here is None else here()


class CoilInputError(ValueError):
    """An input of a compiled function does not match what it was compiled for."""


@functools.cache
def _device_key(device: str | torch.device) -> tuple[str, int]:
    # "cuda" means the device index 0, as the compiler writes it.
    d = torch.device(device)
    return d.type, d.index or 0


def check_input(
    name: str,
    t: object,
    sizes: Sequence[int],
    strides: Sequence[int],
    dtype: torch.dtype,
    device: str,
) -> None:
    """Raise :class:`CoilInputError` unless ``t`` is a tensor with these sizes,
    strides (dimensions of size 1 are not compared), dtype and device."""
    if not isinstance(t, torch.Tensor):
        raise CoilInputError(f"input {name}: expected a tensor, got {type(t).__name__}")
    got = tuple(t.shape)
    if got != tuple(sizes):
        raise CoilInputError(f"input {name}: expected size {tuple(sizes)}, got {got}")
    got_strides = t.stride()
    if got_strides != tuple(strides) and any(
        n != 1 and a != b for n, a, b in zip(got, got_strides, strides, strict=True)
    ):
        raise CoilInputError(
            f"input {name}: expected strides {tuple(strides)}, got {got_strides}"
            " (dimensions of size 1 are not compared)"
        )
    if t.dtype != dtype:
        raise CoilInputError(f"input {name}: expected dtype {dtype}, got {t.dtype}")
    if _device_key(t.device) != _device_key(device) and not _cpu_scalar_for_cuda(t, device):
        raise CoilInputError(f"input {name}: expected device {device}, got {t.device}")


def _cpu_scalar_for_cuda(t: torch.Tensor, device: str) -> bool:
    """A 0-d CPU tensor where a CUDA one was traced: torch mixes those freely, and
    some kernels return them where their fake (meta) version says CUDA (the
    philox seed and offset of attention kernels, saved for the backward). The
    wrapper moves such an input to the device it was compiled for when a kernel
    reads it, and leaves it where it is for ATen calls
    (targets/scalar_inputs.py)."""
    return t.dim() == 0 and t.device.type == "cpu" and str(device).startswith("cuda")


class InputGuard:
    """Remembers inputs that passed ``check_input``, per tuple of size-symbol
    values: ``check(key, *tensors)`` is True when the tensors have exactly the
    sizes, strides, dtypes and devices of the ones ``learn`` saw for ``key``."""

    def __init__(self) -> None:
        self._guards: dict[tuple[int, ...], object] = {}

    def check(self, key: tuple[int, ...], *tensors: torch.Tensor) -> bool:
        guard = self._guards.get(key)
        return guard is not None and guard.check(*tensors)  # type: ignore[attr-defined]

    def learn(self, key: tuple[int, ...], *tensors: torch.Tensor) -> None:
        try:
            from torch._C._dynamo.guards import TensorGuards

            guard = TensorGuards(
                *tensors,
                dynamic_dims_sizes=[list(t.shape) for t in tensors],
                dynamic_dims_strides=[list(t.stride()) for t in tensors],
            )
            if guard.check(*tensors):
                self._guards[key] = guard
        except Exception:  # torch without TensorGuards: every call checks in Python
            pass


def interpret_kernels(namespace: dict) -> None:
    """Make the ``@triton.jit`` functions defined in a generated module run under
    Triton's interpreter (each launch inside ``interpreter_scope``, as the code
    cache loads CPU modules), so a CPU module works when imported directly,
    without ``TRITON_INTERPRET=1``. Called at the end of CPU-device modules."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    from coil.runtime.codecache import InterpretedKernel

    module = namespace.get("__name__")
    for name, value in list(namespace.items()):
        if isinstance(value, JITFunction) and value.fn.__module__ == module:
            namespace[name] = InterpretedKernel(InterpretedFunction(value.fn))
        elif isinstance(value, InterpretedFunction) and value.fn.__module__ == module:
            namespace[name] = InterpretedKernel(value)


class Semaphores:
    """``host.semaphores``: ``n`` int32 counters on ``device`` that the module
    keeps, one set per stream (made zero on the first call on that stream; the
    kernels that take them leave them zero). Per stream, so that two calls of one
    module running at once on two streams never share counters; a CUDA-graph
    recording keeps the set of the stream it warmed up and captured on."""

    __slots__ = ("by_stream", "device", "n")

    def __init__(self, device: str, n: int):
        self.device = torch.device(device)
        self.n = n
        self.by_stream: dict[int | None, torch.Tensor] = {}

    def on(self, stream: int | None) -> torch.Tensor:
        sems = self.by_stream.get(stream)
        if sems is None:
            sems = torch.zeros(self.n, dtype=torch.int32, device=self.device)
            self.by_stream[stream] = sems
        return sems


class ConstantCache:
    """The results of a wrapper's constants function (``buffer-hoist-constants``),
    computed once per version of the parameters it reads.

    An entry is keyed by the inputs' identities and valid while each input is
    still the same tensor (held weakly: the cache never keeps a model alive,
    and an entry goes when one of its tensors dies), with the same
    ``_version`` (an in-place write: ``load_state_dict``, an optimizer step,
    ``with torch.no_grad(): w.mul_(2)``) and data pointer (``w.data = other``
    keeps the version). A stale entry is computed again and copied into the
    tensors it returned before, so their addresses do not change (a recorded
    CUDA graph reads them). Inference tensors keep no version counter: inputs
    among them are computed from on every call. One wrapper serves every
    module of the same code (the layers of a model compiled once), so entries
    are per set of inputs."""

    def __init__(
        self, compute: Callable[[list[Any]], Sequence[torch.Tensor]], positions: Sequence[int]
    ):
        self.compute = compute
        self.positions = tuple(positions)
        """Where ``call``'s inputs hold the constants function's inputs."""
        self.entries: dict[tuple[int, ...], _Entry] = {}
        self.computed = 0
        """How many times the constants function ran (tests, logs)."""

    def get(self, inputs: Sequence[torch.Tensor]) -> Sequence[torch.Tensor]:
        """The constants function's results for ``inputs``."""
        key = tuple(map(id, inputs))
        entry = self.entries.get(key)
        versions = _versions(inputs)
        pointers = [t.data_ptr() for t in inputs]
        # An entry's tensors are alive (a dead one's weakref callback dropped
        # it), so the same ids are the same tensors.
        if entry is not None and versions is not None:
            if versions == entry.versions and pointers == entry.pointers:
                return entry.results
        results = self.run(inputs)
        if entry is not None and _same_layouts(entry.results, results):
            with torch.no_grad():
                for old, new in zip(entry.results, results):
                    old.copy_(new)
            entry.versions, entry.pointers = versions, pointers
            return entry.results
        self.entries[key] = _Entry(self, key, inputs, versions, pointers, results)
        return results

    def refresh(self, args: Sequence[Any]) -> None:
        """Bring the entry for ``call``'s inputs ``args`` up to date (before a
        CUDA graph replays the launches that read it)."""
        self.get([args[k] for k in self.positions])

    def run(self, inputs: Sequence[torch.Tensor]) -> Sequence[torch.Tensor]:
        self.computed += 1
        with torch.no_grad():  # cached data, never part of an autograd graph
            return tuple(self.compute(list(inputs)))


def _versions(inputs: Sequence[torch.Tensor]) -> list[int] | None:
    """The inputs' version counters; None where one is an inference tensor (it
    keeps none: nothing can tell an update)."""
    try:
        return [t._version for t in inputs]
    except RuntimeError:
        return None


def _same_layouts(old: Sequence[torch.Tensor], new: Sequence[torch.Tensor]) -> bool:
    return all(
        a.shape == b.shape and a.stride() == b.stride() and a.dtype == b.dtype
        for a, b in zip(old, new)
    )


class _Entry:
    def __init__(self, cache, key, inputs, versions, pointers, results):
        drop = functools.partial(_drop, weakref.ref(cache), key)
        self.refs = [weakref.ref(t, drop) for t in inputs]
        self.versions = versions
        self.pointers = pointers
        self.results = results


def _drop(cache_ref: weakref.ref, key: tuple[int, ...], _dead: object) -> None:
    cache = cache_ref()
    if cache is not None:
        cache.entries.pop(key, None)
