"""The buffer dialect: memory with a layout, and the calls that need memory.

After ``bufferize`` every tensor that must exist in memory is a buffer::

    !buffer.buffer<[4, s0], f32>                                   row-major
    !buffer.buffer<[8, 4], f32, strides [1, 8], offset 2, device "cuda:0">

Sizes and strides are symbolic (sympy); ``offset`` counts elements from the
start of the storage the buffer lives in (an allocation or a graph input).

Ops:

* ``buffer.alloc`` -- fresh storage with the layout of its type;
* ``buffer.view %b : A -> B`` -- reinterpret ``%b``'s storage with layout B (an
  aliasing output, a view that needs no copy);
* ``buffer.reuse %dead : A -> B`` -- the memory plan's reuse of a dead buffer's
  storage (Inductor's ``buf3 = buf0; del buf0  # reuse``);
* ``buffer.dealloc %b`` -- the last use of an allocation (the memory plan's);
* ``buffer.extern (%a, %b) {aten ops}`` -- call ATen for what coil does not
  lower (mm, convolution, any op): the region is the aten op itself over block
  arguments typed with the layouts ATen sees, so the call prints, parses and
  runs like any aten IR. Before bufferize its operands and results are
  ``!loop.tensor`` values; after, buffers.

The loop nests (``loop.pointwise`` ...) write buffers in destination-passing
style: ``outs(%buf : !buffer.buffer<...>)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

import sympy
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import VerifyException

from coil.dialects import dtypes
from coil.dialects.layout import format_layout, parse_layout, verify_layout
from coil.dialects.symbolic import (
    ExprAttr,
    ShapeAttr,
    SymInt,
    contiguous_strides,
)

if TYPE_CHECKING:
    import torch


@irdl_attr_definition
class BufferType(ParametrizedAttribute, TypeAttribute):
    """Memory holding a strided tensor (strides printed when not row-major, offset
    when not 0, device unless cpu)."""

    name = "buffer.buffer"

    shape_attr: ShapeAttr
    element_type: Attribute
    strides_attr: ShapeAttr
    offset_attr: ExprAttr
    device_attr: StringAttr

    def __init__(
        self,
        shape: Sequence[SymInt],
        element_type: Attribute | torch.dtype,
        strides: Sequence[SymInt] | None = None,
        offset: SymInt = 0,
        device: str | torch.device = "cpu",
    ):
        if dtypes.is_torch_dtype(element_type):
            element_type = dtypes.to_mlir(element_type)
        if strides is None:
            strides = contiguous_strides(shape)
        super().__init__(
            ShapeAttr(shape),
            element_type,
            ShapeAttr(strides),
            ExprAttr(offset),
            StringAttr(str(device)),
        )

    @property
    def shape(self) -> tuple[SymInt, ...]:
        return self.shape_attr.symints

    @property
    def strides(self) -> tuple[SymInt, ...]:
        return self.strides_attr.symints

    @property
    def offset(self) -> SymInt:
        return self.offset_attr.symint

    @property
    def dtype(self) -> torch.dtype:
        """The torch dtype (imports torch; passes use ``element_type``)."""
        return dtypes.to_torch(self.element_type)

    @property
    def device(self) -> torch.device:
        """The torch device (imports torch; passes use ``device_attr``)."""
        import torch

        return torch.device(self.device_attr.data)

    @property
    def rank(self) -> int:
        return len(self.shape_attr.data)

    def is_contiguous(self) -> bool:
        return self.strides_attr.data == ShapeAttr(contiguous_strides(self.shape)).data

    def storage_numel(self) -> sympy.Expr:
        """Elements of storage the layout spans: offset + 1 + sum((size-1)*stride)."""
        sizes, strides = self.shape_attr.data, self.strides_attr.data
        if any(s == 0 for s in sizes):
            return sympy.Integer(0)
        span = sum(((n - 1) * st for n, st in zip(sizes, strides)), sympy.Integer(0))
        return sympy.expand(self.offset_attr.data + 1 + span)

    def storage_bytes(self) -> sympy.Expr:
        return self.storage_numel() * dtypes.itemsize(self.element_type)

    def verify(self) -> None:
        verify_layout("buffer", self.shape_attr.data, self.element_type, self.strides_attr.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        layout = parse_layout(parser, ("strides", "offset", "device"))
        return (
            ShapeAttr(layout.shape),
            layout.element_type,
            ShapeAttr(layout.strides_or_contiguous()),
            ExprAttr(layout.offset),
            StringAttr(layout.device),
        )

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(
            format_layout(
                self.shape_attr.data,
                self.element_type,
                self.strides_attr.data,
                self.offset_attr.data,
                self.device_attr.data,
            )
        )


def buffer_type_for(t: Attribute, device: str | torch.device | None = None) -> BufferType:
    """A buffer with ``t``'s sizes, dtype (and strides/device when ``t`` has them)."""
    strides = getattr(t, "strides", None)
    if device is None:
        device_attr = getattr(t, "device_attr", None)
        device = device_attr.data if device_attr is not None else "cpu"
    dev = device
    return BufferType(t.shape, t.element_type, strides, 0, dev)


