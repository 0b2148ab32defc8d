"""Generate ``dialects/aten_ops.py`` from torch's own op schemas.

    python -m coil.tools.gen_aten            # rewrite dialects/aten_ops.py
    python -m coil.tools.gen_aten --check    # exit 1 if it is stale

Which overloads get an op class:

* every overload of an aten op packet that has a ``core``-tagged overload, or
  that AOTAutograd graphs with the core-ATen decomposition table hold
  (``EXTRA_PACKETS``: views, ``_to_copy``, norms, random ops, ``copy_`` ...),
  with their in-place (``foo_``) packets;
* every prims overload;
* every overload of the c10d functional collectives (``_c10d_functional``,
  ``_c10d_functional_autograd``), on the bases of ``dialects/c10d.py``
  (communicating, so never ``Pure``);

skipping aten/prims ``out=`` overloads that are not tagged core (but for the
GEMMs' in ``KEPT_OUT``: memory-plan has ATen write their products into planned
buffers), and schemas with argument kinds the dialect has no form for
(Dimname, Stream, str[] ...).
Anything else imports as the generic ``aten.operator``.
"""

from __future__ import annotations

import argparse
import difflib
import keyword
import sys
from pathlib import Path

import torch

from coil.dialects.aten_schema import Kind, UnsupportedSchema, op_schema
from coil.dialects.c10d import NAMESPACES as C10D_NAMESPACES

OUTPUT = Path(__file__).resolve().parent.parent / "dialects" / "aten_ops.py"

EXTRA_PACKETS = """
    view _unsafe_view reshape _to_copy to clone alias detach lift_fresh lift_fresh_copy
    copy t transpose permute expand expand_as unsqueeze squeeze slice select split
    split_with_sizes unbind chunk narrow as_strided unfold diagonal movedim flatten
    native_layer_norm native_layer_norm_backward native_batch_norm
    native_batch_norm_backward _native_batch_norm_legit _native_batch_norm_legit_no_training
    _native_batch_norm_legit_functional native_group_norm native_group_norm_backward
    _softmax _log_softmax _softmax_backward_data _log_softmax_backward_data softmax log_softmax
    rand randn rand_like randn_like randint randint_like randperm native_dropout
    native_dropout_backward bernoulli uniform normal exponential dropout
    scalar_tensor full full_like zeros zeros_like ones ones_like empty empty_like
    empty_strided new_zeros new_ones new_empty new_full new_empty_strided arange iota
    index index_put index_select gather scatter scatter_add embedding embedding_dense_backward
    mm bmm addmm matmul linear baddbmm mv dot convolution convolution_backward
    threshold_backward nll_loss_forward nll_loss_backward nll_loss2d_forward
    nll_loss2d_backward mse_loss cross_entropy_loss
    gelu gelu_backward silu silu_backward relu sigmoid sigmoid_backward tanh tanh_backward
    hardtanh hardtanh_backward leaky_relu leaky_relu_backward elu elu_backward
    mean var std var_mean std_mean sum prod amax amin max min argmax argmin
    where masked_fill logical_not logical_and logical_or bitwise_not rsqrt
    sym_size sym_stride sym_numel sym_storage_offset _local_scalar_dense item
    cumsum cumprod logcumsumexp cummax cummin sort topk cat stack constant_pad_nd flip roll repeat
    _unsafe_index _unsafe_index_put avg_pool2d max_pool2d_with_indices
    max_pool2d_with_indices_backward _adaptive_avg_pool2d upsample_nearest2d
    upsample_bilinear2d col2im im2col tril triu logsumexp clamp_min clamp_max
    avg_pool3d_backward max_pool3d_with_indices_backward _adaptive_avg_pool3d_backward
    adaptive_max_pool2d adaptive_max_pool2d_backward adaptive_max_pool3d
    adaptive_max_pool3d_backward replication_pad1d_backward replication_pad2d_backward
    replication_pad3d_backward
    """.split()

KEPT_OUT = {"aten::mm.out", "aten::bmm.out", "aten::addmm.out", "aten::baddbmm.out"}
"""``out=`` overloads with an op class though not tagged core: memory-plan's
``_externs_into_buffers`` calls them (Inductor's ``extern_kernels.mm(..., out=)``)."""


