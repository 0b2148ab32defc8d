"""The tt dialect: Triton's TTIR op set, as Triton's ``TritonOps.td`` names it.

A kernel is a ``tt.func`` over scalar and pointer arguments; blocks of values are
builtin ``tensor<1024xf32>``, pointers ``!tt.ptr<f32>`` (and tensors of them);
everything else is ``arith``/``math``/``scf`` (coil's arith: MLIR's elementwise
tensor forms, dialects/arith.py). The text reads like ``triton --dump ttir``:

    tt.func public @coil_add_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>) {
      %pid = tt.get_program_id x : i32
      %c1024 = arith.constant 1024 : i32
      %off = arith.muli %pid, %c1024 : i32
      %range = tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32>
      %base = tt.splat %off : i32 -> tensor<1024xi32>
      %x = arith.addi %base, %range : tensor<1024xi32>
      %p = tt.splat %in_ptr0 : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
      %a = tt.addptr %p, %x : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
      %v = tt.load %a : tensor<1024x!tt.ptr<f32>>
      ...
      tt.return
    }

``tt.reduce`` and ``tt.scan`` print in the generic form, as Triton prints it. ``tt.call`` names
a ``@triton.jit`` library function by its Python path (``@"tl.rand"``), which is
how Triton's frontend spells a call before inlining. Ops are checked for the
shape and element-type rules Triton's verifiers check, with sentences.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I32,
    AnyFloat,
    BoolAttr,
    DenseArrayBase,
    FlatSymbolRefAttrConstr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    i1,
    i32,
)
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    AnyAttr,
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from coil.dialects.func_like import FuncLikeOp

# --------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------


@irdl_attr_definition
class PointerType(ParametrizedAttribute, TypeAttribute):
    """``!tt.ptr<f32>``: a pointer to global memory (address space 1, not printed)."""

    name = "tt.ptr"

    pointee_type: Attribute
    address_space: IntegerAttr

    def __init__(self, pointee: Attribute, address_space: int = 1):
        super().__init__(pointee, IntegerAttr(address_space, 32))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_attribute(self.pointee_type)
        if self.address_space.value.data != 1:
            printer.print_string(f", {self.address_space.value.data}")
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        parser.parse_punctuation("<")
        pointee = parser.parse_type()
        space = 1
        if parser.parse_optional_punctuation(","):
            space = parser.parse_integer()
        parser.parse_punctuation(">")
        return (pointee, IntegerAttr(space, 32))


def shape_of(t: Attribute) -> tuple[int, ...]:
    """The block shape of a tensor type; () for a scalar."""
    return tuple(t.get_shape()) if isinstance(t, TensorType) else ()


def element_of(t: Attribute) -> Attribute:
    return t.get_element_type() if isinstance(t, TensorType) else t


def block_of(element: Attribute, shape: Sequence[int]) -> Attribute:
    """``tensor<shape x element>``, or ``element`` itself for the empty shape."""
    return _block_type(element, tuple(shape)) if shape else element


@functools.lru_cache(maxsize=4096)
def _block_type(element: Attribute, shape: tuple[int, ...]) -> TensorType:
    # Attributes are immutable values: one per (element, shape) saves building
    # and verifying the same type thousands of times in a large graph.
    return TensorType(element, list(shape))


def _require(cond: bool, op: Operation, message: str) -> None:
    if not cond:
        raise VerifyException(f"{op.name}: {message}")


# --------------------------------------------------------------------------
# Functions
# --------------------------------------------------------------------------


@irdl_op_definition
class FuncOp(FuncLikeOp):
    """``tt.func``: a kernel (public) or a device function it calls."""

    name = "tt.func"


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """``tt.return``: leave the function."""

    name = "tt.return"
    srcs = var_operand_def()
    traits = traits_def(IsTerminator(), HasParent(FuncOp))
    assembly_format = "attr-dict ($srcs^ `:` type($srcs))?"

    def __init__(self, *srcs: SSAValue | Operation):
        super().__init__(operands=[srcs])


@irdl_op_definition
class CallOp(IRDLOperation):
    """``tt.call @f(args)``: call a device function; ``@"tl.rand"`` names Triton's library."""

    name = "tt.call"
    callee = prop_def(FlatSymbolRefAttrConstr)
    args = var_operand_def()
    res = var_result_def()
    assembly_format = "$callee `(` $args `)` attr-dict `:` functional-type($args, $res)"

    def __init__(self, callee: str, args: Sequence[SSAValue], result_types: Sequence[Attribute]):
        super().__init__(
            operands=[args],
            result_types=[result_types],
            properties={"callee": SymbolRefAttr(callee)},
        )


