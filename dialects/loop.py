"""The loop dialect: computations as iteration domains with scalar bodies.

This is coil's analogue of Inductor's ``ir.Pointwise`` / ``ir.Reduction`` with
their ``inner_fn`` bodies, as ops whose region *is* the body:

    %y = loop.pointwise [4, s0] : !loop.tensor<[4, s0], f32> {
    ^bb0(%i0: index, %i1: index):
      %a = loop.load %x[i0, i1] : !buffer.buffer<[4, s0], f32>
      %b = math.exp %a : f32
      loop.yield %b : f32
    }

* The body's block arguments are the loop indices, one per range: ``i0, i1 ...``
  for ``ranges``, then ``r0, r1 ...`` for ``reduction_ranges``. Index
  expressions (``#coil.shape`` lists, sympy) name them by those symbols:
  symbol ``i<k>`` *is* block argument k, whatever the SSA name hint says.
* A body reads tensors with ``loop.load %t[e0, e1, ...]`` -- one expression per
  dimension of ``%t`` (logical indices; a buffer's strides turn them into an
  address later). Tensors are captured from the enclosing function, not passed
  as operands, so fusing a producer into a consumer is cloning its body.
* Indirect (data-dependent) indices: ``loop.load %w[t0, i1] indirect(%ix : i64)``
  -- ``t<k>`` is the k-th indirect operand, a value computed in the body; the
  load asserts it is in bounds.
* Compute is xDSL's ``arith`` and ``math``; ``loop.index`` materializes an index
  expression as an integer, ``loop.rand``/``loop.randn`` draw counter-based
  random numbers from a ``loop.seed``.

``loop.reduction`` reduces over ``reduction_ranges`` (sum ... argmax, any/all,
``welford``); ``loop.scan`` is an inclusive scan along one of its ranges
(cumsum ... cummax); ``loop.scatter`` stores values through data-dependent
indices into a copy of a tensor (overwriting or combining atomically);
``loop.fused`` groups nests that become one kernel (a reduction
with its siblings and epilogues); ``loop.view`` is a view with no copy (an
index map on its source); ``loop.copy`` overwrites a graph input.

Values are ``!loop.tensor<[sizes], dtype>``: shape and element type only, so the
level is value-semantic -- nothing has a buffer yet. After ``bufferize`` the same
ops run in destination-passing style (``outs(%buf : !buffer.buffer<...>)``, no
results), as linalg ops do on memrefs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

import sympy
from xdsl.dialects import builtin
from xdsl.dialects.builtin import I64, IndexType, IntegerAttr, IntegerType, StringAttr
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import (
    EffectInstance,
    IsTerminator,
    MemoryEffectKind,
    MemoryReadEffect,
    Pure,
    RecursiveMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException

from coil.dialects import dtypes
from coil.dialects.layout import format_layout, parse_layout, verify_layout
from coil.dialects.symbolic import (
    ShapeAttr,
    SymInt,
    format_expr,
    format_expr_list,
    index_symbols,
    indirect_symbol,
    is_index_symbol,
    parse_expr,
    parse_expr_list,
)

if TYPE_CHECKING:
    import torch

# --------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------


@irdl_attr_definition
class LoopTensorType(ParametrizedAttribute, TypeAttribute):
    """A value-semantic tensor of the loop level: ``!loop.tensor<[s0, 128], f32>``."""

    name = "loop.tensor"

    shape_attr: ShapeAttr
    element_type: Attribute

    def __init__(self, shape: Sequence[SymInt], element_type: Attribute | torch.dtype):
        if dtypes.is_torch_dtype(element_type):
            element_type = dtypes.to_mlir(element_type)
        super().__init__(ShapeAttr(shape), element_type)

    @property
    def shape(self) -> tuple[SymInt, ...]:
        return self.shape_attr.symints

    @property
    def dtype(self) -> torch.dtype:
        """The torch dtype (imports torch; passes use ``element_type``)."""
        return dtypes.to_torch(self.element_type)

    @property
    def rank(self) -> int:
        return len(self.shape_attr.data)

    def verify(self) -> None:
        verify_layout("loop tensor", self.shape_attr.data, self.element_type)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        layout = parse_layout(parser)
        return (ShapeAttr(layout.shape), layout.element_type)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(format_layout(self.shape_attr.data, self.element_type))


def is_tensor_like(t: Attribute) -> bool:
    """Types a ``loop.load`` can read: loop tensors, buffers, aten tensors (all
    have ``.shape`` and ``.element_type``)."""
    return (
        isinstance(t, ParametrizedAttribute)
        and hasattr(t, "shape_attr")
        and hasattr(t, "element_type")
    )


# --------------------------------------------------------------------------
# Index symbols
# --------------------------------------------------------------------------


def _check_index_map(op: IRDLOperation, verb: str, noun: str) -> Attribute:
    """``op.source`` is tensor-like and ``op.index`` has one expression per
    dimension; returns the source type."""
    t = op.source.type
    if not is_tensor_like(t):
        raise VerifyException(f"{op.name} {verb} a tensor or buffer, not {t}")
    if len(op.index.data) != len(t.shape_attr.data):
        raise VerifyException(
            f"{op.name}: {len(op.index.data)} indices for a rank-{len(t.shape_attr.data)} {noun}"
        )
    return t


def _check_exprs(
    op: IRDLOperation, exprs: Sequence[sympy.Expr], allowed: set[sympy.Symbol]
) -> None:
    for e in exprs:
        for s in e.free_symbols:
            if is_index_symbol(s) and s not in allowed:
                raise VerifyException(f"{op.name}: index symbol {s} is not bound here")


def enclosing_loop(op: IRDLOperation) -> LoopOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, LoopOp):
        parent = parent.parent_op()
    return parent


def _bound_symbols(op: IRDLOperation, n_indirect: int = 0) -> set[sympy.Symbol]:
    loop = enclosing_loop(op)
    bound = set(loop.index_symbols()) if loop is not None else set()
    return bound | {indirect_symbol(k) for k in range(n_indirect)}


# --------------------------------------------------------------------------
# Body ops
# --------------------------------------------------------------------------


@irdl_op_definition
class LoadOp(IRDLOperation):
    """Read one element of a tensor at a (possibly indirect, possibly masked) index."""

    name = "loop.load"

    source = operand_def()
    indirect = var_operand_def(IntegerType | IndexType)
    mask = opt_operand_def(builtin.i1)
    index = prop_def(ShapeAttr)
    result = result_def()

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    # Only reads: nothing inside a nest body writes (a nest writes its outs when
    # its body yields), so `cse` merges two loads of one element in one body
    # (the copies loop-inline makes of a producer used twice), and `dce` drops
    # an unused one.
    traits = traits_def(MemoryReadEffect())

    def __init__(
        self,
        source: SSAValue,
        index: Sequence[SymInt],
        indirect: Sequence[SSAValue] = (),
        mask: SSAValue | None = None,
    ):
        super().__init__(
            operands=[source, list(indirect), [mask] if mask is not None else []],
            properties={"index": ShapeAttr(index)},
            result_types=[source.type.element_type],
        )

    def verify_(self) -> None:
        t = _check_index_map(self, "reads", "tensor")
        if self.result.type != t.element_type:
            raise VerifyException(
                f"loop.load: result must be the element type {t.element_type}, "
                f"got {self.result.type}"
            )
        if enclosing_loop(self) is None:
            raise VerifyException("loop.load reads elements inside a loop nest body only")
        _check_exprs(self, self.index.data, _bound_symbols(self, len(self.indirect)))

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        printer.print_string(format_expr_list(self.index.data))
        if self.indirect:
            printer.print_string(" indirect(")
            printer.print_list(self.indirect, printer.print_operand)
            printer.print_string(" : ")
            printer.print_list([v.type for v in self.indirect], printer.print_attribute)
            printer.print_string(")")
        if self.mask is not None:
            printer.print_string(" mask(")
            printer.print_operand(self.mask)
            printer.print_string(")")
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)

    @classmethod
    def parse(cls, parser: Parser) -> LoadOp:
        source = parser.parse_unresolved_operand()
        index = parse_expr_list(parser)
        indirect: list[UnresolvedOperand] = []
        indirect_types: list[Attribute] = []
        mask = None
        if parser.parse_optional_keyword("indirect"):
            parser.parse_punctuation("(")
            start = parser.pos
            indirect = parser.parse_comma_separated_list(
                parser.Delimiter.NONE, parser.parse_unresolved_operand
            )
            parser.parse_punctuation(":")
            indirect_types = parser.parse_comma_separated_list(
                parser.Delimiter.NONE, parser.parse_type
            )
            end = parser.pos
            parser.parse_punctuation(")")
            if len(indirect) != len(indirect_types):
                parser.raise_error(
                    f"indirect(...) needs one type per operand: {len(indirect)} operand(s), "
                    f"{len(indirect_types)} type(s)",
                    start,
                    end,
                )
            for t in indirect_types:
                if not isinstance(t, IntegerType | IndexType):
                    parser.raise_error(
                        f"loop.load: indirect indices are integers or index, not {t}", start, end
                    )
        if parser.parse_optional_keyword("mask"):
            parser.parse_punctuation("(")
            mask = parser.resolve_operand(parser.parse_unresolved_operand(), builtin.i1)
            parser.parse_punctuation(")")
        parser.parse_punctuation(":")
        type_pos = parser.pos
        source_type = parser.parse_type()
        if not is_tensor_like(source_type):
            parser.raise_error(
                f"loop.load reads a tensor or buffer, not {source_type}", type_pos, parser.pos
            )
        return cls(
            parser.resolve_operand(source, source_type),
            index,
            parser.resolve_operands(indirect, indirect_types, parser.pos),
            mask,
        )


@irdl_op_definition
class IndexOp(IRDLOperation):
    """An index expression's value as an integer (for iota, masks, bounds)."""

    name = "loop.index"

    expr = prop_def(ShapeAttr)  # one expression, kept as a 1-list to share the syntax
    result = result_def()  # an integer or index (checked in verify_, with a message)

    traits = traits_def(Pure())

    def __init__(self, expr: SymInt, result_type: Attribute = builtin.i64):
        super().__init__(properties={"expr": ShapeAttr([expr])}, result_types=[result_type])

    @property
    def value(self) -> sympy.Expr:
        return self.expr.data[0]

    def verify_(self) -> None:
        if len(self.expr.data) != 1:
            raise VerifyException("loop.index holds exactly one expression")
        if not isinstance(self.result.type, IntegerType | IndexType):
            raise VerifyException(
                f"loop.index: result must be an integer or index, not {self.result.type}"
            )
        _check_exprs(self, self.expr.data, _bound_symbols(self))

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {format_expr(self.value)} : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> IndexOp:
        expr = parse_expr(parser)
        parser.parse_punctuation(":")
        return cls(expr, parser.parse_type())


