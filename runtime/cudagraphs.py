"""CUDA graphs for compiled graphs: record the wrapper's launches once per input
layout, then replay them (``options={"cudagraphs": True}`` or
``torch.compile(mode="reduce-overhead")``), as Inductor's cudagraph trees do.

A call of a compiled graph is hundreds of launches and ATen calls from Python;
a replay is one ``cudaGraphLaunch``. :class:`CudaGraphRunner` keeps, per input
layout (sizes, strides, dtypes, devices; size arguments by value), one
recorded graph with static input buffers:

* inputs that stay in place between calls (parameters and buffers: AOTAutograd's
  ``static_input_indices``) are captured where they are, and their addresses are
  part of the key (a moved parameter records a new graph);
* every other tensor input is copied into the graph's own input buffer before
  each replay;
* results of the wrapper's constants function (``buffer-hoist-constants``) are
  brought up to date before each replay (a parameter updated in place is
  computed from again, into the same tensors, so the graph's addresses hold);
* outputs live in the graph's memory pool, which the next replay of any of the
  runner's graphs overwrites. A replay hands them out uncopied (an alias each,
  ``detach()``) and remembers them. Before the next replay, if one of them is
  still held (its storage's use count above what the runner's own references
  make), replaying would change a result the caller kept: that call runs
  without the graph, and from then on that output (by position) is returned as
  a copy. A caller that drops results before the next call -- an inference
  loop that consumes its output, a training step whose saved activations die
  in backward -- never pays for a copy; one that keeps a result (``y =
  model(x)`` in a loop keeps the last ``y`` during the call) pays one copy of
  that output per call. No earlier result ever changes, and no access rule is
  needed (cudagraph trees instead return results uncopied and make a stale one
  raise when read).

Each call runs the graph once. The call that records runs it on a side stream
(the warm-up that lazy initialization needs), captures it (which executes
nothing) and returns the warm-up's results; replays start with the next call.
Replaying after the warm-up would run it twice, and a graph that updates an
input in place by what it reads (a KV cache's fill counter, ``n.add_(1)``;
BatchNorm's running statistics) would count twice: transformers'
``StaticCache`` then put the first decoded token's keys at two positions and
let its query attend to both (first-step logits 6.5e-2 from eager's on an
H200), and every later token wrote one slot past the one it attended to.
Cudagraph trees likewise run a graph once per call (a warm-up call, then a
recording call that replays once after capturing).

cuBLAS's workspace for the capturing stream is made inside the graph's pool
(the cached ones are cleared before and after each capture, as cudagraph trees
do), so no one else's clearing of the workspaces can free memory a graph writes.

It falls back to the plain call, logging the reason once per graph, where a
graph cannot be recorded: the graph draws random numbers on the host (a replay
would repeat them), an input is a CPU tensor, more than ``MAX_GRAPHS`` input
layouts were seen, or recording itself failed (an op that synchronizes, say).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils._pytree as pytree

from coil import config

log = logging.getLogger("coil")

MAX_GRAPHS = 16
"""Recorded graphs per compiled graph (one per input layout) before falling back."""


@dataclass
class _Recording:
    graph: torch.cuda.CUDAGraph
    inputs: list[Any]  # what the graph reads: static tensors, its own buffers, ints
    copied: list[int]  # positions copied into the graph's buffers before a replay
    static: list[int]  # positions of static inputs
    pointers: list[int | None]  # their addresses when recorded, at the same positions
    leaves: list[Any]  # the outputs, flattened (pytree), and their structure
    spec: Any
    # Outputs in memory a replay rewrites: (position in leaves, tensor, its
    # storage's use count when only the runner held it).
    pooled: list[tuple[int, torch.Tensor, int]]
    # ``(results,)`` of the warm-up run, which the recording call returns (then
    # None): capturing executes nothing, and replaying after the warm-up would
    # run the graph twice in one call.
    first: tuple[Any] | None = None

    copied_into: list[torch.Tensor] = field(init=False)  # the graph's buffers of ``copied``

    def __post_init__(self) -> None:
        self.copied_into = [self.inputs[k] for k in self.copied]


def _uses(t: torch.Tensor) -> int:
    """References to ``t``'s storage (tensors, views, storage objects), counted the
    same way at every call."""
    return torch._C._storage_Use_Count(t.untyped_storage()._cdata)


def _same_pointers(args: Sequence[Any], recording: _Recording) -> bool:
    """Whether the static inputs are still at the addresses the graph was recorded
    with (one C++ call on CUDA builds of torch, which reads ``pointers`` at the
    same positions as ``args``, as cudagraph trees pass them)."""
    check = getattr(torch._C, "_tensors_data_ptrs_at_indices_equal", None)
    if check is not None:
        return check(list(args), recording.pointers, recording.static)
    return all(args[k].data_ptr() == recording.pointers[k] for k in recording.static)


class CudaGraphRunner:
    """Replays ``run`` (a compiled graph's callable) from CUDA graphs."""

    def __init__(
        self,
        run: Callable[..., Any],
        static_inputs: Sequence[int] = (),
        blocker: str | None = None,
        name: str = "graph",
    ) -> None:
        self.run = run
        self.static = frozenset(static_inputs)
        self.blocker = blocker  # why this graph can never be recorded
        self.name = name
        self.recordings: dict[tuple, _Recording | None] = {}
        self.pool: Any = None
        self.warned: set[str] = set()
        self.last: dict[tuple, _Recording] = {}  # per size-argument values
        self.size_positions: tuple[int, ...] | None = None
        self.escaped: list[tuple[int, torch.Tensor, int]] = []  # pooled outputs handed out
        self.copied_outputs: set[int] = set()  # positions a caller kept: returned as copies
        # The compiled graph's constants cache, checked before each replay.
        self.refresh: Callable[..., None] | None = getattr(run, "coil_refresh", None)

    def _fallback(self, reason: str) -> None:
        if reason not in self.warned:
            self.warned.add(reason)
            log.warning("coil: no CUDA graph for %s: %s; running it without", self.name, reason)

    def _key(self, args: Sequence[Any]) -> tuple:
        if self.size_positions is None:
            self.size_positions = tuple(
                k for k, a in enumerate(args) if not isinstance(a, torch.Tensor)
            )
        key = []
        for k, a in enumerate(args):
            if isinstance(a, torch.Tensor):
                item = (a.shape, a.stride(), a.dtype, a.device)
                key.append(item + ((a.data_ptr(),) if k in self.static else ()))
            else:
                key.append(a)
        return tuple(key)

    def __call__(self, *args: Any) -> Any:
        if self.blocker is not None:
            self._fallback(self.blocker)
            return self.run(*args)
        # Fast path, as cudagraph trees: torch.compile's guards fix the inputs'
        # metadata for given size arguments, so the last recording for these
        # sizes replays if the static inputs are still where they were.
        sizes = tuple(args[k] for k in self.size_positions) if self.size_positions else ()
        recording = self.last.get(sizes)
        if recording is None or not _same_pointers(args, recording):
            key = self._key(args)
            recording = self.recordings.get(key, _MISSING)
            if recording is _MISSING:
                recording = self._record(args, key)
                if recording is not None and recording.first is not None:
                    # This call's results are the warm-up's: the graph ran once.
                    self.last[sizes] = recording
                    (first,), recording.first = recording.first, None
                    return first
            if recording is None:
                return self.run(*args)
            self.last[sizes] = recording
        if self.escaped:
            kept = {i for i, t, alone in self.escaped if _uses(t) > alone}
            if kept:
                return self._kept(kept, args)
            self.escaped.clear()
        if self.refresh is not None:
            # Parameters updated in place since the recording: their constants
            # (buffer-hoist-constants) are computed again, into the same tensors.
            self.refresh(*args)
        if recording.copied:
            # One launch for every input, as cudagraph trees copy them
            # (_foreach_copy_), rather than one copy_ (a memcpy) each.
            torch._foreach_copy_(recording.copied_into, [args[k] for k in recording.copied])
        recording.graph.replay()
        copied = self.copied_outputs
        leaves = [
            (t.clone() if i in copied else t.detach()) if isinstance(t, torch.Tensor) else t
            for i, t in enumerate(recording.leaves)
        ]
        self.escaped.extend(p for p in recording.pooled if p[0] not in copied)
        return pytree.tree_unflatten(leaves, recording.spec)

    def _kept(self, kept: set[int], args: Sequence[Any]) -> Any:
        """Results of an earlier replay (outputs ``kept``) are still held: run this
        call without the graph (its outputs go to fresh memory), and from now on
        return copies of those outputs."""
        log.info(
            "coil: outputs %s of %s are kept across calls; replays return copies of them",
            sorted(kept),
            self.name,
        )
        self.copied_outputs |= kept
        return self.run(*args)

    def _record(self, args: Sequence[Any], key: tuple) -> _Recording | None:
        reason = self._unrecordable(args)
        if reason is not None:
            self._fallback(reason)
            self.recordings[key] = None
            return None
        inputs: list[Any] = []
        copied: list[int] = []
        for k, a in enumerate(args):
            if isinstance(a, torch.Tensor) and k not in self.static:
                buf = torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device=a.device)
                buf.copy_(a)
                inputs.append(buf)
                copied.append(k)
            else:
                inputs.append(a)
        device = next(a.device for a in args if isinstance(a, torch.Tensor))
        try:
            # Warm up on a side stream (lazy initialization, cuBLAS workspaces,
            # kernel binding), as torch.cuda.graphs documents, then record on
            # that same stream: what the module keeps per stream (the split
            # reductions' counters, host.semaphores) is then made in the warm-up,
            # outside the graph's pool, instead of zeroed inside the graph.
            side = torch.cuda.Stream(device)
            side.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(side):
                first = self.run(*inputs)
            torch.cuda.current_stream(device).wait_stream(side)
            if self.pool is None or config.cudagraph_pool() == "per-graph":
                self.pool = torch.cuda.graph_pool_handle()
            graph = torch.cuda.CUDAGraph()
            # cuBLAS keeps one workspace per (handle, stream), made by the
            # warm-up outside the graph's pool: a graph captured over it
            # writes memory the graph does not own, and anyone who clears the
            # workspaces (Inductor's cudagraph trees do around each of their
            # recordings) frees it under the graph (GPT-2 under both
            # backends' reduce-overhead: `unspecified launch failure` at
            # coil's next replay). Cleared before the capture, the workspace
            # is made inside the pool, which the graph holds; cleared after,
            # no plain call on this stream reuses the graph's memory.
            _clear_cublas_workspaces()
            try:
                with torch.cuda.graph(graph, pool=self.pool, stream=side):
                    outputs = self.run(*inputs)
            finally:
                _clear_cublas_workspaces()
        except Exception as e:  # an op that cannot be recorded: run without graphs
            self._fallback(f"recording failed ({type(e).__name__}: {e})")
            self.recordings[key] = None
            return None
        static = [k for k, a in enumerate(args) if isinstance(a, torch.Tensor) and k in self.static]
        # Indexed like args (None where not static).
        pointers = [args[k].data_ptr() if k in static else None for k in range(len(args))]
        # An output in a static input's storage (a view of a parameter) is not
        # rewritten by a replay; every other one is (the pool, the input copies).
        fixed = {args[k].untyped_storage().data_ptr() for k in static}
        leaves, spec = pytree.tree_flatten(outputs)
        pooled = [
            (i, t, _uses(t))
            for i, t in enumerate(leaves)
            if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in fixed
        ]
        recording = _Recording(graph, inputs, copied, static, pointers, leaves, spec, pooled)
        own = {inputs[k].untyped_storage().data_ptr() for k in copied}
        recording.first = (_detached(first, own),)
        self.recordings[key] = recording
        return recording

    def _unrecordable(self, args: Sequence[Any]) -> str | None:
        if len(self.recordings) >= MAX_GRAPHS:
            return f"more than {MAX_GRAPHS} input layouts"
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if not tensors:
            return "no tensor inputs"
        if any(not t.is_cuda for t in tensors):
            return "a CPU tensor input"
        if len({t.device for t in tensors}) > 1:
            return "inputs on several devices"
        return None


_MISSING: Any = object()


def _clear_cublas_workspaces() -> None:
    """Drop cuBLAS's cached workspaces (as Inductor's cudagraph trees do around
    a recording), where this build of torch has the call."""
    clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if clear is not None:
        clear()


def _detached(outputs: Any, buffers: set[int]) -> Any:
    """The warm-up run's ``outputs`` as the recording call returns them: a result
    in one of the graph's own input ``buffers`` (storage addresses), which the
    next replay's input copy rewrites, is copied."""
    leaves, spec = pytree.tree_flatten(outputs)
    leaves = [
        t.clone()
        if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() in buffers
        else t
        for t in leaves
    ]
    return pytree.tree_unflatten(leaves, spec)
