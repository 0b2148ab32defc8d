"""aten-peel-conv-bias: a CUDA convolution's bias becomes a separate add, so it
fuses into the kernel of the ops that follow (Inductor's ``convolution``
lowering: "peel off the bias, cudnn is slower with it").

ATen's cuDNN convolution adds its bias with a second, unfused elementwise
kernel of its own (``CUDAFunctor_add``: ConvNeXt-Tiny runs 22 a call, each an
ATen dispatch on the host). After this pass the convolution has no bias and
``aten.add(conv, aten.view(bias, [C, 1, ...]))`` follows it: a pointwise op
that ``loop-inline`` folds into the normalization/activation nest reading the
convolution's result. Both ways round the convolution's output to its dtype
before adding the bias, so the values are eager's.

Input and output: aten-level functions. Only convolutions on a CUDA device
are rewritten (``all-devices=true``: every device; the CPU tests use it, as
a CPU convolution fuses its bias well). Guarantees: every value keeps its
type; a convolution with no bias or no output channel is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from coil.dialects.aten import TensorType
from coil.dialects.aten_ops import AtenAddTensorOp, AtenConvolutionOp, AtenViewOp


def _peel(conv: AtenConvolutionOp) -> bool:
    bias = conv.bias
    if bias is None:
        return False
    out = conv.result.type
    if not isinstance(out, TensorType) or not isinstance(bias.type, TensorType):
        return False
    if len(out.shape) < 3 or out.shape[1] == 0 or bias.type.element_type != out.element_type:
        return False
    shape = [out.shape[1]] + [1] * (len(out.shape) - 2)
    view = AtenViewOp.build_from(
        {"self": bias},
        {"size": shape},
        [TensorType(shape, bias.type.element_type, None, bias.type.device_attr.data)],
    )
    bare = AtenConvolutionOp.build_from_attrs(
        {"input": conv.input, "weight": conv.weight, "bias": None},
        dict(conv.properties),
        [out],
    )
    add = AtenAddTensorOp.build_from({"self": bare.result, "other": view.result}, {}, [out])
    Rewriter.insert_op([view, bare, add], InsertPoint.before(conv))
    bare.result.name_hint = conv.result.name_hint
    view.result.name_hint = bias.name_hint
    conv.result.replace_all_uses_with(add.result)
    add.result.name_hint = conv.result.name_hint
    Rewriter.erase_op(conv)
    return True


@dataclass(frozen=True)
class AtenPeelConvBiasPass(ModulePass):
    """Convolution biases as separate adds (see the module doc)."""

    name = "aten-peel-conv-bias"

    all_devices: bool = False
    """Rewrite convolutions on every device, not only CUDA ones."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.ops:
            if not isinstance(fn, func.FuncOp) or fn.is_declaration:
                continue
            for conv in [o for o in fn.body.block.ops if isinstance(o, AtenConvolutionOp)]:
                t = conv.result.type
                on_cuda = isinstance(t, TensorType) and t.device_attr.data.startswith("cuda")
                if on_cuda or self.all_devices:
                    _peel(conv)


__all__ = ["AtenPeelConvBiasPass"]
