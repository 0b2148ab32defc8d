"""One training step (forward, loss, backward) measured for eager, Inductor and
coil: shared by ``models.py`` (its ``*_train`` rows) and ``sweep.py`` (its
``train:`` rows).

:func:`train_row` does, for a module whose forward returns its scalar loss:

1. correctness with dropout off (compiled programs draw other random numbers
   than eager): the step of each variant, under bf16 autocast where ``amp``,
   against a float32 eager reference without autocast -- the loss, the whole
   gradient and every parameter's (:func:`grad_error`) as
   ``‖out − ref‖ / ‖ref‖``, the largest kept as the row's error; the first
   step's seconds (the compile) on the way;
2. timing with dropout as the config sets it, the same weights: where the
   module has dropout, a second build with dropout on gets those weights and is
   compiled again (that compile untimed) before the caller's ``timer`` times
   each variant's step.

Autocast wraps the forward and the loss only, as a training loop does; the
backward runs outside it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch

Build = Callable[[bool], tuple[torch.nn.Module, tuple]]
"""``build(dropout)``: the module (f32, on the CPU) and its inputs (on the CPU)."""


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    out, ref = out.double(), ref.double()
    return float((out - ref).norm() / ref.norm().clamp_min(1e-30))


NEGLIGIBLE = 1e-4
"""A parameter's reference gradient below this fraction of its fair share of
the whole gradient's norm (``‖R‖ · sqrt(n_p / N)``) is zero but for rounding:
an attention key bias's (softmax ignores a constant added to every score of a
query), 5e-8 of its share in a BERT. Its error over its own norm measures
rounding noise (eager's bf16 step: 7.6e3), not the step: such a parameter is
judged inside the whole gradient's error instead."""


def grad_error(grads: list[torch.Tensor], ref: list[torch.Tensor]) -> float:
    """The step's gradient error: the largest of the whole gradient's
    ``‖G − R‖ / ‖R‖`` and each parameter's, but those whose reference gradient
    is :data:`NEGLIGIBLE`."""
    total = sum(g.numel() for g in ref)
    whole = sum(float(g.double().pow(2).sum()) for g in ref) ** 0.5
    diff = sum(float((o.double() - g.double()).pow(2).sum()) for o, g in zip(grads, ref)) ** 0.5
    errs = [diff / max(whole, 1e-30)]
    for o, g in zip(grads, ref):
        share = whole * (g.numel() / total) ** 0.5
        if float(g.norm()) > NEGLIGIBLE * share:
            errs.append(rel_err(o, g))
    return max(errs)


def _has_dropout(module: torch.nn.Module) -> bool:
    return any(
        isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0 for m in module.modules()
    )


def train_row(
    build: Build,
    *,
    amp: bool,
    device: str,
    variants: Callable[[torch.nn.Module], dict[str, Callable[..., Any]]],
    first_call: Callable[[Callable[[], Any]], tuple[Any, float]],
    timer: Callable[[dict[str, Callable[..., Any]], Callable[[Any], Any], dict], Any],
    shared: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
) -> dict:
    """The row of one training step (see the module doc). ``variants(module)``
    gives the callables to compare (``{"eager": module, "inductor": ...,
    "coil": ...}``); ``first_call(fn)`` returns ``(result, seconds)``;
    ``timer(runs, step, row)`` times ``step(run)`` for each and fills ``row``
    (its result is kept as ``row["profiles"]``); ``shared()`` is held around
    every use of the device but the timing (the sweep's GPU lock). The row
    gets ``<variant>_first_s`` and ``<variant>_err`` for each variant,
    ``dropout`` (whether the timed module had dropout) and what ``timer``
    wrote."""
    row: dict = {}
    torch.manual_seed(0)
    module, inputs = build(False)
    state = {k: v.clone() for k, v in module.state_dict().items()}
    module = module.to(device).train()
    args = tuple(x.to(device) for x in inputs)
    autocast = torch.autocast(device.split(":")[0], dtype=torch.bfloat16, enabled=amp)

    def stepper(mod: torch.nn.Module):
        params = [p for p in mod.parameters() if p.requires_grad]

        def step(f):
            for p in params:
                p.grad = None
            with autocast:
                loss = f(*args)
            loss.backward()
            return loss

        return step, params

    step, params = stepper(module)
    with shared():  # the reference: f32, no autocast
        for p in params:
            p.grad = None
        ref_loss = module(*args).double()
        ref_loss.backward()
        ref = [p.grad.double().clone() for p in params]
    runs = variants(module)
    for name, f in runs.items():
        # The backward compiles at the first backward call, inside autograd:
        # the whole first step holds the shared lock.
        with shared():
            loss, row[f"{name}_first_s"] = first_call(lambda f=f: step(f))
            grad = grad_error([p.grad for p in params], ref)
            lost = abs(float(loss.detach()) - float(ref_loss.detach()))
        row[f"{name}_err"] = max(grad, lost / abs(float(ref_loss.detach())))
    # Timing with dropout as the config sets it, the same weights (a model
    # with no dropout is timed as compiled above).
    torch.manual_seed(0)
    timed, _ = build(True)
    row["dropout"] = _has_dropout(timed)
    if row["dropout"]:
        del runs
        timed.load_state_dict(state)
        timed = timed.to(device).train()
        step, params = stepper(timed)
        runs = variants(timed)
        with shared():
            for f in runs.values():
                step(f)  # compile (not timed: the first call above timed the compile)
    row["profiles"] = timer(runs, step, row)
    return row


def optimizer_row(
    module: torch.nn.Module,
    *,
    device: str,
    backends: tuple[str, ...],
    compile: Callable[[Callable[[], Any], str], Callable[[], Any]],
    first_call: Callable[[Callable[[], Any]], tuple[Any, float]],
    timer: Callable[[dict[str, Callable[..., Any]], Callable[[Any], Any], dict], Any],
    shared: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
) -> dict:
    """The row of one ``AdamW.step()`` (foreach, weight decay 0.01) over the
    parameters of ``module`` (f32, on the CPU) with fixed random gradients:
    eager's foreach step (a float learning rate) against ``compile(opt.step,
    backend)`` for each other of ``backends`` (a tensor learning rate, so a
    schedule does not recompile). Each backend steps its own copy of the
    module from the same state; its error is the largest over parameters of
    ``‖Δ − Δ_eager‖ / ‖Δ_eager‖`` after one step (the first call, its seconds
    the compile), then ``timer`` times further steps (``step(run)`` calls
    ``run()``)."""
    import copy

    module = module.to(device)
    start = [p.detach().clone() for p in module.parameters() if p.requires_grad]
    generator = torch.Generator(device=device).manual_seed(0)
    grads = [torch.randn(p.shape, generator=generator, device=device) for p in start]
    row: dict = {}
    torch._dynamo.reset()
    steps, params_of = {}, {}
    for name in backends:
        clone = copy.deepcopy(module)
        params = [p for p in clone.parameters() if p.requires_grad]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        if name == "eager":
            opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, foreach=True)
            steps[name] = opt.step
        else:
            # capturable: torch refuses a tensor learning rate with foreach
            # and capturable=False on CUDA (torch 2.11: "lr as a Tensor is
            # not supported for capturable=False and foreach=True"), and the
            # CPU needs it asked for too; the rate lives with the parameters.
            opt = torch.optim.AdamW(
                params,
                lr=torch.tensor(1e-3, device=device),
                weight_decay=0.01,
                foreach=True,
                capturable=True,
            )
            steps[name] = compile(opt.step, name)
        params_of[name] = params
    for name, step in steps.items():
        with shared():
            _, row[f"{name}_first_s"] = first_call(step)
    with shared(), torch.no_grad():
        ref = [p - s for p, s in zip(params_of["eager"], start)]
        for name in steps:
            deltas = [p - s for p, s in zip(params_of[name], start)]
            row[f"{name}_err"] = max(rel_err(d, r) for d, r in zip(deltas, ref))
    row["profiles"] = timer(steps, lambda run: run(), row)
    return row


__all__ = ["NEGLIGIBLE", "Build", "grad_error", "optimizer_row", "rel_err", "train_row"]