# --------------------------------------------------------------------------
# Program ids and ranges
# --------------------------------------------------------------------------

AXES = ("x", "y", "z")


class _ProgramAxisOp(IRDLOperation):
    axis = prop_def(IntegerAttr[I32])
    result = result_def(i32)
    traits = traits_def(Pure())

    def __init__(self, axis: int = 0):
        super().__init__(result_types=[i32], properties={"axis": IntegerAttr(axis, 32)})

    def verify_(self) -> None:
        _require(0 <= self.axis.value.data < 3, self, "axis must be x, y or z")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {AXES[self.axis.value.data]} : i32")

    @classmethod
    def parse(cls, parser: Parser):
        start = parser.pos
        axis = parser.parse_identifier()
        if axis not in AXES:
            parser.raise_error(f"{cls.name}: expected axis x, y or z, got '{axis}'", start)
        parser.parse_punctuation(":")
        parser.parse_type()
        return cls(AXES.index(axis))


@irdl_op_definition
class GetProgramIdOp(_ProgramAxisOp):
    """``tt.get_program_id x``: this program's index along a grid axis."""

    name = "tt.get_program_id"


@irdl_op_definition
class GetNumProgramsOp(_ProgramAxisOp):
    """``tt.get_num_programs x``: the grid's extent along an axis."""

    name = "tt.get_num_programs"


@irdl_op_definition
class MakeRangeOp(IRDLOperation):
    """``tt.make_range``: the i32 block ``[start, end)``; the size is a power of two."""

    name = "tt.make_range"
    start = prop_def(IntegerAttr[I32])
    end = prop_def(IntegerAttr[I32])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, start: int, end: int):
        super().__init__(
            result_types=[TensorType(i32, [end - start])],
            properties={"start": IntegerAttr(start, 32), "end": IntegerAttr(end, 32)},
        )

    def verify_(self) -> None:
        n = self.end.value.data - self.start.value.data
        _require(n > 0 and n & (n - 1) == 0, self, f"range size {n} must be a power of two")
        _require(
            shape_of(self.result.type) == (n,) and element_of(self.result.type) == i32,
            self,
            f"result must be tensor<{n}xi32>",
        )


# --------------------------------------------------------------------------
# Shape manipulation
# --------------------------------------------------------------------------


@irdl_op_definition
class SplatOp(IRDLOperation):
    """``tt.splat``: a scalar repeated over a block."""

    name = "tt.splat"
    src = operand_def()
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"

    def __init__(self, src: SSAValue | Operation, shape: Sequence[int]):
        src = SSAValue.get(src)
        super().__init__(operands=[src], result_types=[TensorType(src.type, list(shape))])

    def verify_(self) -> None:
        _require(not isinstance(self.src.type, TensorType), self, "splats a scalar, not a tensor")
        _require(
            element_of(self.result.type) == self.src.type,
            self,
            f"result elements {element_of(self.result.type)} must be {self.src.type}",
        )


class _ReshapeLikeOp(IRDLOperation):
    """A block of the source's elements in the result's shape (same element type)."""

    src = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"

    def __init__(self, src: SSAValue | Operation, shape: Sequence[int]):
        src = SSAValue.get(src)
        super().__init__(
            operands=[src], result_types=[TensorType(element_of(src.type), list(shape))]
        )


@irdl_op_definition
class BroadcastOp(_ReshapeLikeOp):
    """``tt.broadcast``: stretch size-1 dimensions (same rank)."""

    name = "tt.broadcast"

    def verify_(self) -> None:
        a, b = shape_of(self.src.type), shape_of(self.result.type)
        _require(
            element_of(self.src.type) == element_of(self.result.type), self, "element types differ"
        )
        _require(
            len(a) == len(b) and all(x in (1, y) for x, y in zip(a, b)),
            self,
            f"cannot broadcast {list(a)} to {list(b)}: only size-1 dimensions stretch",
        )


