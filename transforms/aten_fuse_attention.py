"""aten-fuse-attention: attention written by hand becomes fused SDPA.

``softmax(q @ k.transpose(-1, -2) / sqrt(d)) @ v`` reaches the aten level as
two ``bmm`` with views around them, a softmax and the scale: four kernels and
a ``[B, H, L, S]`` scores tensor written and read twice. Inductor rewrites
such blocks to ``scaled_dot_product_attention`` (``fx_passes/fuse_attention.py``,
one traced pattern per spelling); this pass proves the same rewrite with the
layout algebra of :mod:`coil.transforms.attention_pattern`, so one matcher
covers the spellings people write: the scale as ``/ sqrt(d)`` or ``* scale``
on the scores, on q or on k; ``matmul``/``@``, ``bmm``, ``baddbmm`` (the core
decompositions make it ``bmm`` + scale + add) and ``einsum``; additive float
masks (ALiBi, relative-position biases, HF's ``finfo.min`` padding masks);
boolean and causal masks through ``masked_fill``/``where`` with ``-inf`` or a
large finite fill; the softmax in float32 and cast back; dropout; k and v
with fewer heads repeated by ``expand``/``repeat_interleave`` (grouped-query
attention, SDPA's ``enable_gqa``).

Each match is replaced by torch's own ``scaled_dot_product_attention``
traced on FakeTensors of the operands' types (as ``aten-decompose`` traces a
decomposition): torch picks the kernel for those dtypes, shapes, strides and
device as it does in eager -- ``_scaled_dot_product_flash_attention_for_cpu``
on a CPU, flash, memory-efficient or cuDNN attention on CUDA -- and the ops
it emits are imported in place of the match. Where torch would pick its math
path (a 3-D head dimension mismatch, dropout on a CPU) the block stays as it
is: the math path is the same unfused computation (``fused-only=false``
rewrites it anyway, for tests).

Input: aten-level functions. Output: the same, each proven attention block
replaced by ops computing the same function (see ``AttentionSpec`` for the
rows where eager's softmax and SDPA's kernels differ -- a fully masked row
-- which the replacement restores to eager's values); every other value
keeps its type. Run before ``aten-decompose``, which would split the softmax.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from coil.dialects import dtypes
from coil.dialects.aten import AtenOp, ConstantOp, OperatorOp, TensorType
from coil.dialects.symbolic import to_expr
from coil.transforms.attention_pattern import (
    AttentionMatch,
    Const,
    match_attention,
)

log = logging.getLogger("coil")

FUSED_KERNELS = (
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_fused_attention_overrideable",
    "_flash_attention_forward",
    "_efficient_attention_forward",
)
"""ATen ops of torch's fused attention kernels (the CPU flash op's name starts
like the CUDA one's)."""


class AtenView:
    """The aten dialect as :class:`~coil.transforms.attention_pattern.GraphView`."""

    def op(self, v: SSAValue) -> str | None:
        owner = v.owner
        return owner.name if isinstance(owner, AtenOp) else None

    def result_index(self, v: SSAValue) -> int:
        return v.index if hasattr(v, "index") else 0

    def operand(self, v: SSAValue, name: str) -> Any:
        owner = v.owner
        assert isinstance(owner, AtenOp)
        groups = owner.operand_groups()
        if name not in groups:
            return None
        values = groups[name]
        if not values or values[0] is None:
            return None
        x = values[0]
        if isinstance(x.owner, ConstantOp):
            return Const(x.owner.python_value)
        return x

    def arg(self, v: SSAValue, name: str) -> Any:
        owner = v.owner
        assert isinstance(owner, AtenOp)
        for spec in owner.schema().props:
            if spec.name == name and spec.kind.name == "DTYPE":
                attr = owner.arg_attr(name)
                return None if isinstance(attr, builtin.NoneAttr) else dtypes.name_of(attr)
        return owner.arg(name)

    def scalar(self, v: Any) -> float | None:
        if isinstance(v, Const):
            value = v.value
        elif isinstance(v, SSAValue) and isinstance(v.owner, AtenOp):
            owner = v.owner
            if owner.name == "aten.scalar_tensor.default":
                value = owner.arg("s")
            elif owner.name == "aten.full.default" and not owner.arg("size"):
                value = owner.arg("fill_value")
            else:
                return None
        else:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value)

    def shape(self, v: SSAValue) -> tuple[Any, ...]:
        return tuple(to_expr(d) for d in v.type.shape)

    def dtype(self, v: SSAValue) -> str:
        return dtypes.name_of(v.type.element_type)

    def device(self, v: SSAValue) -> str:
        return v.type.device_attr.data

    def users(self, v: SSAValue) -> list[Any]:
        out: list[Any] = []
        for use in v.uses:
            user = use.operation
            out.append(user.results[0] if isinstance(user, AtenOp) and user.results else None)
        return out

    def nameable(self, v: SSAValue) -> bool:
        return isinstance(v.type, TensorType)


