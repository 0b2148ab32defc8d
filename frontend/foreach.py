"""Decompositions of ATen's multi-tensor ops: ``_foreach_*`` and the fused optimizers.

A compiled ``optimizer.step()`` (``torch.compile(opt.step)``) traces to these:
the foreach implementations of SGD/Adam/AdamW (the default on CUDA) call
``torch._foreach_mul_(params, ...)`` and friends, and ``fused=True`` calls one
``torch._fused_adamw_`` for all parameters. Kept whole, each is one ATen call
(ATen's multi-tensor-apply kernels) that nothing fuses with: an AdamW step was
~15 launches of a chain no kernel of coil's could join.

Decomposed, every op becomes one aten op per tensor -- the same graph the
for-loop implementation traces to -- so each parameter's update is one
pointwise chain that ``loop-inline``/``loop-fuse`` turn into one kernel (read
param, grad and state once, write them once), and ``host-combine-launches``
then runs the kernels of all parameters as a few launches (Inductor's
``register_foreach_pointwise`` lowers them per tensor too, and its scheduler
groups the results into combo kernels).

:func:`foreach_decompositions` covers every functional ``aten::_foreach_*``
overload with a per-tensor twin (the in-place ones reach the table already
functionalized); :func:`fused_optimizer_decompositions` writes out the
arithmetic of ATen's fused Adam/AdamW/SGD kernels (``FusedAdamKernel.cpp``,
``fused_adam_utils.cuh``, ``FusedSGDKernel``), opmath in f32 for reduced
floats, ``grad_scale`` and ``found_inf`` as AMP's GradScaler passes them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
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


# ---- fused optimizers ----------------------------------------------------------------


def _opmath(t: torch.Tensor) -> torch.Tensor:
    """``t`` in the dtype ATen's fused kernels compute in (f32 for reduced floats)."""
    return t.float() if t.dtype in (torch.bfloat16, torch.float16) else t


def _scalar(value: float | torch.Tensor) -> float | torch.Tensor:
    return value.float() if isinstance(value, torch.Tensor) else value


def _unscale(grad: torch.Tensor, grad_scale: torch.Tensor | None, maximize: bool) -> torch.Tensor:
    g = _opmath(grad)
    if grad_scale is not None:
        g = g / grad_scale.float()
    return -g if maximize else g


def _skip_if_inf(
    found_inf: torch.Tensor | None, new: Sequence[torch.Tensor], old: Sequence[torch.Tensor]
) -> list[torch.Tensor]:
    """``new`` where no inf was found, ``old`` where one was (the fused kernels
    return early when ``found_inf`` is 1)."""
    if found_inf is None:
        return list(new)
    skip = found_inf.to(torch.bool)
    return [torch.where(skip, o, n) for n, o in zip(new, old)]


def _fused_adam(adamw: bool) -> Callable[..., tuple[list[torch.Tensor], ...]]:
    def decomposition(
        params: list[torch.Tensor],
        grads: list[torch.Tensor],
        exp_avgs: list[torch.Tensor],
        exp_avg_sqs: list[torch.Tensor],
        max_exp_avg_sqs: list[torch.Tensor],
        state_steps: list[torch.Tensor],
        *,
        lr: float | torch.Tensor,
        beta1: float,
        beta2: float,
        weight_decay: float,
        eps: float,
        amsgrad: bool,
        maximize: bool,
        grad_scale: torch.Tensor | None = None,
        found_inf: torch.Tensor | None = None,
    ) -> tuple[list[torch.Tensor], ...]:
        lr = _scalar(lr)
        outs: tuple[list[torch.Tensor], ...] = ([], [], [], [], [])
        for k, (p, g, m, v, step) in enumerate(
            zip(params, grads, exp_avgs, exp_avg_sqs, state_steps)
        ):
            param, grad = _opmath(p), _unscale(g, grad_scale, maximize)
            if weight_decay != 0:
                if adamw:
                    param = param - lr * weight_decay * param
                else:
                    grad = grad + weight_decay * param
            exp_avg = _opmath(m) * beta1 + (1 - beta1) * grad
            exp_avg_sq = _opmath(v) * beta2 + (1 - beta2) * grad * grad
            step = step.float()
            step_size = lr / (1 - torch.pow(beta1, step))
            bias_correction2_sqrt = torch.sqrt(1 - torch.pow(beta2, step))
            second = exp_avg_sq
            new_max = []
            if amsgrad:
                second = torch.maximum(_opmath(max_exp_avg_sqs[k]), exp_avg_sq)
                new_max = [second.to(max_exp_avg_sqs[k].dtype)]
            denom = torch.sqrt(second) / bias_correction2_sqrt + eps
            param = param - step_size * exp_avg / denom
            new_grad = _unscale(g, grad_scale, False)  # written back unscaled, not negated
            new = [
                param.to(p.dtype),
                new_grad.to(g.dtype),
                exp_avg.to(m.dtype),
                exp_avg_sq.to(v.dtype),
                *new_max,
            ]
            old = [p, g, m, v, *(max_exp_avg_sqs[k : k + 1] if amsgrad else [])]
            for out, value in zip(outs, _skip_if_inf(found_inf, new, old)):
                out.append(value)
        if not amsgrad:
            outs[4].extend(aten.clone(t) for t in max_exp_avg_sqs)
        return outs

    return decomposition


def _fused_sgd(
    params: list[torch.Tensor],
    grads: list[torch.Tensor],
    momentum_buffer_list: list[torch.Tensor],
    *,
    weight_decay: float,
    momentum: float,
    lr: float | torch.Tensor,
    dampening: float,
    nesterov: bool,
    maximize: bool,
    is_first_step: bool,
    grad_scale: torch.Tensor | None = None,
    found_inf: torch.Tensor | None = None,
) -> tuple[list[torch.Tensor], ...]:
    lr = _scalar(lr)
    outs: tuple[list[torch.Tensor], ...] = ([], [], [])
    for k, (p, g) in enumerate(zip(params, grads)):
        param, grad = _opmath(p), _unscale(g, grad_scale, maximize)
        if weight_decay != 0:
            grad = grad + weight_decay * param
        new_buf = []
        old_buf = []
        if momentum != 0:
            buf = momentum_buffer_list[k]
            if is_first_step:
                value = grad
            else:
                value = _opmath(buf) * momentum + (1 - dampening) * grad
            new_buf, old_buf = [value.to(buf.dtype)], [buf]
            grad = grad + momentum * value if nesterov else value
        param = param - lr * grad
        new_grad = _unscale(g, grad_scale, False)
        new = [param.to(p.dtype), new_grad.to(g.dtype), *new_buf]
        old = [p, g, *old_buf]
        for out, value in zip(outs, _skip_if_inf(found_inf, new, old)):
            out.append(value)
    if momentum == 0:
        outs[2].extend(aten.clone(t) for t in momentum_buffer_list)
    return outs


@functools.cache
def fused_optimizer_decompositions() -> dict[torch._ops.OpOverload, Callable[..., Any]]:
    """The functional ``_fused_adam``, ``_fused_adamw`` and ``_fused_sgd`` (float and
    tensor learning rate), written out per tensor."""
    return {
        aten._fused_adam.default: _fused_adam(adamw=False),
        aten._fused_adam.tensor_lr: _fused_adam(adamw=False),
        aten._fused_adamw.default: _fused_adam(adamw=True),
        aten._fused_adamw.tensor_lr: _fused_adam(adamw=True),
        aten._fused_sgd.default: _fused_sgd,
        aten._fused_sgd.tensor_lr: _fused_sgd,
    }


__all__ = ["foreach_decompositions", "fused_optimizer_decompositions"]