@irdl_op_definition
class ExpandDimsOp(IRDLOperation):
    """``tt.expand_dims``: insert a size-1 dimension at ``axis``."""

    name = "tt.expand_dims"
    src = operand_def(TensorType)
    axis = prop_def(IntegerAttr[I32])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, src: SSAValue | Operation, axis: int):
        src = SSAValue.get(src)
        shape = list(shape_of(src.type))
        shape.insert(axis, 1)
        super().__init__(
            operands=[src],
            result_types=[TensorType(element_of(src.type), shape)],
            properties={"axis": IntegerAttr(axis, 32)},
        )

    def verify_(self) -> None:
        shape = list(shape_of(self.src.type))
        axis = self.axis.value.data
        _require(0 <= axis <= len(shape), self, f"axis {axis} out of range")
        shape.insert(axis, 1)
        _require(
            shape_of(self.result.type) == tuple(shape)
            and element_of(self.result.type) == element_of(self.src.type),
            self,
            f"result must have shape {shape}",
        )


@irdl_op_definition
class ReshapeOp(_ReshapeLikeOp):
    """``tt.reshape``: the same elements in another block shape."""

    name = "tt.reshape"

    def verify_(self) -> None:
        import math

        _require(
            math.prod(shape_of(self.src.type)) == math.prod(shape_of(self.result.type)),
            self,
            "element counts differ",
        )


# --------------------------------------------------------------------------
# Compiler hints
# --------------------------------------------------------------------------


class _HintOp(IRDLOperation):
    """A block of integers passed through with a fact the compiler cannot see
    (Triton sets it as an attribute of the defining op: ``tt.divisibility``,
    ``tt.contiguity``); a false hint is undefined behaviour, as in Triton."""

    T: ClassVar = VarConstraint("T", base(TensorType))
    src = operand_def(T)
    values = prop_def(DenseArrayBase)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$src attr-dict `:` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, src: SSAValue | Operation, values: Sequence[int]):
        src = SSAValue.get(src)
        super().__init__(
            operands=[src],
            result_types=[src.type],
            properties={"values": DenseArrayBase.from_list(i32, list(values))},
        )

    def hint(self) -> tuple[int, ...]:
        return tuple(int(v) for v in self.values.get_values())

    def verify_(self) -> None:
        _require(self.values.get_element_type() == i32, self, "values are i32")
        _require(isinstance(element_of(self.src.type), IntegerType), self, "hints an integer block")
        rank = len(shape_of(self.src.type))
        _require(
            len(self.hint()) == rank,
            self,
            f"needs one value per dimension ({rank}), got {len(self.hint())}",
        )
        for v in self.hint():
            _require(v > 0 and v & (v - 1) == 0, self, f"value {v} must be a power of two")


@irdl_op_definition
class MultipleOfOp(_HintOp):
    """``tt.multiple_of %x {values = array<i32: 16, 1>}``: along dimension ``d``,
    the first element of every contiguous group is a multiple of ``values[d]``
    (``tl.multiple_of``)."""

    name = "tt.multiple_of"


@irdl_op_definition
class MaxContiguousOp(_HintOp):
    """``tt.max_contiguous %x {values = array<i32: 128, 1>}``: along dimension
    ``d``, the elements form runs of ``values[d]`` consecutive integers
    (``tl.max_contiguous``)."""

    name = "tt.max_contiguous"


# --------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------


def _pointee(t: Attribute) -> Attribute | None:
    e = element_of(t)
    return e.pointee_type if isinstance(e, PointerType) else None


@irdl_op_definition
class AddPtrOp(IRDLOperation):
    """``tt.addptr``: pointer(s) plus an element offset (scaled by the element size)."""

    name = "tt.addptr"
    T: ClassVar = VarConstraint("T", AnyAttr())
    ptr = operand_def(T)
    offset = operand_def()
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$ptr `,` $offset attr-dict `:` type($result) `,` type($offset)"

    def __init__(self, ptr: SSAValue | Operation, offset: SSAValue | Operation):
        super().__init__(operands=[ptr, offset], result_types=[SSAValue.get(ptr).type])

    def verify_(self) -> None:
        _require(_pointee(self.ptr.type) is not None, self, "first operand must be pointers")
        _require(self.ptr.type == self.result.type, self, "result type must be the pointer type")
        _require(
            isinstance(element_of(self.offset.type), IntegerType), self, "offsets are integers"
        )
        _require(
            shape_of(self.ptr.type) == shape_of(self.offset.type),
            self,
            "pointer and offset blocks must have the same shape",
        )


CACHE_MODIFIERS = ("none", "ca", "cg", "wb", "cs", "wt", "cv")
EVICTION_POLICIES = ("normal", "evict_first", "evict_last")


def _check_mask(op: Operation, ptr: Attribute, mask: SSAValue | None) -> None:
    if mask is not None:
        _require(
            element_of(mask.type) == i1 and shape_of(mask.type) == shape_of(ptr),
            op,
            f"mask must be i1 shaped like the pointers, got {mask.type}",
        )