class ReplacementFailed(Exception):
    """The replacement could not be traced or does not fit (the match stays)."""


@dataclass
class _Template:
    args: list[SSAValue]
    ops: list[Operation]
    result: SSAValue
    fused: bool


def _trace(match: AttentionMatch, operands: list[SSAValue]) -> _Template:
    """torch's SDPA for the match, traced on FakeTensors of the operands' types
    (symbolic sizes through a ShapeEnv mapped back to the IR's symbols)."""
    import torch
    from torch._subclasses.fake_tensor import unset_fake_temporarily
    from torch.fx.experimental.proxy_tensor import make_fx

    from coil.frontend.decompositions import decomposition_table
    from coil.frontend.fake import FakeEnv
    from coil.frontend.fx_importer import import_graph
    from coil.transforms.attention_pattern import attention_replacement

    spec = match.spec.as_tuple()
    env = FakeEnv()
    fakes = [env.fake_tensor(v.type) for v in operands]

    def traced(*tensors: torch.Tensor) -> torch.Tensor:
        return attention_replacement(*tensors, spec=spec)

    guards_before = len(env.shape_env.guards)
    try:
        with torch._guards.tracing(None), unset_fake_temporarily():
            gm = make_fx(
                traced, decomposition_table=decomposition_table(), tracing_mode="symbolic"
            )(*fakes)
    except Exception as e:
        raise ReplacementFailed(f"tracing SDPA failed: {type(e).__name__}: {e}") from e
    if len(env.shape_env.guards) != guards_before:
        raise ReplacementFailed("SDPA's trace would specialize a symbolic size")
    module = import_graph(gm, rename_symbols=env.back_to_ir)
    fn = next(o for o in module.ops if isinstance(o, func.FuncOp))
    block = fn.body.block
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    if len(ret.arguments) != 1 or len(block.args) != len(operands):
        raise ReplacementFailed("the traced SDPA has other inputs or outputs than the match")
    ops = [o for o in block.ops if o is not ret]
    names = [o.overload_name.data if isinstance(o, OperatorOp) else o.name for o in ops]
    fused = any(kernel in name for name in names for kernel in FUSED_KERNELS)
    return _Template(list(block.args), ops, ret.arguments[0], fused)


def _signature(match: AttentionMatch, operands: list[SSAValue]) -> Hashable:
    return (match.spec, tuple(v.type for v in operands))


def _erase_dead(values: list[SSAValue]) -> None:
    """Erase the ops of ``values`` (the replaced block) nothing reads any more,
    consumers first, and the ops feeding only them."""
    work = [v.owner for v in reversed(values) if isinstance(v.owner, Operation)]
    seen: set[int] = set()
    while work:
        op = work.pop(0)
        if id(op) in seen or op.parent is None:
            continue
        if any(r.uses for r in op.results) or not isinstance(op, AtenOp | ConstantOp):
            continue
        seen.add(id(op))
        producers = [o.owner for o in op.operands if isinstance(o.owner, AtenOp | ConstantOp)]
        Rewriter.erase_op(op)
        work.extend(producers)


