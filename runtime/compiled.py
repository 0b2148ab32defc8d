"""A compiled graph as a callable: what runs what coil compiled.

The compile driver (``coil.compile_driver``) compiles a graph to a ``-t
python`` module; this module turns that module into the callable torch.compile
gets, and rebuilds the same callable without compiling from a :class:`Recipe`
(a graph-cache or AOTAutograd-cache hit, :mod:`coil.runtime.aotcache`):

* :func:`runner`: the module's ``call`` with the lifted constants appended, the
  effect tokens' stand-ins fed in, and AOTAutograd's boxed form (``.boxed``);
* :func:`compile_kernels`: every kernel compiled up front, in parallel;
* :func:`with_cudagraphs`: the callable replayed as a CUDA graph;
* :func:`rebuild`: all of the above from a recipe;
* :func:`boxed`: any callable in AOTAutograd's boxed calling convention.

It sits in ``runtime/`` below the backend, so the AOTAutograd cache rebuilds a
hit without importing the compile driver.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import torch


@dataclasses.dataclass
class Recipe:
    """What rebuilds a compiled graph's callable from its emitted module."""

    source: str  # the -t python module
    interpret: bool  # its kernels run under Triton's interpreter
    constants: list[Any]  # trailing arguments passed on every call (lifted constants)
    tokens: dict[int, Any]  # input position -> (sizes, dtype, device) of an effect token's stand-in
    # (static inputs, name, mutated inputs) when replayed
    cudagraphs: tuple | None = None


TokenSpec = tuple[tuple[int, ...], torch.dtype, str]
"""An effect token's stand-in as a recipe keeps it: sizes, dtype, device."""


def stand_ins(tokens: dict[int, TokenSpec]) -> dict[int, torch.Tensor]:
    """The stand-in tensors of ``tokens``: real ones even while AOTAutograd's fake
    mode is active (where a compile runs), since the module is called with them."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():
        return {
            k: torch.empty(size, dtype=dtype, device=device)
            for k, (size, dtype, device) in tokens.items()
        }


def compile_kernels(loaded: Any) -> None:
    """Compile every kernel of a GPU module now, in parallel threads, rather than
    one by one at its first launch (Inductor's async_compile).

    Without a usable GPU (a CUDA graph traced on fake tensors on a CPU-only
    machine) the kernels cannot run here anyway; they stay unbound and compile
    at their first launch, where that machine's error belongs."""
    import torch

    from coil.runtime.launch import compile_all

    if torch.cuda.is_available():
        compile_all(loaded)


HOST_SEED = "= int(torch.randint(2**31 - 1"
"""How -t python draws a call's random seed on the host (``host.seed``)."""


def rebuild(recipe: Recipe) -> Callable[..., Any]:
    """The compiled graph ``recipe`` describes, from its module source (a cache hit:
    the module loads through the code cache, its kernels bind to Triton's cache)."""
    from coil.runtime.codecache import load_module

    loaded = load_module(recipe.source, interpret=recipe.interpret)
    if not recipe.interpret:
        compile_kernels(loaded)
    run = runner(loaded.call, recipe)
    if recipe.cudagraphs is not None:
        run = with_cudagraphs(run, *recipe.cudagraphs)
    return run


def runner(call: Callable[[list[Any]], Any], recipe: Recipe):
    constants, source, tokens = recipe.constants, recipe.source, stand_ins(recipe.tokens)
    cache = getattr(call, "__globals__", {}).get("_constants")  # the module's ConstantCache
    if tokens:  # AOTAutograd passes None for an effect token: feed the stand-in
        module_call = call

        def call(inputs: list[Any]) -> Any:
            for k, token in tokens.items():
                inputs[k] = token
            return module_call(inputs)

    def run(*args: Any) -> Any:
        return call([*args, *constants])

    def run_boxed(args: list[Any]) -> Any:
        # AOTAutograd's boxed convention: take the caller's list and clear it,
        # so the wrapper's `del` at an input's last use can free it.
        inputs = [*args, *constants]
        args.clear()
        return call(inputs)

    run_boxed._boxed_call = True  # type: ignore[attr-defined]
    run.boxed = run_boxed  # type: ignore[attr-defined]
    if cache is not None:
        # buffer-hoist-constants' results, brought up to date before a CUDA
        # graph replays the launches that read them (runtime/cudagraphs.py).
        run.coil_refresh = lambda *args: cache.refresh([*args, *constants])  # type: ignore[attr-defined]
    run.coil_source = source  # type: ignore[attr-defined]  (for tests and debugging)
    run.coil_host_rng = HOST_SEED in source  # type: ignore[attr-defined]
    run.coil_recipe = recipe  # type: ignore[attr-defined]  (what the AOTAutograd cache stores)
    return run


def with_cudagraphs(
    run: Callable[..., Any],
    static_inputs: Sequence[int],
    name: str,
    mutated_inputs: Sequence[int] = (),
):
    """``run`` replayed from CUDA graphs. ``mutated_inputs``: the inputs the graph
    writes in place; one that is not static would be copied into the graph's
    own buffer before each replay and the write would land there, not in the
    caller's tensor, so such a graph is not recorded (as cudagraph trees skip
    graphs that mutate inputs; a static KV cache is a buffer or marked with
    ``torch._dynamo.mark_static_address``, and is recorded)."""
    from coil.runtime.cudagraphs import CudaGraphRunner

    blocker = None
    moved = sorted(set(mutated_inputs) - set(static_inputs))
    if getattr(run, "coil_host_rng", False):
        blocker = "it draws random numbers from a seed taken on the host (a replay repeats them)"
    elif not hasattr(run, "coil_source"):
        blocker = "the pipeline stops before the host level"
    elif moved:
        blocker = (
            f"it writes input {moved[0]} in place, which is not a static input (a replay "
            "would write the graph's copy of it; torch._dynamo.mark_static_address makes it static)"
        )
    runner = CudaGraphRunner(run, static_inputs, blocker, name)
    runner.coil_source = getattr(run, "coil_source", None)  # type: ignore[attr-defined]
    if (recipe := getattr(run, "coil_recipe", None)) is not None:
        cudagraphs = (list(static_inputs), name, list(mutated_inputs))
        runner.coil_recipe = dataclasses.replace(recipe, cudagraphs=cudagraphs)  # type: ignore[attr-defined]
    return runner


def boxed(fn: Callable) -> Callable:
    """``fn`` in AOTAutograd's boxed calling convention (one list argument the
    callee may clear, so inputs can be freed during the call): ``fn`` itself if
    it is boxed, its ``boxed`` variant if it has one (coil's compiled graphs),
    else ``make_boxed_func(fn)``."""
    if getattr(fn, "_boxed_call", False):
        return fn
    variant = getattr(fn, "boxed", None)
    if callable(variant) and getattr(variant, "_boxed_call", False):
        return variant
    from torch._functorch.aot_autograd import make_boxed_func

    return make_boxed_func(fn)


__all__ = [
    "HOST_SEED",
    "Recipe",
    "TokenSpec",
    "boxed",
    "compile_kernels",
    "rebuild",
    "runner",
    "stand_ins",
    "with_cudagraphs",
]
