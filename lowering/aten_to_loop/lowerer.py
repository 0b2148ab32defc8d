"""The registry of aten -> loop lowerings and the state they build with.

``LOWERINGS`` maps an overload name ("aten.add.Tensor") to its lowering, a
function of a :class:`Lowerer` and the aten op that builds loop ops just before
it; each module of this package registers its functions with :func:`register`
when imported (the package imports them all). ``convert-aten-to-loop``
(``lowering/convert_aten_to_loop.py``) imports the package and walks each
function, asking this table. Kept apart from the pass so that the lowerings
import their registry, and the pass the lowerings, in one direction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import sympy
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from coil.dialects import buffer as B
from coil.dialects import loop as L
from coil.dialects.aten import AtenOp, ConstantOp, TensorConstantOp, TensorType
from coil.dialects.body_builder import BodyBuilder, CannotLower, check_supported
from coil.dialects.c10d import NAMESPACES as C10D_NAMESPACES
from coil.dialects.symbolic import ExprAttr, SymInt, to_expr
from coil.strategy.target import TARGETS, module_target

log = logging.getLogger("coil")

Lowering = Callable[["Lowerer", AtenOp], Sequence[SSAValue]]
LOWERINGS: dict[str, Lowering] = {}
"""Overload name ("aten.add.Tensor") -> lowering. Filled by ``lowering/aten_to_loop``."""

EXTERN_BY_DESIGN = frozenset(
    {
        "aten.mm.default",
        "aten.bmm.default",
        "aten.addmm.default",
        "aten.baddbmm.default",
        # memory-plan's out= forms of the four above (products into planned buffers)
        "aten.mm.out",
        "aten.bmm.out",
        "aten.addmm.out",
        "aten.baddbmm.out",
        "aten.convolution.default",
        "aten.convolution_backward.default",
        "aten._scaled_dot_product_flash_attention.default",
        "aten._scaled_dot_product_efficient_attention.default",
        # torch's other fused attention kernels and the backwards (where
        # aten-fuse-attention or SDPA in a training graph gets them):
        # generic ops, named as buffer.extern names them
        "aten._scaled_dot_product_flash_attention",
        "aten._scaled_dot_product_efficient_attention",
        "aten._scaled_dot_product_flash_attention_for_cpu",
        "aten._scaled_dot_product_flash_attention_for_cpu_backward",
        "aten._scaled_dot_product_cudnn_attention",
        "aten._scaled_dot_product_cudnn_attention_backward",
        "aten._scaled_dot_product_flash_attention_backward",
        "aten._scaled_dot_product_efficient_attention_backward",
        # coil's own operators (dialects/torch_library.py): a packed CPU GEMM
        "coil.packed_linear",
    }
)
"""Ops ATen (cuBLAS, cuDNN) does better: called by design, logged at debug level."""


def extern_by_design(name: str) -> bool:
    """Whether op ``name`` is an ATen call by design (no fallback warning): the ops
    above and every c10d collective and wait (``_c10d_functional...``, as a
    generated op or an ``aten.operator`` "ns::op"): torch's c10d does the
    communication, coil schedules the calls (``dialects/c10d.py``)."""
    if name.replace("::", ".") in EXTERN_BY_DESIGN:  # a generic op: "aten::x" is "aten.x"
        return True
    return name in EXTERN_BY_DESIGN or name.split("::")[0].split(".")[0] in C10D_NAMESPACES


def register(*names: str) -> Callable[[Lowering], Lowering]:
    def wrap(fn: Lowering) -> Lowering:
        for name in names:
            if name in LOWERINGS:
                raise ValueError(
                    f"two lowerings of {name}: {LOWERINGS[name].__name__}, {fn.__name__}"
                )
            LOWERINGS[name] = fn
        return fn

    return wrap


def loop_type(t: Attribute) -> L.LoopTensorType:
    return L.LoopTensorType(t.shape, t.element_type)


class Lowerer:
    """Builds the loop ops replacing one aten op, just before it."""

    def __init__(
        self,
        fn: func.FuncOp,
        matvec: str = "auto",
        deterministic: bool = False,
        gemm: str = "auto",
        tf32: bool = False,
    ):
        self.fn = fn
        # Which matrix products become tt.dot templates (aten_to_loop/gemm.py),
        # for the device the module is planned for (f32 ones on tensor cores
        # where cuBLAS may use TF32).
        self.gemm = gemm
        self.tf32 = tf32
        module = fn.parent_op()
        self.target = (
            module_target(module) if isinstance(module, ModuleOp) else TARGETS["cpu-interpreter"]
        )
        # Ops whose result depends on the order of atomic updates (scatters with
        # duplicate indices) go to ATen's deterministic kernels instead.
        self.deterministic = deterministic
        # Which matrix-vector products become reductions (aten_to_loop/matvec.py).
        self.matvec = matvec
        self.anchor: Operation | None = None
        self._seed: SSAValue | None = None
        self._random_offset: sympy.Expr = sympy.Integer(0)
        # aten-level type of each converted value (extern calls need the layouts).
        self.aten_types: dict[SSAValue, Attribute] = {}

    # ---- insertion --------------------------------------------------------------

    def insert(self, op: Operation) -> Operation:
        Rewriter.insert_op(op, InsertPoint.before(self.anchor))
        return op

    def insert_named(self, op: Operation, name: str | None) -> list[SSAValue]:
        """``op`` inserted, its results named ``name`` (the FX node's)."""
        self.insert(op)
        for r in op.results:
            r.name_hint = name
        return list(op.results)

    # ---- nests -----------------------------------------------------------------

    def pointwise(
        self,
        shape: Sequence[SymInt],
        dtype: Attribute,
        body: Callable[[BodyBuilder, list[sympy.Symbol]], SSAValue],
        name: str | None = None,
    ) -> SSAValue:
        """``loop.pointwise`` over ``shape``; ``body(b, idx)`` returns the element,
        which is cast to ``dtype``."""
        check_supported(dtype)
        block = L.new_body(len(shape))
        b = BodyBuilder(block, len(shape))
        value = body(b, b.idx)
        b.yield_(b.cast(value, dtype))
        op = L.PointwiseOp.build(
            operands=[[]],
            result_types=[[L.LoopTensorType(shape, dtype)]],
            properties={"ranges": L.ShapeAttr(shape)},
            regions=[Region(block)],
        )
        return self.insert_named(op, name)[0]

    def reduction(
        self,
        kind: str,
        ranges: Sequence[SymInt],
        reduction_ranges: Sequence[SymInt],
        result_dtype: Attribute,
        body: Callable[[BodyBuilder, list[sympy.Symbol]], SSAValue],
        value_dtype: Attribute | None = None,
        name: str | None = None,
        template: str | None = None,
    ) -> list[SSAValue]:
        """``loop.reduction`` of ``kind``; ``body(b, idx)`` (idx = i.. then r..)
        returns the value to reduce, cast to ``value_dtype`` (default: the result
        dtype; argmax/argmin/any/all set their own result types); ``template``
        the reduction's template (``gemm``)."""
        check_supported(result_dtype)
        n, m = len(ranges), len(reduction_ranges)
        block = L.new_body(n, m)
        b = BodyBuilder(block, n, m)
        value = body(b, b.idx)
        if kind in ("any", "all"):
            value = b.cast(value, builtin.i1)
        else:
            value = b.cast(value, value_dtype or result_dtype)
        b.yield_(value)
        result = L.LoopTensorType(ranges, result_dtype)
        props: dict[str, Attribute] = {
            "kind": builtin.StringAttr(kind),
            "ranges": L.ShapeAttr(ranges),
            "reduction_ranges": L.ShapeAttr(reduction_ranges),
        }
        if template is not None:
            props["template"] = builtin.StringAttr(template)
        op = L.ReductionOp.build(
            operands=[[]],
            result_types=[[result] * L.reduction_result_count(kind)],
            properties=props,
            regions=[Region(block)],
        )
        return self.insert_named(op, name)

    def scan(
        self,
        kind: str,
        shape: Sequence[SymInt],
        dim: int,
        value_dtype: Attribute,
        body: Callable[[BodyBuilder, list[sympy.Symbol]], SSAValue],
        result_dtype: Attribute | None = None,
        name: str | None = None,
    ) -> list[SSAValue]:
        """``loop.scan`` of ``kind`` along ``dim`` of ``shape``; ``body(b, idx)``
        returns the element, cast to ``value_dtype`` (what the scan accumulates
        in); the values result holds ``result_dtype`` (default: the same; a
        narrower float rounds each output). argmax/argmin also give i64 positions."""
        check_supported(value_dtype)
        block = L.new_body(len(shape))
        b = BodyBuilder(block, len(shape))
        b.yield_(b.cast(body(b, b.idx), value_dtype))
        types = [L.LoopTensorType(shape, result_dtype or value_dtype)]
        if L.scan_result_count(kind) == 2:
            types.append(L.LoopTensorType(shape, builtin.i64))
        op = L.ScanOp.build(
            operands=[[]],
            result_types=[types],
            properties={
                "kind": builtin.StringAttr(kind),
                "dim": builtin.IntegerAttr(dim, 64),
                "ranges": L.ShapeAttr(shape),
            },
            regions=[Region(block)],
        )
        return self.insert_named(op, name)

    def scatter(
        self,
        mode: str,
        init: SSAValue,
        ranges: Sequence[SymInt],
        index: Sequence[SymInt],
        body: Callable[[BodyBuilder, list[sympy.Symbol]], tuple[SSAValue, Sequence[SSAValue]]],
        name: str | None = None,
    ) -> SSAValue:
        """``loop.scatter`` of ``mode`` into a copy of ``init``: ``body(b, idx)``
        returns (value, indirect indices); the value (cast to ``init``'s dtype)
        goes to the element ``index`` names (expressions over idx and ``t0 ...``)."""
        dtype = init.type.element_type
        check_supported(dtype)
        block = L.new_body(len(ranges))
        b = BodyBuilder(block, len(ranges))
        value, indirect = body(b, b.idx)
        b.yield_(b.cast(value, dtype), *indirect)
        op = L.ScatterOp.build(
            operands=[[init], []],  # (init, outs)
            result_types=[[L.LoopTensorType(init.type.shape, dtype)]],
            properties={
                "mode": builtin.StringAttr(mode),
                "ranges": L.ShapeAttr(ranges),
                "index": L.ShapeAttr(index),
            },
            regions=[Region(block)],
        )
        return self.insert_named(op, name)[0]

    def view(self, source: SSAValue, index: Sequence[SymInt], shape: Sequence[SymInt]) -> SSAValue:
        """``loop.view``: element ``[i0, ...]`` of the result is ``source[index]``."""
        t = source.type
        op = self.insert(L.ViewOp(source, index, L.LoopTensorType(shape, t.element_type)))
        return op.result

    # ---- random ----------------------------------------------------------------

    def seed(self) -> SSAValue:
        """The function's random seed (one ``loop.seed``, placed first)."""
        if self._seed is None:
            op = L.SeedOp()
            Rewriter.insert_op(op, InsertPoint.at_start(self.fn.body.block))
            op.result.name_hint = "seed"
            self._seed = op.result
        return self._seed

    def random_offsets(self, numel: SymInt) -> sympy.Expr:
        """A fresh range of ``numel`` counter values: each random op draws its own
        stream from the function's seed. Returns the range's start."""
        start = self._random_offset
        self._random_offset = sympy.expand(start + to_expr(numel))
        return start

    # ---- scalars -------------------------------------------------------------

    def scalar(
        self, b: BodyBuilder, value: SSAValue | bool | int | float, type_: Attribute
    ) -> SSAValue:
        """A scalar argument inside a body: Python numbers and ``aten.constant``
        become ``arith.constant``; a size symbol becomes ``loop.index``."""
        if isinstance(value, SSAValue):
            owner = value.owner
            if isinstance(owner, ConstantOp):
                py = owner.python_value
                if isinstance(py, sympy.Expr) and not py.is_Integer:
                    return b.cast(b.index(py), type_)
                value = int(py) if isinstance(py, sympy.Expr) else py
            else:
                sym = self.symbol_of(value)
                if sym is None:
                    raise CannotLower("a scalar computed at run time")
                return b.cast(b.index(sym), type_)
        return b.const(value, type_)

    def symbol_of(self, value: SSAValue) -> sympy.Expr | None:
        """The size symbol an ``index`` function argument carries, if any."""
        if not isinstance(value, BlockArgument) or value.owner is not self.fn.body.block:
            return None
        attrs = self.fn.arg_attrs
        if attrs is None:
            return None
        sym = attrs.data[value.index].data.get("coil.symbol")
        return sym.data if isinstance(sym, ExprAttr) else None

    # ---- extern ----------------------------------------------------------------

    def extern(self, op: Operation) -> list[SSAValue]:
        """Call ``op`` through ATen: a ``buffer.extern`` whose region is the op."""
        args: list[SSAValue] = []
        block = Block()
        mapping: dict[SSAValue, SSAValue] = {}
        for operand in op.operands:
            if operand in mapping:
                continue
            owner = operand.owner
            if isinstance(owner, ConstantOp | TensorConstantOp):
                clone = owner.clone()
                block.add_op(clone)
                mapping[operand] = clone.results[0]
                continue
            arg_type = self.aten_types.get(operand, operand.type)
            mapping[operand] = block.insert_arg(arg_type, len(block.args))
            mapping[operand].name_hint = operand.name_hint
            args.append(operand)
        inner = op.clone(value_mapper=mapping)
        block.add_op(inner)
        block.add_op(B.YieldOp(*inner.results))
        result_types = [
            loop_type(r.type) if isinstance(r.type, TensorType) else r.type for r in op.results
        ]
        ext = self.insert(B.ExternOp(args, result_types, Region(block)))
        for new, old in zip(ext.res, op.results):
            new.name_hint = old.name_hint
            self.aten_types[new] = old.type
        return list(ext.res)