def _check_memory_props(op: Operation) -> None:
    cache, evict = op.cache.data, op.evict.data
    _require(cache in CACHE_MODIFIERS, op, f"unknown cache modifier '{cache}'")
    _require(evict in EVICTION_POLICIES, op, f"unknown eviction policy '{evict}'")


def _print_memory_access(self, printer: Printer) -> None:
    """tt.load / tt.store syntax: the operands present, memory props, the pointer type."""
    printer.print_string(" ")
    values = [getattr(self, n) for n in self.OPERANDS]
    printer.print_list([v for v in values if v is not None], printer.print_operand)
    _print_memory_props(printer, self)
    printer.print_string(" : ")
    printer.print_attribute(self.ptr.type)


def _parse_memory_access(cls, parser: Parser):
    """Parse what _print_memory_access prints; operand types follow from the pointer
    type (pointers, then blocks of the pointee or i1 per ``OPERANDS``)."""
    start = parser.pos
    names = parser.parse_comma_separated_list(
        parser.Delimiter.NONE, parser.parse_unresolved_operand
    )
    operands_end = parser.pos
    props = _parse_memory_props(parser)
    parser.parse_punctuation(":")
    type_start = parser.pos
    ptr_type = parser.parse_type()
    if not cls.MIN_OPERANDS <= len(names) <= len(cls.OPERANDS):
        parser.raise_error(cls.USAGE, start, operands_end)
    pointee = _pointee(ptr_type)
    if pointee is None:
        parser.raise_error(f"{cls.name}: {ptr_type} is not a pointer type", type_start, parser.pos)
    shape = shape_of(ptr_type)
    by_name = {"ptr": ptr_type, "mask": block_of(i1, shape)}
    types = [by_name.get(n, block_of(pointee, shape)) for n in cls.OPERANDS[: len(names)]]
    return cls(*parser.resolve_operands(names, types, parser.pos), **props)


@irdl_op_definition
class LoadOp(IRDLOperation):
    """``tt.load %ptr[, %mask[, %other]]``: masked-off lanes read ``other`` (undefined
    without it)."""

    name = "tt.load"
    ptr = operand_def()
    mask = opt_operand_def()
    other = opt_operand_def()
    cache = prop_def(StringAttr, default_value=StringAttr("none"))
    evict = prop_def(StringAttr, default_value=StringAttr("normal"))
    is_volatile = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    result = result_def()
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        ptr: SSAValue | Operation,
        mask: SSAValue | Operation | None = None,
        other: SSAValue | Operation | None = None,
        cache: str = "none",
        evict: str = "normal",
    ):
        ptr = SSAValue.get(ptr)
        pointee = _pointee(ptr.type)
        super().__init__(
            operands=[ptr, [mask] if mask else [], [other] if other else []],
            result_types=[block_of(pointee, shape_of(ptr.type))],
            properties={"cache": StringAttr(cache), "evict": StringAttr(evict)},
        )

    def verify_(self) -> None:
        pointee = _pointee(self.ptr.type)
        _require(pointee is not None, self, "loads through pointers")
        _require(
            self.result.type == block_of(pointee, shape_of(self.ptr.type)),
            self,
            f"result must be {block_of(pointee, shape_of(self.ptr.type))}",
        )
        _check_mask(self, self.ptr.type, self.mask)
        _require(self.other is None or self.mask is not None, self, "'other' needs a mask")
        if self.other is not None:
            _require(self.other.type == self.result.type, self, "'other' must have the result type")
        _check_memory_props(self)

    # `tt.load %ptr[, %mask[, %other]] {cache = ..} : ptr-type`
    OPERANDS: ClassVar[tuple[str, ...]] = ("ptr", "mask", "other")
    USAGE: ClassVar[str] = "tt.load takes %ptr, optional %mask and %other"
    MIN_OPERANDS: ClassVar[int] = 1
    print = _print_memory_access
    parse = classmethod(_parse_memory_access)


def _print_memory_props(printer: Printer, op: Operation) -> None:
    parts = []
    if op.cache.data != "none":
        parts.append(f"cache = {op.cache.data}")
    if op.evict.data != "normal":
        parts.append(f"evict = {op.evict.data}")
    if parts:
        printer.print_string(" {" + ", ".join(parts) + "}")


