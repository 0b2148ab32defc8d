"""aten-channels-last: run a convolution net's 2-D convolutions on channels-last
(NHWC) tensors, as Inductor's layout optimization does (``GraphLowering.
decide_layout_opt``, ``kernel/conv.py``).

cuDNN's fast convolution kernels on tensor cores are NHWC kernels: given NCHW
tensors, eager (and a compiler that keeps eager's layout) pays transposes in
and out of every convolution. This pass, per function:

1. decides (``mode=auto``) whether channels-last pays, with Inductor's rules:
   an inference graph (``inference=true``: the torch.compile backend sets it
   for the graphs AOTAutograd compiles for inference; no convolution backward
   in the function) on a CUDA device, static weights (batch and image sizes
   may be symbolic: unlike Inductor, which leaves such graphs NCHW), at least one convolution
   per 300 ops, and the convolutions' flops weighted by Inductor's measured
   channels-last speedups (grouped 1.358, small channels 0.783, in < out
   channels 0.725, other 0.823) not above their plain sum; ``mode=on`` skips
   the rules (any device: the CPU tests use it), ``mode=off`` does nothing;
2. for each 4-D ``aten.convolution``, gives the input and the weight as
   ``aten.clone(memory_format = channels_last)`` (unless already so laid
   out) and the result channels-last strides (what torch's convolution
   returns for a channels-last input);
3. gives every other user of a convolution's result an
   ``aten.clone(memory_format = contiguous_format)`` of it with the result's
   old type, so nothing but the convolutions sees a changed layout: ops that
   read storage (``as_strided``, ATen fallbacks whose result layout follows
   their input's) stay exact.

At the loop level the clones are copy nests: a copy in front of a convolution
is folded into its producer (``bufferize`` stores a nest that an extern call
reads in the layout that call wants, and an extern reads a copy's source
directly), and a copy after one is inlined into the nests that read it
(``loop-inline``), so the NHWC data flows from one convolution through the
fused pointwise/normalization kernels to the next with no transposes; only
graph inputs (the image, the weights) are converted, once per call each (as
Inductor does without freezing), and returned values are copied into eager's
layout by ``bufferize``.

Input and output: aten-level functions. Guarantees: values and the types of
everything but the convolutions are unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from coil.dialects.aten import TensorType
from coil.dialects.aten_ops import AtenCloneOp, AtenConvolutionBackwardOp, AtenConvolutionOp
from coil.dialects.symbolic import SymInt, sym_eq, to_expr
from coil.passinfo import check_options

log = logging.getLogger("coil")

# Inductor's measured channels-last time ratios by convolution kind (< 1: faster).
GROUPED, SMALL, IN_OUT, DEFAULT = 1.358, 0.783, 0.725, 0.823


def channels_last_strides(shape: Sequence[SymInt]) -> tuple[SymInt, ...]:
    """NHWC strides of an [N, C, H, W] shape (torch's, size-1 dims included)."""
    n, c, h, w = shape
    return (h * w * c, 1, w * c, c)


def is_channels_last(t: TensorType) -> bool:
    return len(t.shape) == 4 and all(
        sym_eq(a, b) for a, b in zip(t.strides, channels_last_strides(t.shape))
    )


def _static(t: object) -> bool:
    return isinstance(t, TensorType) and t.is_static


def _convolutions(fn: func.FuncOp) -> list[AtenConvolutionOp]:
    return [
        op
        for op in fn.body.block.ops
        if isinstance(op, AtenConvolutionOp)
        and isinstance(op.input.type, TensorType)
        and len(op.input.type.shape) == 4
        and isinstance(op.weight.type, TensorType)
    ]


SYMBOLIC_SIZE = 256
"""The value a symbolic batch or image size takes in the flops weighting: the
decision weighs the convolutions' flops against each other, so the batch
cancels and only the ratio of spatial sizes between layers matters, which a
network's strides fix; 256 stands for any image size large enough that no
layer's output collapses to a few pixels."""


def _flops(conv: AtenConvolutionOp) -> float:
    """2 * N * Cout * Hout * Wout * (Cin / groups) * kh * kw, with symbolic sizes
    at :data:`SYMBOLIC_SIZE` (Inductor leaves dynamic graphs NCHW; a dynamic
    ResNet-50 then paid 67 cuDNN layout transposes a call on an H100)."""
    n, cout, hout, wout = conv.result.type.shape
    _, cin_per_group, kh, kw = conv.weight.type.shape
    flops = to_expr(2 * n * cout * hout * wout * cin_per_group * kh * kw)
    return float(flops.subs({s: SYMBOLIC_SIZE for s in flops.free_symbols}))


def _kind_ratio(conv: AtenConvolutionOp) -> float:
    out_channels, in_per_group, kh, _ = conv.weight.type.shape
    groups = conv.arg("groups") or 1
    if int(groups) > 1 and in_per_group > 1:
        return GROUPED
    if out_channels <= 64 and in_per_group <= 64:
        return SMALL
    if out_channels * 2 <= in_per_group and kh > 1:
        return IN_OUT
    return DEFAULT


def _mkldnn() -> bool:
    import torch

    return torch.backends.mkldnn.enabled and torch.backends.mkldnn.is_available()


def decide(fn: func.FuncOp, convs: list[AtenConvolutionOp], inference: bool) -> str | None:
    """Why channels-last is not used for ``fn`` (None: use it)."""
    if not convs:
        return "no 2-D convolution"
    if not inference:
        return "not an inference graph"
    if any(isinstance(op, AtenConvolutionBackwardOp) for op in fn.body.block.ops):
        return "a convolution backward"
    devices = {c.input.type.device_attr.data.split(":")[0] for c in convs}
    if devices == {"cpu"}:
        if not all(_static(c.weight.type) for c in convs):
            return "a convolution weight of symbolic size"
        if not _mkldnn():
            return "CPU convolutions without oneDNN (mkldnn)"
        # Inductor's rule for CPU graphs with oneDNN: always channels-last.
        return None
    if devices != {"cuda"}:
        return "not on a CUDA device"
    if not all(_static(c.weight.type) for c in convs):
        return "a convolution weight of symbolic size"
    if len(list(fn.body.block.ops)) >= 300 * len(convs):
        return "few convolutions among many ops"
    total = weighted = 0.0
    for c in convs:
        flops = _flops(c)
        total += flops
        weighted += flops * _kind_ratio(c)
    if weighted > total:
        return "the convolutions' weighted flops predict a slowdown"
    return None


def _clone(x: SSAValue, memory_format: str, t: TensorType, before: Operation) -> SSAValue:
    op = AtenCloneOp.build_from({"self": x}, {"memory_format": memory_format}, [t])
    Rewriter.insert_op(op, InsertPoint.before(before))
    op.result.name_hint = x.name_hint
    return op.result


def _to_channels_last(x: SSAValue, conv: Operation, nhwc: dict[SSAValue, SSAValue]) -> SSAValue:
    """``x`` in NHWC: itself, the NHWC value it was copied back from, or a clone
    (made once per value)."""
    t = x.type
    assert isinstance(t, TensorType)
    if is_channels_last(t):
        return x
    if x not in nhwc:
        cl = TensorType(t.shape, t.element_type, channels_last_strides(t.shape), t.device_attr.data)
        nhwc[x] = _clone(x, "channels_last", cl, conv)
    return nhwc[x]


def _rewrite(convs: list[AtenConvolutionOp]) -> int:
    """Convert ``convs``; returns how many were converted."""
    nhwc: dict[SSAValue, SSAValue] = {}  # a value -> the same data in NHWC
    backs: list[AtenCloneOp] = []
    for conv in convs:
        old = conv.result.type
        if is_channels_last(old) or not old.is_contiguous():
            continue  # already NHWC, or a layout this pass does not know how to restore
        conv.operands[0] = _to_channels_last(conv.input, conv, nhwc)
        conv.operands[1] = _to_channels_last(conv.weight, conv, nhwc)
        new_type = TensorType(
            old.shape, old.element_type, channels_last_strides(old.shape), old.device_attr.data
        )
        result = Rewriter.replace_value_with_new_type(conv.result, new_type)
        # Every user reads the old layout; a later convolution reads `result`.
        back = _clone(result, "contiguous_format", old, conv.next_op)
        result.replace_uses_with_if(back, lambda use: use.operation is not back.owner)
        nhwc[back] = result
        backs.append(back.owner)
    for back in backs:
        if not back.result.uses:
            Rewriter.erase_op(back)
    return len(backs)


@dataclass(frozen=True)
class AtenChannelsLastPass(ModulePass):
    """Channels-last convolutions where they pay (see the module doc)."""

    name = "aten-channels-last"

    mode: str = "auto"
    """"auto": when Inductor's rules say it pays; "on": every 4-D convolution;
    "off": never."""

    inference: bool = False
    """The functions are inference graphs (``mode=auto`` acts only on those)."""

    def __post_init__(self) -> None:
        check_options(self)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.mode == "off":
            return
        for fn in op.ops:
            if not isinstance(fn, func.FuncOp) or fn.is_declaration:
                continue
            convs = _convolutions(fn)
            if self.mode == "auto":
                why_not = decide(fn, convs, self.inference)
                if why_not is not None:
                    if convs:
                        log.debug(
                            "coil: aten-channels-last: %s left NCHW: %s", fn.sym_name.data, why_not
                        )
                    continue
            n = _rewrite(convs)
            if n:
                log.debug(
                    "coil: aten-channels-last: %d convolutions of %s channels-last",
                    n,
                    fn.sym_name.data,
                )


__all__ = ["AtenChannelsLastPass", "channels_last_strides", "decide", "is_channels_last"]
