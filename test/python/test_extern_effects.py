"""The extern-effect analysis reads alias sets and writes from the generated
op classes' schema text (torchgen's model, no torch import); torch's own
``FunctionSchema`` is the fallback. Both readings must agree."""

import torch

from coil.dialects.aten import _BY_NAME
from coil.transforms import extern_effects as E


def test_the_generated_schemas_read_as_torchs():
    compared = 0
    for name, cls in _BY_NAME.items():
        ns, packet, overload = name.split(".")
        try:
            theirs = getattr(getattr(getattr(torch.ops, ns), packet), overload)._schema
            ours = E._from_torchgen(cls.SCHEMA)
        except (AttributeError, RuntimeError, AssertionError, KeyError):
            continue
        assert ours == E._from_torch(theirs), name
        compared += 1
    assert compared > 500


def test_writes_and_views_as_the_schema_says():
    add_ = E._schema("aten.add_.Tensor")
    assert add_.arguments[0].alias_info.is_write
    assert E._schema("aten.view.default").returns[0].alias_info is not None
    assert E._schema("aten.mm.default").returns[0].alias_info is None
    # An ``aten.operator`` names its default overload without the suffix.
    assert E._schema("aten.mm") == E._schema("aten.mm.default")
    # A list return keeps its aliases on the elements, as torch says.
    assert E._schema("aten.split.Tensor").returns[0].alias_info.before_set == frozenset()
    assert E._schema("no.such.op") is None


def _conv_extern(x, w, out, stride, groups):
    from xdsl.dialects import func
    from xdsl.parser import Parser

    from coil.ir import coil_context

    pad = (w[2] - 1) // 2
    t = lambda s: f"[{', '.join(map(str, s))}], bf16"  # noqa: E731
    bx, bw, by = (f"!buffer.buffer<{t(s)}>" for s in (x, w, out))
    tx, tw, ty = (f"!aten.tensor<{t(s)}>" for s in (x, w, out))
    props = (
        f"stride = [{stride}, {stride}], padding = [{pad}, {pad}], dilation = [1, 1], "
        f"transposed = false, output_padding = [0, 0], groups = {groups}"
    )
    text = f"""
func.func @f(%x: {bx}, %w: {bw}) -> {by} {{
  %y = buffer.extern "aten.convolution.default" (%x, %w) : ({bx}, {bw}) -> ({by}) {{
  ^bb0(%a: {tx}, %b: {tw}):
    %r = aten.convolution.default(%a, %b, none, {props}) : {ty}
    buffer.yield %r : {ty}
  }}
  func.return %y : {by}
}}"""
    module = Parser(coil_context(), text).parse_module()
    fn = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    return fn.body.block.first_op


def test_a_convolutions_workspace_estimate():
    # Input plus output bytes for a grouped convolution whose channels per
    # group are not a power of two; none for the others (the measurements are
    # in the docstring).
    x = [2, 48, 16, 16]
    grouped = _conv_extern(x, [48, 24, 3, 3], [2, 48, 8, 8], 2, 2)
    assert E.extern_workspace_bytes(grouped) == 2 * 48 * 16 * 16 * 2 + 2 * 48 * 8 * 8 * 2
    eight = _conv_extern(x, [48, 8, 3, 3], [2, 48, 8, 8], 2, 6)
    assert E.extern_workspace_bytes(eight) == 0
    dense = _conv_extern(x, [48, 48, 3, 3], [2, 48, 16, 16], 1, 1)
    assert E.extern_workspace_bytes(dense) == 0
    pointwise = _conv_extern(x, [96, 48, 1, 1], [2, 96, 16, 16], 1, 1)
    assert E.extern_workspace_bytes(pointwise) == 0
    depthwise = _conv_extern(x, [48, 1, 3, 3], [2, 48, 16, 16], 1, 48)
    assert E.extern_workspace_bytes(depthwise) == 0