def _parse_memory_props(parser: Parser) -> dict[str, str]:
    props: dict[str, str] = {}
    if parser.parse_optional_punctuation("{"):
        while True:
            key = parser.parse_identifier()
            if key not in ("cache", "evict"):
                parser.raise_error(f"expected 'cache' or 'evict', got '{key}'")
            parser.parse_punctuation("=")
            props[key] = parser.parse_identifier()
            if not parser.parse_optional_punctuation(","):
                break
        parser.parse_punctuation("}")
    return props


@irdl_op_definition
class StoreOp(IRDLOperation):
    """``tt.store %ptr, %value[, %mask]``: masked-off lanes are not written."""

    name = "tt.store"
    ptr = operand_def()
    value = operand_def()
    mask = opt_operand_def()
    cache = prop_def(StringAttr, default_value=StringAttr("none"))
    evict = prop_def(StringAttr, default_value=StringAttr("normal"))

    def __init__(
        self,
        ptr: SSAValue | Operation,
        value: SSAValue | Operation,
        mask: SSAValue | Operation | None = None,
        cache: str = "none",
        evict: str = "normal",
    ):
        super().__init__(
            operands=[ptr, value, [mask] if mask else []],
            properties={"cache": StringAttr(cache), "evict": StringAttr(evict)},
        )

    def verify_(self) -> None:
        pointee = _pointee(self.ptr.type)
        _require(pointee is not None, self, "stores through pointers")
        want = block_of(pointee, shape_of(self.ptr.type))
        _require(self.value.type == want, self, f"value must be {want}, got {self.value.type}")
        _check_mask(self, self.ptr.type, self.mask)
        _check_memory_props(self)

    # `tt.store %ptr, %value[, %mask] {cache = ..} : ptr-type`
    OPERANDS: ClassVar[tuple[str, ...]] = ("ptr", "value", "mask")
    USAGE: ClassVar[str] = "tt.store takes %ptr, %value and an optional %mask"
    MIN_OPERANDS: ClassVar[int] = 2
    print = _print_memory_access
    parse = classmethod(_parse_memory_access)


ATOMIC_RMW_OPS = ("and", "or", "xor", "add", "fadd", "max", "min", "umax", "umin", "exch")
MEM_SEMANTICS = ("relaxed", "acquire", "release", "acq_rel")
MEM_SCOPES = ("gpu", "cta", "sys")


