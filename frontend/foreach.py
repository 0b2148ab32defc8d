"""Decompositions of ATen's multi-tensor ``_foreach_*`` ops.

A compiled ``optimizer.step()`` (``torch.compile(opt.step)``) traces to these:
the foreach implementations of SGD/Adam/AdamW (the default on CUDA) call
``torch._foreach_mul_(params, ...)`` and friends. Kept whole, each is one ATen
call (a multi-tensor-apply kernel) that nothing fuses with: an AdamW step of a
6-parameter model called ATen 12 times between 36 launches of coil's.

Decomposed, every op becomes one aten op per tensor -- the same graph the
for-loop implementation traces to -- so each parameter's update is one
pointwise chain that ``loop-inline``/``loop-fuse`` turn into one kernel (read
param, grad and state once, write them once), and ``host-combine-launches``
then runs the kernels of all parameters as a few launches (Inductor's
``register_foreach_pointwise`` lowers them per tensor too, and its scheduler
groups the results into combo kernels).

:func:`foreach_decompositions` covers every functional ``aten::_foreach_*``
overload with a per-tensor twin (the in-place ones reach the table already
functionalized).

The fused optimizers (``fused=True``: ``torch._fused_adamw_`` ...) never reach
a backend with torch 2.13: Dynamo wraps the optimizers' ``_fused_*`` functions
in ``torch.compiler.disable`` (``torch/_dynamo/eval_frame.py``, "don't trace
into fused optimizer"), so they run ATen's fused kernel between graphs, and a
direct call of ``torch._fused_adamw_`` fails in AOTAutograd's functionalization
for every backend (aot_eager and Inductor alike: "mutating a non-functional
tensor with a functional tensor"). Nothing to decompose there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

aten = torch.ops.aten

_SPECIAL_TARGETS: dict[str, Callable[..., Any]] = {
    # op name (after _foreach_) -> the per-tensor function, where it is not aten.<name>
    "norm": lambda t, ord=2, dtype=None: aten.linalg_vector_norm(t, ord, dtype=dtype),
    "powsum": lambda t, ord=2, dtype=None: aten.sum(
        aten.pow(aten.abs(t if dtype is None else t.to(dtype)), ord)
    ),
    "max": lambda t: aten.max(t),
    "zero": lambda t: aten.zeros_like(t),
    "copy": lambda t, src, non_blocking=False: aten.copy(t, src),
}
"""Foreach ops whose per-tensor twin is not ``aten.<name>`` with the same arguments."""

_NOT_DECOMPOSED = frozenset({"mm"})
"""Foreach ops left whole: a list of matmuls is ATen's anyway (one extern each)."""


def _foreach_schemas() -> list[torch._C.FunctionSchema]:
    return [
        s
        for s in torch._C._jit_get_all_schemas()
        if s.name.startswith("aten::_foreach_")
        and not s.name.endswith("_")  # in-place forms arrive functionalized
        and not s.overload_name.endswith("out")
    ]


def _is_list(arg: torch._C.Argument) -> bool:
    return arg.type.kind() == "ListType"


def _per_tensor(
    name: str, overload: str, schema: torch._C.FunctionSchema
) -> Callable[..., list[Any]]:
    target = _SPECIAL_TARGETS.get(name) or getattr(aten, name)
    positional = [a for a in schema.arguments if not a.kwarg_only]
    lists = [k for k, a in enumerate(positional) if _is_list(a)]
    # addcmul/addcdiv's .Tensor overload passes one value per tensor as a 1-D tensor
    tensor_scalars = name in ("addcmul", "addcdiv") and overload == "Tensor"

    def decomposition(*args: Any, **kwargs: Any) -> list[Any]:
        length = len(args[lists[0]])
        out = []
        for i in range(length):
            call = [a[i] if k in lists else a for k, a in enumerate(args)]
            if tensor_scalars:
                self_, t1, t2, values = call
                product = aten.mul(t1, t2) if name == "addcmul" else aten.div(t1, t2)
                out.append(aten.add(self_, aten.mul(product, values[i])))
            elif name in ("addcmul", "addcdiv") and len(call) == 4:
                # the foreach op's positional value is the per-tensor op's keyword
                out.append(target(*call[:3], value=call[3], **kwargs))
            else:
                out.append(target(*call, **kwargs))
        return out

    decomposition.__name__ = f"foreach_{name}_{overload or 'default'}"
    return decomposition


@functools.cache
def foreach_decompositions() -> dict[torch._ops.OpOverload, Callable[..., Any]]:
    """Every functional ``aten::_foreach_<name>.<overload>`` with a per-tensor twin,
    decomposed into one ``aten.<name>`` call per tensor."""
    table: dict[torch._ops.OpOverload, Callable[..., Any]] = {}
    for schema in _foreach_schemas():
        op_name = schema.name.removeprefix("aten::")
        name = op_name.removeprefix("_foreach_")
        if name in _NOT_DECOMPOSED:
            continue
        if name not in _SPECIAL_TARGETS and not hasattr(aten, name):
            continue
        overload = schema.overload_name
        op = getattr(getattr(aten, op_name), overload or "default")
        table[op] = _per_tensor(name, overload, schema)
    return table


__all__ = ["foreach_decompositions"]