def check_buffer(op: IRDLOperation, what: str, t: Attribute) -> None:
    if not isinstance(t, BufferType):
        raise VerifyException(f"{op.name}: {what} must be a !buffer.buffer, not {t}")


def _same_storage_shape(op: IRDLOperation, source: Attribute, result: Attribute) -> None:
    check_buffer(op, "the source", source)
    check_buffer(op, "the result", result)
    if source.device_attr != result.device_attr:
        raise VerifyException(
            f"{op.name}: a buffer cannot change device ({source.device_attr.data} -> "
            f"{result.device_attr.data})"
        )
    if source.element_type != result.element_type:
        raise VerifyException(
            f"{op.name}: the storage keeps its element type ({source.element_type} -> "
            f"{result.element_type})"
        )


@irdl_op_definition
class AllocOp(IRDLOperation):
    """Fresh storage for the layout of the result type."""

    name = "buffer.alloc"
    result = result_def()  # a BufferType (checked in verify_, with a location)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, result_type: BufferType):
        super().__init__(result_types=[result_type])

    def verify_(self) -> None:
        check_buffer(self, "the result", self.result.type)


class _ReinterpretOp(IRDLOperation):
    """A buffer over the source's storage, with the result type's layout."""

    source = operand_def()  # buffers, checked in verify_
    result = result_def()
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, result_type: BufferType):
        super().__init__(operands=[source], result_types=[result_type])

    def verify_(self) -> None:
        _same_storage_shape(self, self.source.type, self.result.type)


@irdl_op_definition
class ViewOp(_ReinterpretOp):
    """Reinterpret the source's storage with the result's layout (no copy)."""

    name = "buffer.view"


@irdl_op_definition
class ReuseOp(_ReinterpretOp):
    """Take over the storage of a dead buffer (same device, dtype and storage size)."""

    name = "buffer.reuse"

    def verify_(self) -> None:
        super().verify_()
        # Symbolic sizes are the memory plan's to prove; static ones are checked.
        need, have = self.result.type.storage_numel(), self.source.type.storage_numel()
        if need.is_Integer and have.is_Integer and need > have:
            raise VerifyException(
                f"buffer.reuse: the result spans {need} elements of storage, the reused "
                f"buffer only {have}"
            )


class LastUseBase(IRDLOperation):
    """The last use of an allocation: its storage may be freed after this point
    (``buffer.dealloc``, ``host.free``)."""

    buffer = operand_def()  # a buffer, checked in verify_
    assembly_format = "$buffer attr-dict `:` type($buffer)"

    def __init__(self, buffer: SSAValue):
        super().__init__(operands=[buffer])

    def verify_(self) -> None:
        check_buffer(self, "the operand", self.buffer.type)


@irdl_op_definition
class DeallocOp(LastUseBase):
    """The last use of an allocation: its storage may be freed after this point."""

    name = "buffer.dealloc"


class YieldBase(IRDLOperation):
    """Terminates an extern region (``buffer.yield``, ``host.yield``)."""

    values = var_operand_def()
    traits = traits_def(IsTerminator())
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class YieldOp(YieldBase):
    """Terminates a ``buffer.extern`` region."""

    name = "buffer.yield"


