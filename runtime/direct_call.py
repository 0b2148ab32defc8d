"""Calling a compiled inference graph without AOTAutograd's runtime wrappers.

For an inference graph AOTAutograd returns to Dynamo a chain of wrappers around
the compiled callable (torch/_functorch/aot_autograd.py ``forward``, which
prepends the lifted parameters, then runtime_wrappers.py's
``_create_runtime_wrapper``): the first-call custom-op alias analysis, grad
mode turned off around the call, the output-count check, and -- only where
the graph needs them -- input mutations applied after the call, aliased
outputs regenerated from their bases, dynamic dimensions marked on outputs,
RNG state, effect tokens, subclass unwrapping, duplicated or aliased inputs.
For a graph that needs none of those the chain does
``with no_grad: outs = compiled(args)``; here that costs 9 us called alone
and 5-6 us in place on a 2-core Zen 1 machine (benchmarks/call_path.py,
RESULTS.md seventeenth session), and the same wrappers run on a GPU host.

:func:`marking` wraps an inference compiler: from AOTAutograd's metadata of
the graph being compiled (``TracingContext.fw_metadata``) it records on the
compiled callable whether none of those wrappers has work (``coil_direct``;
the attribute travels with an AOTAutograd cache entry, whose key fixes that
metadata). :func:`direct` then takes AOTAutograd's forward and, where the
chain is exactly the plain one around such a callable, returns a function
that calls it directly (AOTAutograd's own path for the first call); anything
else keeps AOTAutograd's forward.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch

DIRECT = "coil_direct"
"""The attribute a compiled callable carries: no runtime wrapper has work."""

DYNAMIC_DIMS = "coil_dynamic_dims"
"""The attribute a :data:`DIRECT` callable carries beside it: ``(output index,
dims)`` of the outputs whose dims are symbolic, which the direct call marks as
AOTAutograd's wrapper does (``_dynamo_propagated_dynamic_indices``: a later
graph that reads the tensor, after a graph break, takes those dims as dynamic
instead of specializing and recompiling)."""

try:  # torch >= 2.12; before it, a graph with dynamic outputs keeps the wrappers
    from torch._functorch._aot_autograd.runtime_wrappers import (
        mark_dynamo_propagated_dynamic_indices as _mark_dynamic,
    )
except ImportError:  # pragma: no cover - older torch
    _mark_dynamic = None


def needs_no_wrappers(inputs: list[Any]) -> bool:
    """Whether AOTAutograd's runtime wrappers have nothing to do for the graph it is
    compiling now (read from its metadata; False where there is none)."""
    ctx = torch._guards.TracingContext.try_get()
    meta = getattr(ctx, "fw_metadata", None)
    if meta is None or torch._C._is_any_autocast_enabled():
        return False
    if any(i.mutates_data or i.mutates_metadata for i in meta.input_info):
        return False
    if meta.num_outputs_aliased or meta.num_intermediate_bases:
        return False
    if meta.dynamic_outputs and _mark_dynamic is None:
        return False
    if meta.is_rng_op_functionalized or meta.tokens or meta.grad_enabled_mutation is not None:
        return False
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    return not any(is_traceable_wrapper_subclass(x) for x in inputs)


def dynamic_output_dims() -> tuple[tuple[int, frozenset[int]], ...]:
    """``(index, dims)`` of the outputs of the graph AOTAutograd is compiling now
    whose dims are symbolic (its metadata's ``dynamic_dims``)."""
    meta = torch._guards.TracingContext.get().fw_metadata
    return tuple(
        (i, frozenset(o.dynamic_dims)) for i, o in enumerate(meta.output_info) if o.dynamic_dims
    )


def marking(compile_fn: Callable[..., Any]) -> Callable[..., Any]:
    """``compile_fn`` (an inference compiler), its result marked with :data:`DIRECT`
    (and, when it is, :data:`DYNAMIC_DIMS`)."""

    def compile_marked(gm: torch.fx.GraphModule, inputs: list[Any]) -> Any:
        out = compile_fn(gm, inputs)
        ok = needs_no_wrappers(inputs)
        try:
            if ok:
                setattr(out, DYNAMIC_DIMS, dynamic_output_dims())
            setattr(out, DIRECT, ok)
        except AttributeError:  # a callable that takes no attributes: keep the wrappers
            pass
        return out

    return compile_marked


def _chain(fn: Any) -> list[Any]:
    out = [fn]
    while hasattr(out[-1], "__wrapped__"):
        out.append(out[-1].__wrapped__)
    return out


def direct(forward: Callable[..., Any]) -> Callable[..., Any]:
    """``forward`` (what AOTAutograd returned to Dynamo) calling its compiled callable
    directly where :data:`DIRECT` says nothing else has work, else ``forward``."""
    chain = _chain(forward)
    inner = chain[-1]
    dims = getattr(inner, DYNAMIC_DIMS, None)
    if getattr(inner, DIRECT, False) is not True or dims is None:
        return forward
    # The plain chain, innermost last: aot_module_simplified's forward
    # (unboxed: *args), an optional serializable shell, the runtime wrapper, the
    # compiled callable; outside it torch._dynamo.disable (AotAutograd's).
    # (The shell sits outside the runtime wrapper after a cache miss, inside it
    # after a hit; it only forwards the call.)
    names = [getattr(c, "__qualname__", type(c).__qualname__) for c in chain]
    runtime = "_create_runtime_wrapper.<locals>.runtime_wrapper"
    shell = "SerializableCompiledFunction"
    tails = ([shell, runtime], [runtime, shell], [runtime])
    tail = next((t for t in tails if names[-1 - len(t) : -1] == t), None)
    if tail is None:
        return forward
    at = len(names) - 2 - len(tail)
    if at < 0 or names[at] != "aot_module_simplified.<locals>.forward":
        return forward
    aot_forward = chain[at]
    code = aot_forward.__code__
    if not code.co_flags & inspect.CO_VARARGS or "params_buffers_flat" not in code.co_freevars:
        return forward
    cell = aot_forward.__closure__[code.co_freevars.index("params_buffers_flat")]
    params = list(cell.cell_contents)
    if not getattr(inner, "_boxed_call", False):
        return forward
    set_grad = torch._C._set_grad_enabled
    first = [True]

    def call(*args: Any) -> Any:
        if first:  # AOTAutograd's first call (its custom-op alias analysis)
            first.clear()
            return forward(*args)
        grad = torch.is_grad_enabled()
        if grad:
            set_grad(False)
        try:
            outs = inner([*params, *args])
        finally:
            if grad:
                set_grad(True)
        for i, d in dims:
            _mark_dynamic(outs[i], d)
        return list(outs) if isinstance(outs, tuple) else outs

    for name in ("zero_grad", "named_parameters", "named_buffers", "serialize"):
        if hasattr(forward, name):
            setattr(call, name, getattr(forward, name))
    # As AotAutograd returns its forward: Dynamo does not trace into it.
    out = torch._dynamo.disable(call, reason="do not trace AOT-compiled graph")
    out.__wrapped__ = forward  # type: ignore[attr-defined]
    return out


__all__ = ["DIRECT", "direct", "marking", "needs_no_wrappers"]