@irdl_op_definition
class SeedOp(IRDLOperation):
    """A fresh random seed, drawn from torch's generator when the function runs
    (one host-side draw; the bodies then generate counter-based numbers)."""

    name = "loop.seed"
    result = result_def()  # i64 (checked in verify_: the stock message has no location)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self):
        super().__init__(result_types=[builtin.i64])

    def verify_(self) -> None:
        if self.result.type != builtin.i64:
            raise VerifyException(f"loop.seed: result must be i64, not {self.result.type}")


class _RandomOp(IRDLOperation):
    seed = operand_def(builtin.i64)
    offset = prop_def(ShapeAttr)
    result = result_def()  # a float type (checked in verify_, with a message)

    traits = traits_def(Pure())

    def __init__(self, seed: SSAValue, offset: SymInt, result_type: Attribute = builtin.f32):
        super().__init__(
            operands=[seed], properties={"offset": ShapeAttr([offset])}, result_types=[result_type]
        )

    def verify_(self) -> None:
        if len(self.offset.data) != 1:
            raise VerifyException(f"{self.name}: the offset is exactly one expression")
        if not isinstance(self.result.type, builtin.AnyFloat):
            raise VerifyException(
                f"{self.name}: result must be a float type, not {self.result.type}"
            )
        _check_exprs(self, self.offset.data, _bound_symbols(self))

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.seed)
        printer.print_string(f"[{format_expr(self.offset.data[0])}] : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser):
        seed = parser.resolve_operand(parser.parse_unresolved_operand(), builtin.i64)
        parser.parse_punctuation("[")
        offset = parse_expr(parser)
        parser.parse_punctuation("]")
        parser.parse_punctuation(":")
        return cls(seed, offset, parser.parse_type())


@irdl_op_definition
class RandOp(_RandomOp):
    """Uniform [0, 1) number for (seed, offset): counter-based, like Triton's tl.rand."""

    name = "loop.rand"


@irdl_op_definition
class RandnOp(_RandomOp):
    """Standard normal number for (seed, offset), like Triton's tl.randn."""

    name = "loop.randn"


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminates a loop body (the element values) or a ``loop.fused`` group (its
    tensors)."""

    name = "loop.yield"
    values = var_operand_def()
    traits = traits_def(IsTerminator(), Pure())
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])


# --------------------------------------------------------------------------
# Loop nests
# --------------------------------------------------------------------------

REDUCTION_KINDS = ("sum", "prod", "max", "min", "argmax", "argmin", "any", "all", "welford")
REDUCTION_TEMPLATES = ("gemm",)
"""How ``convert-loop-to-tt`` may emit a reduction other than by its tiles."""
"""``welford`` yields (mean, m2, count) -- var = m2 / (count - correction)."""


def reduction_result_count(kind: str) -> int:
    return 3 if kind == "welford" else 1


class NestEffects(RecursiveMemoryEffect):
    """A nest's memory effects: its body's (loads read), and at the buffer level
    a write of each of its ``outs``. A tensor-level nest whose results nothing
    uses is therefore dead to ``dce`` (a value whose only reader was an
    ``aten.full_like``, which reads no element, was left as a fusion group
    yielding nothing, and ``convert-loop-to-tt`` refused it); a nest that
    writes buffers, or whose body holds an op of unknown effects, stays."""

    @classmethod
    def get_effects(cls, op: Operation) -> set[EffectInstance] | None:
        effects = super().get_effects(op)
        if effects is None:
            return None
        outs = op.outs if isinstance(op, LoopOp) else ()
        return {*effects, *(EffectInstance(MemoryEffectKind.WRITE, o) for o in outs)}


class LoopOp(IRDLOperation):
    """Base of the loop nests: ``loop.pointwise``, ``loop.reduction``, ``loop.scan``,
    ``loop.scatter``, ``loop.fused``.

    Tensor level: results, no ``outs``. Buffer level (after bufferize): ``outs``
    buffers written in place, no results.
    """

    ranges = prop_def(ShapeAttr)
    outs = var_operand_def()
    res = var_result_def()
    body = region_def("single_block")
    traits = traits_def(NestEffects())

    BODY_HAS_INDICES: ClassVar[bool] = True
    """The body's block arguments are the loop indices (a group's body has none)."""

    def index_symbols(self) -> list[sympy.Symbol]:
        return index_symbols(len(self.ranges.data))

    @property
    def targets(self) -> Sequence[SSAValue]:
        """What the nest produces: its results, or its outs at the buffer level."""
        return self.res if self.res else self.outs

    @property
    def is_bufferized(self) -> bool:
        return bool(self.outs)

    def result_count(self) -> int:
        return 1

    def verify(self, verify_nested_ops: bool = True) -> None:
        # Checked before the body's ops: xDSL's own check would blame the last
        # body op ("... is not a terminator"), with no location.
        blocks = self.body.blocks
        if len(blocks) == 1 and not isinstance(blocks.first.last_op, YieldOp):
            err = VerifyException(f"{self.name}: body must end with loop.yield")
            self.emit_error(f"Operation does not verify: {err}", err)
        super().verify(verify_nested_ops)

    def verify_(self) -> None:
        if self.outs and self.res:
            raise VerifyException(f"{self.name}: either results or outs(...), not both")
        if len(self.targets) != self.result_count():
            raise VerifyException(
                f"{self.name}: expected {self.result_count()} result(s), got {len(self.targets)}"
            )
        for t in self.targets:
            if not is_tensor_like(t.type):
                raise VerifyException(f"{self.name}: {t.type} is not a tensor or buffer")
        for t in self.outs:
            if t.type.name != "buffer.buffer":
                raise VerifyException(
                    f"{self.name}: outs(...) are the buffers written in place, not {t.type}"
                )

    # ---- syntax: `loop.<op> <keyword props> [ranges] ... : types { body }` ----

    def _print_head(self, printer: Printer) -> None:
        printer.print_string(" " + format_expr_list(self.ranges.data))

    def print(self, printer: Printer) -> None:
        self._print_head(printer)
        if self.outs:
            printer.print_string(" outs(")
            printer.print_list(self.outs, printer.print_operand)
            printer.print_string(" : ")
            printer.print_list([v.type for v in self.outs], printer.print_attribute)
            printer.print_string(")")
        elif self.res:
            printer.print_string(" : ")
            printer.print_list([r.type for r in self.res], printer.print_attribute)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=self.BODY_HAS_INDICES)

    @classmethod
    def _parse_head(cls, parser: Parser) -> dict[str, Attribute]:
        return {"ranges": ShapeAttr(parse_expr_list(parser))}

    @classmethod
    def parse(cls, parser: Parser):
        props = cls._parse_head(parser)
        outs, result_types = _parse_outs_or_types(parser, cls.name)
        body = parser.parse_region()
        return cls.build(
            operands=[outs], result_types=[result_types], properties=props, regions=[body]
        )


def _parse_outs_or_types(parser: Parser, op_name: str) -> tuple[list[SSAValue], list[Attribute]]:
    """A nest's tail before its body: ``outs(...)`` (bufferized) or ``: types``
    (tensor results), or neither."""
    if parser.parse_optional_keyword("outs"):
        return _parse_outs(parser, op_name), []
    if parser.parse_optional_punctuation(":"):
        return [], parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
    return [], []


def _parse_outs(parser: Parser, op_name: str) -> list[SSAValue]:
    """``(%a, %b : A, B)`` after the ``outs`` keyword."""
    parser.parse_punctuation("(")
    start = parser.pos
    names = parser.parse_comma_separated_list(
        parser.Delimiter.NONE, parser.parse_unresolved_operand
    )
    parser.parse_punctuation(":")
    types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
    end = parser.pos
    parser.parse_punctuation(")")
    if len(names) != len(types):
        parser.raise_error(
            f"outs(...) needs one type per operand: {len(names)} operand(s), {len(types)} type(s)",
            start,
            end,
        )
    if parser.parse_optional_punctuation(":"):
        parser.raise_error(
            f"{op_name} with outs(...) writes its outs and has no results: drop ': types'",
            parser.pos - 1,
            parser.pos,
        )
    return parser.resolve_operands(names, types, parser.pos)


def _verify_body(op: LoopOp, n_args: int, yield_count: int | None) -> YieldOp:
    block = op.body.block
    if len(block.args) != n_args:
        raise VerifyException(
            f"{op.name}: body takes {n_args} index argument(s), one per range, "
            f"got {len(block.args)}"
        )
    for a in block.args:
        if not isinstance(a.type, IndexType):
            raise VerifyException(f"{op.name}: body arguments must be index, got {a.type}")
    term = block.last_op
    if not isinstance(term, YieldOp):
        raise VerifyException(f"{op.name}: body must end with loop.yield")
    if yield_count is not None and len(term.values) != yield_count:
        raise VerifyException(
            f"{op.name}: body must yield {yield_count} value(s), got {len(term.values)}"
        )
    return term


def _shape_of(t: Attribute) -> tuple[sympy.Expr, ...]:
    return t.shape_attr.data


@irdl_op_definition
class PointwiseOp(LoopOp):
    """One element per point of ``ranges``: the result's element ``[i0, i1, ...]`` is
    what the body yields there."""

    name = "loop.pointwise"

    def verify_(self) -> None:
        super().verify_()
        term = _verify_body(self, len(self.ranges.data), 1)
        target = self.targets[0].type
        if _shape_of(target) != self.ranges.data:
            raise VerifyException(
                f"loop.pointwise: result shape {format_expr_list(_shape_of(target))} must equal "
                f"its ranges {format_expr_list(self.ranges.data)}"
            )
        if term.values[0].type != target.element_type:
            raise VerifyException(
                f"loop.pointwise: body yields {term.values[0].type}, result holds "
                f"{target.element_type}"
            )


@irdl_op_definition
class ReductionOp(LoopOp):
    """Reduce the body's values over ``reduction_ranges`` for each point of ``ranges``.

    ``argmax``/``argmin`` give the row-major position within the reduction domain
    (first one on ties, NaN counts as largest, as torch); ``welford`` gives
    (mean, m2, count) of the body's values.
    """

    name = "loop.reduction"

    kind = prop_def(StringAttr)
    reduction_ranges = prop_def(ShapeAttr)
    template = opt_prop_def(StringAttr)
    """``gemm``: the body is a product ``a[.., k] * b[k, ..]`` (``convert-aten-to-loop``
    lowered a matrix product to it) that ``convert-loop-to-tt`` emits as a
    ``tt.dot`` template, its epilogue members fused after the dot
    (``loop_to_tt/gemm.py``); ``gemm:CONFIG`` carries the config compile-time
    tuning chose. Printed ``template gemm`` (``template "gemm:..."``) after the ranges."""

    def index_symbols(self) -> list[sympy.Symbol]:
        return index_symbols(len(self.ranges.data), len(self.reduction_ranges.data))

    @property
    def is_gemm(self) -> bool:
        return self.template is not None and self.template.data.split(":")[0] == "gemm"

    @property
    def template_config(self) -> str | None:
        """The config a template was tuned to (``gemm:64x64x32w4s3g8``), if any."""
        if self.template is None or ":" not in self.template.data:
            return None
        return self.template.data.split(":", 1)[1]

    def result_count(self) -> int:
        return reduction_result_count(self.kind.data)

    def verify_(self) -> None:
        if self.kind.data not in REDUCTION_KINDS:
            raise VerifyException(
                f"loop.reduction: unknown kind '{self.kind.data}' (one of "
                f"{', '.join(REDUCTION_KINDS)})"
            )
        if self.kind.data == "welford" and any(
            t.type.element_type not in (builtin.f32, builtin.f64) for t in self.targets
        ):
            raise VerifyException(
                "loop.reduction welford: accumulates in f32 or f64 (its count must be exact)"
            )
        if self.kind.data == "welford" and len(self.targets) != 3:
            raise VerifyException(
                "loop.reduction welford: expected 3 results (mean, m2, count), "
                f"got {len(self.targets)}"
            )
        super().verify_()
        n = len(self.ranges.data) + len(self.reduction_ranges.data)
        term = _verify_body(self, n, 1)
        yielded = term.values[0].type
        for t in self.targets:
            if _shape_of(t.type) != self.ranges.data:
                raise VerifyException(
                    f"loop.reduction: result shape {format_expr_list(_shape_of(t.type))} must "
                    f"equal its ranges {format_expr_list(self.ranges.data)}"
                )
        want = {
            "argmax": builtin.i64,
            "argmin": builtin.i64,
            "any": builtin.i1,
            "all": builtin.i1,
        }.get(self.kind.data, yielded)
        for t in self.targets:
            if t.type.element_type != want:
                raise VerifyException(
                    f"loop.reduction {self.kind.data}: result holds {t.type.element_type}, "
                    f"expected {want}"
                )
        if self.kind.data in ("any", "all") and yielded != builtin.i1:
            raise VerifyException(f"loop.reduction {self.kind.data}: body must yield i1")
        if self.template is not None:
            if self.template.data.split(":")[0] not in REDUCTION_TEMPLATES:
                raise VerifyException(
                    f"loop.reduction: unknown template '{self.template.data}' (one of "
                    f"{', '.join(REDUCTION_TEMPLATES)})"
                )
            if self.kind.data != "sum" or len(self.reduction_ranges.data) != 1:
                raise VerifyException(
                    "loop.reduction template gemm: a sum over one reduction range (K)"
                )

    def _print_head(self, printer: Printer) -> None:
        printer.print_string(
            f" {self.kind.data} {format_expr_list(self.ranges.data)} "
            f"{format_expr_list(self.reduction_ranges.data)}"
        )
        if self.template is not None:
            t = self.template.data
            printer.print_string(f" template {t}" if t.isidentifier() else f' template "{t}"')

    @classmethod
    def _parse_head(cls, parser: Parser) -> dict[str, Attribute]:
        kind = parser.parse_optional_identifier()
        if kind is None:
            parser.raise_error(
                f"loop.reduction: expected a reduction kind ({', '.join(REDUCTION_KINDS)})"
            )
        ranges = parse_expr_list(parser)
        rranges = parse_expr_list(parser)
        props: dict[str, Attribute] = {
            "kind": StringAttr(kind),
            "ranges": ShapeAttr(ranges),
            "reduction_ranges": ShapeAttr(rranges),
        }
        if parser.parse_optional_keyword("template"):
            # a name (gemm), or a quoted name with its tuned config ("gemm:64x64x32w4s3g8")
            name = parser.parse_optional_str_literal()
            if name is None:
                name = parser.expect(
                    parser.parse_optional_identifier, "expected a template name (gemm)"
                )
            props["template"] = StringAttr(name)
        return props


SCAN_KINDS = ("sum", "prod", "max", "min", "logsumexp", "argmax", "argmin")
"""``argmax``/``argmin`` give two results: the running extremum and its position."""


def scan_result_count(kind: str) -> int:
    return 2 if kind in ("argmax", "argmin") else 1


def _narrower_float(narrow: Attribute, wide: Attribute) -> bool:
    return (
        isinstance(narrow, builtin.AnyFloat)
        and isinstance(wide, builtin.AnyFloat)
        and narrow.bitwidth < wide.bitwidth
    )


@irdl_op_definition
class ScanOp(LoopOp):
    """Inclusive scan along dimension ``dim`` of ``ranges``: the result's element
    ``[.., i_dim, ..]`` combines the body's values at ``[.., 0..i_dim, ..]`` in
    order (Inductor's ``ir.Scan``; ``cumsum``, ``cumprod``, ``logcumsumexp``,
    ``cummax``/``cummin``).

    ``sum``/``prod``/``max``/``min`` combine as their reductions do (NaN
    propagates); ``logsumexp`` is ``log(exp(a) + exp(b))``, computed stably;
    ``argmax``/``argmin`` give the running extremum and its position along
    ``dim``, the last one on ties and the last NaN once there is one (as
    ``torch.cummax``). The scan accumulates in the type the body yields; the
    values result may hold a narrower float (each output rounded once: a bf16
    ``cumsum`` accumulated in f32, as ATen does)."""

    name = "loop.scan"

    kind = prop_def(StringAttr)
    dim = prop_def(IntegerAttr[I64])

    def result_count(self) -> int:
        return scan_result_count(self.kind.data)

    @property
    def scan_dim(self) -> int:
        return self.dim.value.data

    def verify_(self) -> None:
        kind = self.kind.data
        if kind not in SCAN_KINDS:
            raise VerifyException(
                f"loop.scan: unknown kind '{kind}' (one of {', '.join(SCAN_KINDS)})"
            )
        super().verify_()
        rank = len(self.ranges.data)
        if not 0 <= self.scan_dim < rank:
            raise VerifyException(
                f"loop.scan: dim {self.scan_dim} is out of range for {rank} range(s)"
            )
        term = _verify_body(self, rank, 1)
        yielded = term.values[0].type
        for t in self.targets:
            if _shape_of(t.type) != self.ranges.data:
                raise VerifyException(
                    f"loop.scan: result shape {format_expr_list(_shape_of(t.type))} must "
                    f"equal its ranges {format_expr_list(self.ranges.data)}"
                )
        if kind == "logsumexp" and not isinstance(yielded, builtin.AnyFloat):
            raise VerifyException(f"loop.scan logsumexp: body must yield a float, not {yielded}")
        values = self.targets[0].type.element_type
        if values != yielded and not _narrower_float(values, yielded):
            raise VerifyException(
                f"loop.scan {kind}: result holds {values}, expected the yielded {yielded} "
                "(or a narrower float)"
            )
        if len(self.targets) == 2 and self.targets[1].type.element_type != builtin.i64:
            raise VerifyException(
                f"loop.scan {kind}: the positions result holds "
                f"{self.targets[1].type.element_type}, expected i64"
            )

    def _print_head(self, printer: Printer) -> None:
        printer.print_string(
            f" {self.kind.data} dim {self.scan_dim} {format_expr_list(self.ranges.data)}"
        )

    @classmethod
    def _parse_head(cls, parser: Parser) -> dict[str, Attribute]:
        kind = parser.parse_optional_identifier()
        if kind is None:
            parser.raise_error(f"loop.scan: expected a scan kind ({', '.join(SCAN_KINDS)})")
        parser.parse_keyword("dim")
        dim = parser.parse_integer(allow_boolean=False, allow_negative=False)
        return {
            "kind": StringAttr(kind),
            "dim": IntegerAttr(dim, 64),
            "ranges": ShapeAttr(parse_expr_list(parser)),
        }


SCATTER_MODES = ("store", "add", "max", "min")
"""How a scatter writes each element: overwrite, or combine atomically."""


@irdl_op_definition
class ScatterOp(LoopOp):
    """Store each point's value through a (data-dependent) index: for every point
    of ``ranges`` the body yields a value then the indirect indices ``t0, t1 ...``,
    and the element ``index`` names (expressions over ``i0 ...`` and ``t0 ...``)
    is overwritten (``store``) or combined with it (``add``, ``max``, ``min``:
    atomically, in any order) -- Inductor's ``ir.Scatter``.

    Tensor level: the result is a copy of ``init`` updated so (``into(%init)``);
    an element several points name gets one of their values (``store``) or all
    of them combined. Buffer level: the op updates its out in place, which
    holds ``init`` already (bufferize writes the copy first, or lets ``init``'s
    producer write the out); index and bounds are checked as loads' are."""

    name = "loop.scatter"

    init = var_operand_def()
    mode = prop_def(StringAttr)
    index = prop_def(ShapeAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def n_indirect(self) -> int:
        term = self.body.block.last_op
        return len(term.values) - 1 if isinstance(term, YieldOp) else 0

    def verify_(self) -> None:
        mode = self.mode.data
        if mode not in SCATTER_MODES:
            raise VerifyException(
                f"loop.scatter: unknown mode '{mode}' (one of {', '.join(SCATTER_MODES)})"
            )
        super().verify_()
        if self.res and len(self.init) != 1:
            raise VerifyException(
                "loop.scatter: a value-semantic scatter updates a copy of one tensor: "
                "into(%init : type)"
            )
        if self.outs and self.init:
            raise VerifyException(
                "loop.scatter with outs(...) updates its out in place: drop into(...)"
            )
        target = self.targets[0].type
        if self.init:
            t = self.init[0].type
            if not is_tensor_like(t):
                raise VerifyException(f"loop.scatter: into(...) takes a tensor, not {t}")
            if _shape_of(t) != _shape_of(target) or t.element_type != target.element_type:
                raise VerifyException(
                    f"loop.scatter: the result {target} must have the type of into(...) {t} "
                    "(shape and element type)"
                )
        term = _verify_body(self, len(self.ranges.data), None)
        if not term.values:
            raise VerifyException("loop.scatter: body must yield the value, then the indices")
        value, *indices = term.values
        if value.type != target.element_type:
            raise VerifyException(
                f"loop.scatter: body yields {value.type}, the result holds {target.element_type}"
            )
        for k, v in enumerate(indices):
            if not isinstance(v.type, IntegerType | IndexType):
                raise VerifyException(
                    f"loop.scatter: index t{k} must be an integer or index, not {v.type}"
                )
        if len(self.index.data) != len(_shape_of(target)):
            raise VerifyException(
                f"loop.scatter: {len(self.index.data)} indices for a rank-"
                f"{len(_shape_of(target))} result"
            )
        allowed = set(self.index_symbols()) | {indirect_symbol(k) for k in range(len(indices))}
        _check_exprs(self, self.index.data, allowed)

    def _print_head(self, printer: Printer) -> None:
        printer.print_string(f" {self.mode.data} {format_expr_list(self.ranges.data)}")
        if self.init:
            printer.print_string(" into(")
            printer.print_operand(self.init[0])
            printer.print_string(" : ")
            printer.print_attribute(self.init[0].type)
            printer.print_string(")")
        printer.print_string(f" at {format_expr_list(self.index.data)}")

    @classmethod
    def parse(cls, parser: Parser) -> ScatterOp:
        mode = parser.parse_optional_identifier()
        if mode is None:
            parser.raise_error(f"loop.scatter: expected a mode ({', '.join(SCATTER_MODES)})")
        ranges = parse_expr_list(parser)
        init: list[SSAValue] = []
        if parser.parse_optional_keyword("into"):
            parser.parse_punctuation("(")
            name = parser.parse_unresolved_operand()
            parser.parse_punctuation(":")
            init = [parser.resolve_operand(name, parser.parse_type())]
            parser.parse_punctuation(")")
        parser.parse_keyword("at")
        index = parse_expr_list(parser)
        outs, result_types = _parse_outs_or_types(parser, cls.name)
        body = parser.parse_region()
        return cls.build(
            operands=[init, outs],
            result_types=[result_types],
            properties={
                "mode": StringAttr(mode),
                "ranges": ShapeAttr(ranges),
                "index": ShapeAttr(index),
            },
            regions=[body],
        )


@irdl_op_definition
class FusedOp(LoopOp):
    """A fusion group: loop nests that become one kernel.

    Its members are ``loop.reduction`` ops over (``ranges``, ``reduction_ranges``)
    and ``loop.pointwise`` ops over ``ranges`` or ``ranges ++ reduction_ranges``
    (prologue/epilogue), in order; the group yields the tensors that leave it.
    Tensors made and used only inside the group are never materialized.
    """

    name = "loop.fused"
    BODY_HAS_INDICES: ClassVar[bool] = False

    reduction_ranges = prop_def(ShapeAttr)

    def result_count(self) -> int:
        term = self.body.block.last_op
        return len(term.values) if isinstance(term, YieldOp) else 0

    def members(self) -> list[LoopOp]:
        return [op for op in self.body.block.ops if isinstance(op, LoopOp)]

    def verify_(self) -> None:
        super().verify_()
        block = self.body.block
        if block.args:
            raise VerifyException("loop.fused: the group body takes no arguments")
        term = block.last_op
        if not isinstance(term, YieldOp):
            raise VerifyException("loop.fused: body must end with loop.yield")
        outer, inner = self.ranges.data, self.reduction_ranges.data
        for op in block.ops:
            if op is term:
                continue
            if isinstance(op, ReductionOp):
                if op.ranges.data != outer or op.reduction_ranges.data != inner:
                    raise VerifyException(
                        "loop.fused: member reductions must range over the group's ranges "
                        f"{format_expr_list(outer)} {format_expr_list(inner)}, got "
                        f"{format_expr_list(op.ranges.data)} "
                        f"{format_expr_list(op.reduction_ranges.data)}"
                    )
            elif isinstance(op, PointwiseOp):
                if op.ranges.data not in (outer, outer + inner):
                    raise VerifyException(
                        "loop.fused: member pointwise ops must range over the group's ranges "
                        f"{format_expr_list(outer)} (or ranges ++ reduction_ranges "
                        f"{format_expr_list(outer + inner)}), got "
                        f"{format_expr_list(op.ranges.data)}"
                    )
            else:
                raise VerifyException(f"loop.fused: {op.name} cannot be a member of a group")
            if op.outs:
                raise VerifyException("loop.fused: members are value-semantic")
        for k, (v, t) in enumerate(zip(term.values, self.targets)):
            if not is_tensor_like(v.type):
                raise VerifyException(f"loop.fused: the group yields tensors, not {v.type}")
            if _shape_of(v.type) != _shape_of(t.type) or v.type.element_type != t.type.element_type:
                what = "out" if self.outs else "result"
                raise VerifyException(
                    f"loop.fused: yielded tensor #{k} {v.type} does not match {what} {t.type} "
                    "(shape and element type)"
                )

    def _print_head(self, printer: Printer) -> None:
        printer.print_string(
            f" {format_expr_list(self.ranges.data)} {format_expr_list(self.reduction_ranges.data)}"
        )

    @classmethod
    def _parse_head(cls, parser: Parser) -> dict[str, Attribute]:
        return {
            "ranges": ShapeAttr(parse_expr_list(parser)),
            "reduction_ranges": ShapeAttr(parse_expr_list(parser)),
        }


def new_body(n_ranges: int, n_reduction: int = 0) -> Block:
    """An empty body block whose index arguments are named i0.., r0.."""
    block = Block(arg_types=[IndexType()] * (n_ranges + n_reduction))
    for arg, sym in zip(block.args, index_symbols(n_ranges, n_reduction)):
        arg.name_hint = sym.name
    return block


# --------------------------------------------------------------------------
# Function-level ops
# --------------------------------------------------------------------------


@irdl_op_definition
class ViewOp(IRDLOperation):
    """A view with no copy: element ``[i0, ...]`` of the result is ``source[index]``,
    the index expressions written over the result's indices i0, i1 ..."""

    name = "loop.view"

    source = operand_def()
    index = prop_def(ShapeAttr)
    result = result_def(LoopTensorType)

    traits = traits_def(Pure())

    def __init__(self, source: SSAValue, index: Sequence[SymInt], result_type: LoopTensorType):
        super().__init__(
            operands=[source], properties={"index": ShapeAttr(index)}, result_types=[result_type]
        )

    def verify_(self) -> None:
        t = _check_index_map(self, "views", "source")
        if self.result.type.element_type != t.element_type:
            raise VerifyException(
                f"loop.view: a view keeps the element type: source holds {t.element_type}, "
                f"result {self.result.type.element_type}"
            )
        _check_exprs(self, self.index.data, set(index_symbols(self.result.type.rank)))

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        printer.print_string(format_expr_list(self.index.data) + " : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ViewOp:
        source = parser.parse_unresolved_operand()
        index = parse_expr_list(parser)
        parser.parse_punctuation(":")
        source_type = parser.parse_type()
        parser.parse_punctuation("->")
        start = parser.pos
        result_type = parser.parse_type()
        if not isinstance(result_type, LoopTensorType):
            parser.raise_error(
                f"loop.view: the result is a !loop.tensor, not {result_type}", start, parser.pos
            )
        return cls(parser.resolve_operand(source, source_type), index, result_type)


@irdl_op_definition
class CopyOp(IRDLOperation):
    """Overwrite graph input ``dest`` with ``value`` (an in-place mutation of an
    input, as AOTAutograd emits ``copy_`` for mutated inputs)."""

    name = "loop.copy"

    value = operand_def()
    dest = operand_def()

    assembly_format = "$value `,` $dest attr-dict `:` type($value) `,` type($dest)"

    def __init__(self, value: SSAValue, dest: SSAValue):
        super().__init__(operands=[value, dest])

    def verify_(self) -> None:
        for v in (self.value, self.dest):
            if not is_tensor_like(v.type):
                raise VerifyException(f"loop.copy: {v.type} is not a tensor or buffer")
        if _shape_of(self.value.type) != _shape_of(self.dest.type):
            raise VerifyException(
                f"loop.copy: value shape {format_expr_list(_shape_of(self.value.type))} differs "
                f"from destination shape {format_expr_list(_shape_of(self.dest.type))}"
            )
        if self.value.type.element_type != self.dest.type.element_type:
            raise VerifyException(
                f"loop.copy: value element type {self.value.type.element_type} differs from "
                f"destination element type {self.dest.type.element_type}"
            )


Loop = Dialect(
    "loop",
    [
        PointwiseOp,
        ReductionOp,
        ScanOp,
        ScatterOp,
        FusedOp,
        LoadOp,
        IndexOp,
        SeedOp,
        RandOp,
        RandnOp,
        YieldOp,
        ViewOp,
        CopyOp,
    ],
    [LoopTensorType],
)

__all__ = [
    "REDUCTION_KINDS",
    "CopyOp",
    "FusedOp",
    "IndexOp",
    "LoadOp",
    "Loop",
    "LoopOp",
    "LoopTensorType",
    "PointwiseOp",
    "RandOp",
    "RandnOp",
    "ReductionOp",
    "SCAN_KINDS",
    "SCATTER_MODES",
    "ScatterOp",
    "scan_result_count",
    "ScanOp",
    "SeedOp",
    "ViewOp",
    "YieldOp",
    "index_symbols",
    "indirect_symbol",
    "new_body",
]