class ExternBase(IRDLOperation):
    """Call ATen (the universal fallback): the region holds the aten op(s) to run
    on the operands; the results are what the region yields (with ``YIELD``).
    An extern with no results writes an operand in place (destination-passing:
    memory-plan's ``aten.mm.out(..., %out)`` into a planned buffer, which its
    readers then read). ``buffer.extern`` and ``host.extern`` share this."""

    YIELD: ClassVar[type[IRDLOperation]]

    args = var_operand_def()
    res = var_result_def()
    body = region_def("single_block")

    def __init__(self, args: Sequence[SSAValue], result_types: Sequence[Attribute], body):
        super().__init__(operands=[list(args)], result_types=[list(result_types)], regions=[body])

    @property
    def callee(self) -> Operation | None:
        """The aten op the region calls (None for a region that only yields)."""
        for op in self.body.block.ops:
            if not isinstance(op, self.YIELD) and op.name not in (
                "aten.constant",
                "aten.tensor_constant",
            ):
                return op
        return None

    @property
    def kernel_name(self) -> str:
        """The overload called ("aten.mm.default"), for logs and generated code."""
        op = self.callee
        if op is None:
            return "extern"
        if op.name == "aten.operator":
            return op.overload_name.data.replace("::", ".")
        return op.name

    def verify(self, verify_nested_ops: bool = True) -> None:
        # Checked before the region's ops: xDSL's own check would blame the aten
        # op ("... is not a terminator"), with no location.
        blocks = self.body.blocks
        if len(blocks) == 1 and not isinstance(blocks.first.last_op, self.YIELD):
            err = VerifyException(f"{self.name}: the region must end with {self.YIELD.name}")
            self.emit_error(f"Operation does not verify: {err}", err)
        super().verify(verify_nested_ops)

    def verify_(self) -> None:
        block = self.body.block
        if len(block.args) != len(self.args):
            raise VerifyException(
                f"{self.name}: one block argument per operand: {len(self.args)} operand(s), "
                f"{len(block.args)} block argument(s)"
            )
        for k, (arg, operand) in enumerate(zip(block.args, self.args)):
            a, b = arg.type, operand.type
            if _shaped(a) and _shaped(b) and not _same_values(a, b):
                raise VerifyException(
                    f"{self.name}: block argument #{k} {a} does not match operand {b} "
                    "(shape and element type)"
                )
        term = block.last_op
        if not isinstance(term, self.YIELD):
            raise VerifyException(f"{self.name}: the region must end with {self.YIELD.name}")
        if len(term.values) != len(self.res):
            raise VerifyException(
                f"{self.name}: the region must yield one value per result: "
                f"{len(self.res)} result(s), {len(term.values)} yielded"
            )
        for v, r in zip(term.values, self.res):
            a, b = v.type, r.type
            if _shaped(a) and _shaped(b) and not _same_values(a, b):
                raise VerifyException(
                    f"{self.name}: result {b} does not match what the call yields ({a})"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(f' "{self.kernel_name}" (')
        printer.print_list(self.args, printer.print_operand)
        printer.print_string(") : (")
        printer.print_list([a.type for a in self.args], printer.print_attribute)
        printer.print_string(") -> (")
        printer.print_list([r.type for r in self.res], printer.print_attribute)
        printer.print_string(") ")
        printer.print_region(self.body, print_entry_block_args=True)

    @classmethod
    def parse(cls, parser: Parser):
        # The quoted name is for readers; the region says what is called, and
        # the two must agree.
        name_start = parser.pos
        name = parser.parse_optional_str_literal()
        if name is None:
            parser.raise_error(
                f'{cls.name}: expected the called op\'s name, e.g. "aten.mm.default"'
            )
        name_end = parser.pos
        names = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        parser.parse_punctuation(":")
        start = parser.pos
        types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        if len(types) != len(names):
            parser.raise_error(
                f"{cls.name}: {len(names)} operand(s) but {len(types)} operand type(s)",
                start,
                parser.pos,
            )
        parser.parse_punctuation("->")
        result_types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        body = parser.parse_region()
        op = cls(parser.resolve_operands(names, types, parser.pos), result_types, body)
        if op.kernel_name != name:
            parser.raise_error(
                f'{cls.name}: the region calls "{op.kernel_name}", not "{name}"',
                name_start,
                name_end,
            )
        return op


@irdl_op_definition
class ExternOp(ExternBase):
    """``buffer.extern``: an ATen call on buffers (see ExternBase)."""

    name = "buffer.extern"
    YIELD: ClassVar[type[IRDLOperation]] = YieldOp


def _shaped(t: Attribute) -> bool:
    return hasattr(t, "shape_attr") and hasattr(t, "element_type")


def _same_values(a: Attribute, b: Attribute) -> bool:
    """Same shape and element type (layouts may differ: ATen sees its own)."""
    return a.shape_attr == b.shape_attr and a.element_type == b.element_type


Buffer = Dialect(
    "buffer",
    [AllocOp, ViewOp, ReuseOp, DeallocOp, ExternOp, YieldOp],
    [BufferType],
)