def _packets(namespace: str) -> list[str]:
    """Every op packet of a namespace registered with the dispatcher (dir() on
    torch.ops.aten only lists packets already touched, so it is not stable).
    The modules that register ops when coil runs are imported first, so the
    result is the same from the command line and inside a test run."""
    import torch._decomp
    import torch._dynamo
    import torch._functorch.aot_autograd
    import torch._prims
    import torch._refs
    import torch.export

    names = {
        n.split("::", 1)[1].split(".")[0]
        for n in torch._C._dispatch_get_all_op_names()
        if n.startswith(namespace + "::")
    }
    return sorted(names)


def _overloads(namespace, packet_names):
    for name in sorted(packet_names):
        try:
            packet = getattr(namespace, name)
        except (AttributeError, RuntimeError):
            continue
        for overload in sorted(packet.overloads()):
            yield getattr(packet, overload)


def selected_overloads() -> list[torch._ops.OpOverload]:
    aten = torch.ops.aten
    all_aten = set(_packets("aten"))
    packets = set(EXTRA_PACKETS) & all_aten
    for name in all_aten:
        try:
            packet = getattr(aten, name)
        except (AttributeError, RuntimeError):
            continue
        if any(torch.Tag.core in getattr(packet, o).tags for o in packet.overloads()):
            packets.add(name)
    packets |= {p + "_" for p in packets if p + "_" in all_aten}
    chosen = []
    c10d = [op for ns in C10D_NAMESPACES for op in _overloads(getattr(torch.ops, ns), _packets(ns))]
    for op in [*_overloads(aten, packets), *_overloads(torch.ops.prims, _packets("prims")), *c10d]:
        name = op._schema.overload_name
        is_out = (
            name == "out"
            or name.endswith("_out")
            or any(
                a.kwarg_only and a.alias_info is not None and a.alias_info.is_write
                for a in op._schema.arguments
            )
        )
        kept = f"{op._schema.name}.{name}" in KEPT_OUT
        if (
            is_out
            and not kept
            and torch.Tag.core not in op.tags
            and op.namespace not in C10D_NAMESPACES
        ):
            continue
        try:
            op_schema(op)
        except UnsupportedSchema:
            continue
        chosen.append(op)
    return chosen


def class_name(op: torch._ops.OpOverload) -> str:
    """torch-mlir's naming: aten.add.Tensor -> AtenAddTensorOp, aten._softmax.default
    -> Aten_SoftmaxOp, aten.add_.Tensor -> AtenAdd_TensorOp,
    _c10d_functional.wait_tensor.default -> _C10dFunctionalWaitTensorOp."""
    packet = op._schema.name.split("::")[1]
    overload = "" if op._overloadname == "default" else op._overloadname

    def camel(text: str) -> str:
        if not text:
            return ""
        return "".join(p[:1].upper() + p[1:] if p else "_" for p in text.split("_"))

    return camel(op.namespace) + camel(packet) + camel(overload) + "Op"


def _constraint(kind: Kind) -> str:
    return {
        Kind.INT: "ExprAttr",
        Kind.INT_LIST: "ShapeAttr",
        Kind.FLOAT: "FloatAttr",
        Kind.FLOAT_LIST: "ArrayAttr",
        Kind.BOOL: "IntegerAttr",
        Kind.BOOL_LIST: "ArrayAttr",
        Kind.STR: "StringAttr",
        Kind.SCALAR: "ExprAttr | FloatAttr | IntegerAttr",
        Kind.DTYPE: "Attribute",
        Kind.LAYOUT: "StringAttr",
        Kind.DEVICE: "StringAttr",
        Kind.MEMORY_FORMAT: "StringAttr",
        Kind.GENERATOR: "NoneAttr",
    }[kind]