@irdl_op_definition
class AtomicRMWOp(IRDLOperation):
    """``tt.atomic_rmw fadd, relaxed, gpu, %ptr, %val[, %mask]``: returns the old values."""

    name = "tt.atomic_rmw"
    atomic_rmw_op = prop_def(StringAttr)
    sem = prop_def(StringAttr)
    scope = prop_def(StringAttr)
    ptr = operand_def()
    val = operand_def()
    mask = opt_operand_def()
    result = result_def()

    def __init__(self, kind, ptr, val, mask=None, sem: str = "acq_rel", scope: str = "gpu"):
        val = SSAValue.get(val)
        super().__init__(
            operands=[ptr, val, [mask] if mask else []],
            result_types=[val.type],
            properties={
                "atomic_rmw_op": StringAttr(kind),
                "sem": StringAttr(sem),
                "scope": StringAttr(scope),
            },
        )

    def verify_(self) -> None:
        _require(
            self.atomic_rmw_op.data in ATOMIC_RMW_OPS,
            self,
            f"unknown op '{self.atomic_rmw_op.data}'",
        )
        _require(
            self.sem.data in MEM_SEMANTICS, self, f"unknown memory semantics '{self.sem.data}'"
        )
        _require(self.scope.data in MEM_SCOPES, self, f"unknown scope '{self.scope.data}'")
        pointee = _pointee(self.ptr.type)
        _require(pointee is not None, self, "updates through pointers")
        _require(
            self.val.type == block_of(pointee, shape_of(self.ptr.type)),
            self,
            "value type must match the pointers",
        )
        _check_mask(self, self.ptr.type, self.mask)

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.atomic_rmw_op.data}, {self.sem.data}, {self.scope.data}, ")
        operands = [v for v in (self.ptr, self.val, self.mask) if v is not None]
        printer.print_list(operands, printer.print_operand)
        printer.print_string(" : (")
        printer.print_list([v.type for v in operands], printer.print_attribute)
        printer.print_string(") -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> AtomicRMWOp:
        kind = parser.parse_identifier()
        parser.parse_punctuation(",")
        sem = parser.parse_identifier()
        parser.parse_punctuation(",")
        scope = parser.parse_identifier()
        parser.parse_punctuation(",")
        names = parser.parse_comma_separated_list(
            parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        parser.parse_punctuation("->")
        parser.parse_type()
        values = parser.resolve_operands(names, types, parser.pos)
        return cls(kind, values[0], values[1], values[2] if len(values) > 2 else None, sem, scope)


# --------------------------------------------------------------------------
# Compute
# --------------------------------------------------------------------------


def _verify_combiner(op: Operation, n: int, terminator: type[IRDLOperation]) -> None:
    """A reduce's or scan's combiner: two scalars of each operand's element type
    in, ending with ``terminator`` of those element types."""
    block = op.combine_op.block
    elems = [element_of(s.type) for s in op.srcs]
    _require(
        list(block.arg_types) == elems + elems,
        op,
        f"combiner takes {2 * n} scalars ({', '.join(map(str, elems + elems))})",
    )
    term = block.last_op
    _require(
        isinstance(term, terminator) and [v.type for v in term.result] == elems,
        op,
        f"combiner must end with {terminator.name} of the element types",
    )


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """``tt.reduce``: combine each operand block along ``axis`` with the combiner region
    (2n block arguments: the n left then the n right values; ``tt.reduce.return`` n)."""

    name = "tt.reduce"
    srcs = var_operand_def(TensorType)
    axis = prop_def(IntegerAttr[I32])
    res = var_result_def()
    combine_op = region_def("single_block")
    traits = traits_def(Pure())

    def __init__(self, srcs: Sequence[SSAValue], axis: int, combine_op):
        result_types = []
        for s in srcs:
            shape = list(shape_of(s.type))
            del shape[axis]
            result_types.append(block_of(element_of(s.type), shape))
        super().__init__(
            operands=[srcs],
            result_types=[result_types],
            properties={"axis": IntegerAttr(axis, 32)},
            regions=[combine_op],
        )

    def verify_(self) -> None:
        axis = self.axis.value.data
        n = len(self.srcs)
        _require(n >= 1 and len(self.res) == n, self, "one result per operand")
        shape = shape_of(self.srcs[0].type)
        _require(0 <= axis < len(shape), self, f"axis {axis} out of range for {list(shape)}")
        for s, r in zip(self.srcs, self.res):
            _require(shape_of(s.type) == shape, self, "operands must have the same shape")
            want = list(shape)
            del want[axis]
            _require(
                r.type == block_of(element_of(s.type), want),
                self,
                f"result {r.type} must be {block_of(element_of(s.type), want)}",
            )
        _verify_combiner(self, n, ReduceReturnOp)


@irdl_op_definition
class ReduceReturnOp(IRDLOperation):
    """``tt.reduce.return``: the combiner's results."""

    name = "tt.reduce.return"
    result = var_operand_def()
    traits = traits_def(IsTerminator(), HasParent(ReduceOp))
    assembly_format = "$result attr-dict `:` type($result)"

    def __init__(self, *values: SSAValue | Operation):
        super().__init__(operands=[values])


@irdl_op_definition
class ScanOp(IRDLOperation):
    """``tt.scan``: inclusive scan of each operand block along ``axis`` with the
    combiner region (2n block arguments: the n earlier then the n later values;
    ``tt.scan.return`` n); ``reverse`` scans from the end (Triton's
    ``tl.associative_scan``)."""

    name = "tt.scan"
    srcs = var_operand_def(TensorType)
    axis = prop_def(IntegerAttr[I32])
    reverse = prop_def(BoolAttr)
    res = var_result_def()
    combine_op = region_def("single_block")
    traits = traits_def(Pure())

    def __init__(self, srcs: Sequence[SSAValue], axis: int, combine_op, reverse: bool = False):
        super().__init__(
            operands=[srcs],
            result_types=[[s.type for s in srcs]],
            properties={"axis": IntegerAttr(axis, 32), "reverse": BoolAttr.from_bool(reverse)},
            regions=[combine_op],
        )

    def verify_(self) -> None:
        axis = self.axis.value.data
        n = len(self.srcs)
        _require(n >= 1 and len(self.res) == n, self, "one result per operand")
        shape = shape_of(self.srcs[0].type)
        _require(0 <= axis < len(shape), self, f"axis {axis} out of range for {list(shape)}")
        for s, r in zip(self.srcs, self.res):
            _require(shape_of(s.type) == shape, self, "operands must have the same shape")
            _require(r.type == s.type, self, f"result {r.type} must be {s.type}")
        _verify_combiner(self, n, ScanReturnOp)


@irdl_op_definition
class ScanReturnOp(IRDLOperation):
    """``tt.scan.return``: the combiner's results."""

    name = "tt.scan.return"
    result = var_operand_def()
    traits = traits_def(IsTerminator(), HasParent(ScanOp))
    assembly_format = "$result attr-dict `:` type($result)"

    def __init__(self, *values: SSAValue | Operation):
        super().__init__(operands=[values])


INPUT_PRECISIONS = ("tf32", "tf32x3", "ieee")


@irdl_op_definition
class DotOp(IRDLOperation):
    """``tt.dot %a, %b, %c``: ``a @ b + c`` on 2-D (or batched 3-D) blocks."""

    name = "tt.dot"
    D: ClassVar = VarConstraint("D", base(TensorType))
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    c = operand_def(D)
    input_precision = prop_def(StringAttr, default_value=StringAttr("tf32"))
    d = result_def(D)
    traits = traits_def(Pure())
    assembly_format = (
        "$a `,` $b `,` $c (`,` `inputPrecision` `=` $input_precision^)? attr-dict "
        "`:` type($a) `*` type($b) `->` type($d)"
    )

    def __init__(self, a, b, c, input_precision: str = "tf32"):
        super().__init__(
            operands=[a, b, c],
            result_types=[SSAValue.get(c).type],
            properties={"input_precision": StringAttr(input_precision)},
        )

    def verify_(self) -> None:
        a, b, c = (shape_of(v.type) for v in (self.a, self.b, self.c))
        _require(len(a) in (2, 3) and len(a) == len(b) == len(c), self, "operands are 2-D or 3-D")
        _require(
            a[-1] == b[-2] and c[-2:] == (a[-2], b[-1]),
            self,
            f"shapes {list(a)} * {list(b)} -> {list(c)} do not chain",
        )
        _require(self.c.type == self.d.type, self, "accumulator and result types must match")
        _require(self.input_precision.data in INPUT_PRECISIONS, self, "unknown input precision")


@irdl_op_definition
class BitcastOp(IRDLOperation):
    """``tt.bitcast``: reinterpret the bits (same width, same shape)."""

    name = "tt.bitcast"
    src = operand_def()
    result = result_def()
    traits = traits_def(Pure())
    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"

    def __init__(self, src: SSAValue | Operation, element: Attribute):
        src = SSAValue.get(src)
        super().__init__(operands=[src], result_types=[block_of(element, shape_of(src.type))])

    def verify_(self) -> None:
        _require(shape_of(self.src.type) == shape_of(self.result.type), self, "shapes differ")
        a, b = element_of(self.src.type), element_of(self.result.type)
        width = lambda t: t.bitwidth if hasattr(t, "bitwidth") else None  # noqa: E731
        _require(
            isinstance(a, PointerType) or isinstance(b, PointerType) or width(a) == width(b),
            self,
            f"{a} and {b} differ in width",
        )


ROUNDING_MODES = ("rtz", "rtne")


@irdl_op_definition
class FpToFpOp(IRDLOperation):
    """``tt.fp_to_fp``: convert between float formats (fp8 included); ``rounding``
    (rtne by default, or rtz) applies when narrowing."""

    name = "tt.fp_to_fp"
    src = operand_def()
    rounding = prop_def(StringAttr, default_value=StringAttr("rtne"))
    result = result_def()
    traits = traits_def(Pure())
    assembly_format = (
        "$src (`,` `rounding` `=` $rounding^)? attr-dict `:` type($src) `->` type($result)"
    )

    def __init__(self, src: SSAValue | Operation, element: Attribute, rounding: str | None = None):
        src = SSAValue.get(src)
        super().__init__(
            operands=[src],
            result_types=[block_of(element, shape_of(src.type))],
            properties={"rounding": StringAttr(rounding or "rtne")},
        )

    def verify_(self) -> None:
        _require(shape_of(self.src.type) == shape_of(self.result.type), self, "shapes differ")
        a, b = element_of(self.src.type), element_of(self.result.type)
        _require(isinstance(a, AnyFloat) and isinstance(b, AnyFloat), self, "converts floats")
        _require(self.rounding.data in ROUNDING_MODES, self, "rounding is rtz or rtne")


@irdl_op_definition
class ExternElementwiseOp(IRDLOperation):
    """``tt.extern_elementwise``: a device-library function applied per element
    (libdevice's ``__nv_tanhf`` ...)."""

    name = "tt.extern_elementwise"
    srcs = var_operand_def()
    libname = prop_def(StringAttr)
    libpath = prop_def(StringAttr, default_value=StringAttr(""))
    symbol = prop_def(StringAttr)
    pure = prop_def(BoolAttr, default_value=BoolAttr.from_bool(True))
    result = result_def()
    assembly_format = "$srcs attr-dict `:` functional-type($srcs, $result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, srcs, symbol: str, result_type: Attribute, libname: str = "libdevice"):
        super().__init__(
            operands=[srcs],
            result_types=[result_type],
            properties={"libname": StringAttr(libname), "symbol": StringAttr(symbol)},
        )

    def verify_(self) -> None:
        shape = shape_of(self.result.type)
        for s in self.srcs:
            _require(shape_of(s.type) == shape, self, "operands and result must have one shape")


@irdl_op_definition
class PrintOp(IRDLOperation):
    """``tt.print "prefix" : %a, %b``: device printf."""

    name = "tt.print"
    prefix = prop_def(StringAttr)
    hex = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    args = var_operand_def()
    assembly_format = "$prefix attr-dict (`:` $args^ `:` type($args))?"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, prefix: str, args: Sequence[SSAValue] = ()):
        super().__init__(operands=[args], properties={"prefix": StringAttr(prefix)})


@irdl_op_definition
class AssertOp(IRDLOperation):
    """``tt.assert %cond, "message"``: device-side assertion (all lanes must hold)."""

    name = "tt.assert"
    condition = operand_def()
    message = prop_def(StringAttr)
    assembly_format = "$condition `,` $message attr-dict `:` type($condition)"

    def __init__(self, condition: SSAValue | Operation, message: str):
        super().__init__(operands=[condition], properties={"message": StringAttr(message)})

    def verify_(self) -> None:
        _require(element_of(self.condition.type) == i1, self, "condition must be i1")


@irdl_op_definition
class DebugBarrierOp(IRDLOperation):
    """``tt.debug_barrier``: every thread of the program waits here
    (``tl.debug_barrier()``, a CTA barrier). Stores issued before it by any of
    the program's threads come before whatever one thread does after it, as an
    atomic that publishes them (the split-reduction finish, ``split_finish.py``)."""

    name = "tt.debug_barrier"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class GridDependencyWaitOp(IRDLOperation):
    """``tt.grid_dependency_wait``: wait until the kernel launched before this one
    has completed and its memory operations are visible (``tl.extra.cuda.gdc_wait()``,
    PTX ``griddepcontrol.wait``). Under programmatic dependent launch (sm90+) a
    kernel may start while the previous one still runs: what it does before this
    op must not touch memory an earlier kernel writes or reads. Without the launch
    attribute it returns at once (the previous kernel has finished)."""

    name = "tt.grid_dependency_wait"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class GridDependencyLaunchDependentsOp(IRDLOperation):
    """``tt.grid_dependency_launch_dependents``: the kernel launched after this one
    (with programmatic dependent launch) may start once every program of this
    kernel has passed here or exited (``tl.extra.cuda.gdc_launch_dependents()``,
    PTX ``griddepcontrol.launch_dependents``); no memory ordering of its own."""

    name = "tt.grid_dependency_launch_dependents"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


def waits_for_grid_dependency(fn: FuncOp) -> bool:
    """Whether ``fn`` holds a ``tt.grid_dependency_wait``: only such a kernel may be
    launched with programmatic dependent launch."""
    return any(isinstance(op, GridDependencyWaitOp) for op in fn.walk())


def has_device_asserts(fn: FuncOp) -> bool:
    """Whether ``fn`` holds a ``tt.assert``: such a kernel is compiled in Triton's
    debug mode, without which ``tl.device_assert`` compiles to nothing."""
    return any(isinstance(op, AssertOp) for op in fn.walk())


TT = Dialect(
    "tt",
    [
        FuncOp,
        ReturnOp,
        CallOp,
        GetProgramIdOp,
        GetNumProgramsOp,
        MakeRangeOp,
        SplatOp,
        BroadcastOp,
        ExpandDimsOp,
        ReshapeOp,
        MultipleOfOp,
        MaxContiguousOp,
        AddPtrOp,
        LoadOp,
        StoreOp,
        AtomicRMWOp,
        ReduceOp,
        ReduceReturnOp,
        ScanOp,
        ScanReturnOp,
        DotOp,
        BitcastOp,
        FpToFpOp,
        ExternElementwiseOp,
        PrintOp,
        AssertOp,
        DebugBarrierOp,
        GridDependencyWaitOp,
        GridDependencyLaunchDependentsOp,
    ],
    [PointerType],
)