def _scale_text(x: float) -> str:
    return f"{x:.6g}"


def fuse_function(
    fn: func.FuncOp, fused_only: bool = True, templates: dict | None = None
) -> list[str]:
    """Rewrite the attention blocks of ``fn``; returns one line per rewrite."""
    view = AtenView()
    templates = {} if templates is None else templates
    done: list[str] = []
    products = [
        op.results[0]
        for op in fn.body.block.ops
        if isinstance(op, AtenOp) and op.name in ("aten.bmm.default", "aten.mm.default")
    ]
    for product in products:
        if product.owner.parent is None:  # erased by an earlier rewrite
            continue
        for allow_gqa in (True, False):
            match = match_attention(view, product, allow_gqa=allow_gqa)
            if match is None:
                break
            operands = [match.query, match.key, match.value, *match.masks]
            key = _signature(match, operands)
            template = templates.get(key)
            if template is None:
                try:
                    template = _trace(match, operands)
                except ReplacementFailed as e:
                    template = e
                templates[key] = template
            if isinstance(template, ReplacementFailed):
                log.info("aten-fuse-attention: kept a block: %s", template)
                break
            if match.spec.gqa and not template.fused and fused_only:
                continue  # torch has no fused kernel for these heads: try k, v repeated
            if not template.fused and fused_only:
                log.info("aten-fuse-attention: kept a block: torch picks its math path for it")
                break
            if template.result.type != match.target.type:
                log.info(
                    "aten-fuse-attention: kept a block: SDPA gives %s for %s",
                    template.result.type,
                    match.target.type,
                )
                break
            _instantiate(template, operands, match)
            spec = match.spec
            done.append(
                f"attention: scale {_scale_text(spec.scale)}, {len(spec.terms)} mask(s), "
                f"dropout {spec.dropout_p:g}, gqa {spec.gqa}"
            )
            break
    return done


def _instantiate(template: _Template, operands: list[SSAValue], match: AttentionMatch) -> None:
    target = match.target
    anchor = target.owner
    assert isinstance(anchor, Operation)
    mapper: dict[SSAValue, SSAValue] = dict(zip(template.args, operands, strict=True))
    new_ops = [o.clone(value_mapper=mapper) for o in template.ops]
    for o in new_ops:
        o.location = anchor.location
    Rewriter.insert_op(new_ops, InsertPoint.before(anchor))
    result = mapper.get(template.result, template.result)
    hint = target.name_hint
    target.replace_all_uses_with(result)
    if hint is not None:
        result.name_hint = hint
    _erase_dead([*match.region, target])


@dataclass(frozen=True)
class AtenFuseAttentionPass(ModulePass):
    """Rewrite attention blocks to SDPA (see the module doc).

    Input: aten-level functions. Output: the same, each attention block that
    the pattern proves and for which torch picks a fused kernel replaced by
    the ops of ``scaled_dot_product_attention`` as torch traces them, with the
    replaced value's type; everything else unchanged."""

    name = "aten-fuse-attention"

    fused_only: bool = True
    """Rewrite only where torch picks a fused kernel (false: also where it would
    run its math path, for tests on a CPU)."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        templates: dict = {}
        for fn in op.ops:
            if isinstance(fn, func.FuncOp) and not fn.is_declaration:
                for line in fuse_function(fn, self.fused_only, templates):
                    log.debug("aten-fuse-attention: %s", line)


def count_attention(module: builtin.ModuleOp) -> int:
    """How many fused attention kernels ``module`` calls (for tests and reports)."""
    n = 0
    for op in module.walk():
        name = op.overload_name.data if isinstance(op, OperatorOp) else op.name
        if any(kernel in name for kernel in FUSED_KERNELS):
            n += 1
    return n


__all__ = ["AtenFuseAttentionPass", "AtenView", "count_attention", "fuse_function"]