def render_op(op: torch._ops.OpOverload) -> tuple[str, str]:
    schema = op_schema(op)
    cls = class_name(op)
    full_name = f"{op.namespace}.{op._schema.name.split('::')[1]}.{op._overloadname}"
    c10d = op.namespace in C10D_NAMESPACES
    base = "AtenOp"
    if c10d:
        base = "CollectiveOp" if any(a.name == "group_name" for a in schema.args) else "C10dOp"
    lines = [
        "@irdl_op_definition",
        f"class {cls}({base}):",
        f'    """{str(op._schema)}"""',
        "",
        f'    name = "{full_name}"',
        f'    OVERLOAD: ClassVar[str] = "{full_name}"',
        f"    SCHEMA: ClassVar[str] = {str(op._schema)!r}",
    ]
    if schema.inplace_view:
        lines.append("    INPLACE_VIEW: ClassVar[bool] = True")
    n_var = sum(a.kind is not Kind.TENSOR or a.optional for a in schema.operands)
    if n_var > 1:
        lines.append("    irdl_options = (AttrSizedOperandSegments(as_property=True),)")
    for arg in schema.args:
        extra = "" if arg.accessor == arg.name else f', prop_name="{arg.name}"'
        if arg.kind is Kind.TENSOR and not arg.optional:
            lines.append(f"    {arg.accessor} = operand_def(AnyAttr())")
        elif arg.kind is Kind.TENSOR:
            lines.append(f"    {arg.accessor} = opt_operand_def(AnyAttr())")
        elif arg.kind.is_tensor:
            lines.append(f"    {arg.accessor} = var_operand_def(AnyAttr())")
            if arg.kind is Kind.OPT_TENSOR_LIST:
                lines.append(f"    {arg.accessor}_mask = opt_prop_def(DenseArrayBase)")
        else:
            c = _constraint(arg.kind)
            if arg.optional:
                c = c if "NoneAttr" in c else c + " | NoneAttr"
            lines.append(f"    {arg.accessor} = opt_prop_def({c}{extra})")
    for ret in schema.returns:
        fn = "var_result_def" if ret.kind == "tensor_list" else "result_def"
        lines.append(f"    {ret.accessor} = {fn}(AnyAttr())")
    pure = not c10d and not schema.mutates and torch.Tag.nondeterministic_seeded not in op.tags
    if pure:
        lines.append("    traits = traits_def(Pure())")
    assert not keyword.iskeyword(cls)
    return cls, "\n".join(lines)


HEADER = '''"""The aten, prims and c10d functional dialects' ops, generated from torch's op schemas.

GENERATED by `python -m coil.tools.gen_aten` from torch {version}; do not edit.
Each class models one ATen/prims/c10d overload; its docstring is the schema. The
syntax, verifier and argument access live on the base class
(coil.dialects.aten_base.AtenOp).
"""

# ruff: noqa: E501
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    NoneAttr,
    StringAttr,
)
from xdsl.ir import Attribute
from xdsl.irdl import (
    AnyAttr,
    AttrSizedOperandSegments,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import Pure

from coil.dialects.aten_base import AtenOp
from coil.dialects.c10d import C10dOp, CollectiveOp
from coil.dialects.symbolic import ExprAttr, ShapeAttr

'''


def generate() -> str:
    ops = selected_overloads()
    bodies = []
    names: dict[str, list[str]] = {ns: [] for ns in ("aten", "prims", *C10D_NAMESPACES)}
    seen: set[str] = set()
    for op in ops:
        cls, body = render_op(op)
        assert cls not in seen, cls
        seen.add(cls)
        bodies.append(body)
        names[op.namespace].append(cls)
    version = torch.__version__.split("+")[0]
    out = HEADER.format(version=version) + "\n\n" + "\n\n\n".join(bodies) + "\n\n"
    for ns, classes in names.items():
        listed = "".join(f"    {n},\n" for n in classes)
        out += f"\n{ns.strip('_').upper()}_OPS = [\n{listed}]\n"
    out += f'\nTORCH_VERSION = "{version}"\n'
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the file is stale")
    args = parser.parse_args(argv)
    text = generate()
    current = OUTPUT.read_text() if OUTPUT.exists() else ""
    if args.check:
        if text != current:
            diff = difflib.unified_diff(
                current.splitlines(),
                text.splitlines(),
                "aten_ops.py (checked in)",
                "aten_ops.py (generated)",
                lineterm="",
                n=1,
            )
            print("\n".join(list(diff)[:40]))
            print("dialects/aten_ops.py is stale: run `python -m coil.tools.gen_aten`")
            return 1
        print("dialects/aten_ops.py is current")
        return 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT} ({text.count('@irdl_op_definition')} ops)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
