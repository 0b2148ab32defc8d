"""Where a compiled call's host time goes, layer by layer (issue 40, CPU or GPU).

``python -m coil.benchmarks.call_path [--row layernorm] [--shape 2x8] [--dtype
float32] [--device cpu|cuda] [--rounds 11] [--iters 1000] [--cpp]``

One module (benchmarks/cpu.py's row constructors), called in one process through
each layer below, the layers interleaved round by round, median of the rounds,
process CPU time per call (``time.process_time_ns``: what this process's
threads spent, so a shared machine's other work counts less; on a GPU the
kernels run asynchronously, so this is the host's time):

* ``eager``: the module itself;
* ``dynamo``: ``torch.compile`` with a backend returning preallocated outputs
  (Dynamo's frame, its guards and the call of the compiled function, nothing
  else);
* ``dynamo+alloc``: the same backend allocating its outputs each call (one
  ATen allocation per output inside Dynamo's call);
* ``coil``: ``torch.compile(backend="coil")``;
* ``coil via aot``: the same with AOTAutograd's forward returned to Dynamo
  where coil returns its direct call (coil.runtime.direct_call): before/after;
* ``direct``: what coil's backend returned, called alone, where it is the
  direct call;
* ``aot forward``: AOTAutograd's forward (its runtime wrappers around coil's
  callable), called alone;
* ``coil call``: coil's compiled callable alone (the ``-t python`` wrapper:
  input check, allocations, the kernels);
* ``coil cpp call`` (``--cpp``): the same graph's C++ wrapper, called directly.

The shares: ``dynamo`` is Dynamo's; ``aot forward - coil call`` AOTAutograd's
runtime wrappers; ``coil call`` coil's own; ``coil - dynamo - aot forward``
what the layers cost together beyond their sum when run in sequence: colder
caches (the first ATen op inside Dynamo's call, ``dynamo+alloc - dynamo``, and
after a kernel that streams more than the L2 the Python path itself).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import torch

from coil.benchmarks.cpu import rows


def _is_direct(fn: Any) -> bool:
    """Whether coil's backend returned its direct call (coil.runtime.direct_call)."""
    return getattr(fn, "__qualname__", "") == "direct.<locals>.call"


def _innermost(fn: Any) -> Any:
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    return fn


def layers(module: torch.nn.Module, x: torch.Tensor, cpp: bool) -> dict[str, Callable[[], Any]]:
    from coil.backend import coil as coil_backend

    with torch.no_grad():
        expected = module(x)
    outs = expected if isinstance(expected, tuple) else (expected,)
    pool = itertools.cycle([tuple(torch.empty_like(o) for o in outs) for _ in range(3)])

    def preallocated(gm, example_inputs):
        return lambda *args: next(pool)

    def allocating(gm, example_inputs):
        return lambda *args: tuple(torch.empty_like(o) for o in outs)

    got: dict[str, Any] = {}

    def recording(options: dict[str, Any], key: str, aot: bool = False):
        def backend(gm, example_inputs):
            forward = coil_backend(gm, example_inputs, options=dict(options))
            got[key] = (forward, [n for n in gm.graph.nodes if n.op == "placeholder"])
            if aot and _is_direct(forward):  # AOTAutograd's forward, as before
                return forward.__wrapped__
            return forward

        return backend

    torch._dynamo.reset()
    compiled = {
        "dynamo": torch.compile(module, backend=preallocated),
        "dynamo+alloc": torch.compile(module, backend=allocating),
        "coil": torch.compile(module, backend=recording({}, "python")),
        "coil via aot": torch.compile(module, backend=recording({}, "aot", aot=True)),
    }
    if cpp:
        compiled["coil cpp"] = torch.compile(module, backend=recording({"wrapper": "cpp"}, "cpp"))
    with torch.no_grad():
        for f in compiled.values():
            f(x)
    # The graph's inputs as Dynamo passes them: the parameters (lifted), then x.
    params = dict(module.named_parameters())

    def graph_args(placeholders: list[Any]) -> list[Any]:
        args = []
        for node in placeholders:  # l_fn_parameters_weight_, ..., l_args_0_
            match = next((p for k, p in params.items() if k.replace(".", "_") in node.name), None)
            args.append(match if match is not None else x)
        return args

    out: dict[str, Callable[[], Any]] = {"eager": lambda: module(x)}
    for name, f in compiled.items():
        out[name] = lambda f=f: f(x)
    forward, placeholders = got["python"]
    args = graph_args(placeholders)
    if _is_direct(forward):
        out["direct"] = lambda: forward(*args)
        forward = forward.__wrapped__
    out["aot forward"] = lambda: forward(*args)
    inner = _innermost(forward)
    out["coil call"] = lambda: inner(list(args))
    if cpp:
        inner_cpp = _innermost(got["cpp"][0])
        out["coil cpp call"] = lambda: inner_cpp(list(args))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--row", default="layernorm", choices=["layernorm", "rmsnorm", "softmax"])
    p.add_argument("--shape", default="2x8", help="rows x columns of the input")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--device", default="cpu")
    p.add_argument("--rounds", type=int, default=11)
    p.add_argument("--iters", type=int, default=1000)
    p.add_argument("--cpp", action="store_true", help="also the C++ wrapper")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    dtype = getattr(torch, a.dtype)
    rows_, cols = (int(s) for s in a.shape.split("x"))
    module, _ = rows()[a.row](dtype)
    module = module.eval().to(a.device)
    if a.row != "softmax":
        module = type(module)(cols).to(dtype).to(a.device).eval()
    x = torch.randn(rows_, cols, dtype=dtype, device=a.device)
    calls = layers(module, x, a.cpp)
    times: dict[str, list[float]] = {k: [] for k in calls}
    clock = time.process_time_ns
    with torch.no_grad():
        for f in calls.values():
            for _ in range(20):
                f()
        for _ in range(a.rounds):
            for k, f in calls.items():
                t = clock()
                for _ in range(a.iters):
                    f()
                times[k].append((clock() - t) / a.iters / 1e3)
    print(
        f"{a.row} [{a.shape}] {a.dtype} on {a.device}, one thread, process CPU time, "
        f"median of {a.rounds} x {a.iters} calls (us per call):"
    )
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in med.items():
        print(f"  {k:14s} {v:9.1f}")
    aot = med["aot forward"] - med["coil call"]
    called = med.get("direct", med["aot forward"])  # what Dynamo calls
    rest = med["coil"] - med["dynamo"] - called
    alloc = med["dynamo+alloc"] - med["dynamo"]
    print(f"  Dynamo's frame, guards and call (dynamo): {med['dynamo']:.1f}")
    print(f"  AOTAutograd's runtime wrappers (aot forward - coil call): {aot:.1f}")
    print(f"  coil's wrapper and kernels (coil call): {med['coil call']:.1f}")
    print(f"  in sequence, beyond the sum (coil - dynamo - what it calls): {rest:.1f}")
    print(f"    of which outputs allocated in Dynamo's call (dynamo+alloc - dynamo): {alloc:.1f}")
    saved = med["coil via aot"] - med["coil"]
    print(f"  coil's direct call saves (coil via aot - coil): {saved:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
