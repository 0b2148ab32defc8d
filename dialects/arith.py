"""MLIR's ``arith`` with the elementwise tensor forms xDSL 0.74 leaves out.

In MLIR every ``arith`` op works elementwise on tensors, and Triton's TTIR
relies on that: ``arith.cmpi slt, %x, %n : tensor<1024xi32>`` gives a
``tensor<1024xi1>`` mask, ``arith.select`` picks per element, ``arith.sitofp``
converts a whole block. xDSL 0.74 accepts tensors for most arith ops but types
``cmpi``/``cmpf`` results as a scalar ``i1``, wants a scalar ``i1`` condition in
``select`` and scalar operands in the integer casts. This module re-declares
those ops under their own names with MLIR's constraints (scalar *or* tensor;
a comparison of tensors yields a tensor of ``i1`` of the same shape) and builds
an ``Arith`` dialect from xDSL's with them swapped in. Scalar IR is unchanged:
each widened op subclasses xDSL's, prints and parses the same text, and
``isinstance(op, xdsl.dialects.arith.CmpiOp)`` still holds.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects import arith as xarith
from xdsl.dialects.arith import (
    CmpiHasCanonicalizationPatterns,
    FastMathFlagsAttr,
    SelectHasCanonicalizationPatterns,
)
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
    i1,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.type import get_element_type_or_self

bool_like = xarith.boolLike
int_like = xarith.signlessIntegerLike
float_like = xarith.floatingPointLike


def like(template: Attribute, element: Attribute) -> Attribute:
    """``element``, or a tensor of ``element`` shaped like ``template`` when it is one."""
    if isinstance(template, TensorType):
        return TensorType(element, template.get_shape())
    return element


def splat_value(attr: DenseIntOrFPElementsAttr) -> int | float | None:
    """The one value of a dense attribute whose elements are all the same, else None.

    Compares the elements' bytes, never unpacking them: block constants
    (``dense<0.0> : tensor<1024xf32>``) hold every element, and unpacking each
    one was most of the time ``-t triton`` took on a large graph."""
    data = attr.data.data
    count = len(attr)
    if count == 0 or len(data) % count:
        return None
    size = len(data) // count
    if data != data[:size] * count:
        return None
    return attr.get_element_type().unpack(data[:size], 1)[0]


def _same_shape(op: Operation, a: Attribute, b: Attribute) -> None:
    shape_a = a.get_shape() if isinstance(a, TensorType) else None
    shape_b = b.get_shape() if isinstance(b, TensorType) else None
    if shape_a != shape_b:
        raise VerifyException(f"{op.name}: operand and result shapes differ ({a} vs {b})")


def _init_comparison(op, lhs, rhs, predicate: int | str, mnemonics: list[str]) -> None:
    lhs, rhs = SSAValue.get(lhs), SSAValue.get(rhs)
    if isinstance(predicate, str):
        predicate = mnemonics.index(predicate)
    IRDLOperation.__init__(
        op,
        operands=[lhs, rhs],
        result_types=[like(lhs.type, i1)],
        properties={"predicate": IntegerAttr(predicate, 64)},
    )


@irdl_op_definition
class CmpiOp(xarith.CmpiOp):
    """``arith.cmpi``: integer comparison, elementwise on tensors (result ``i1``-like)."""

    name = "arith.cmpi"
    predicate = prop_def(IntegerAttr)
    lhs = operand_def(int_like)
    rhs = operand_def(int_like)
    result = result_def(bool_like)
    traits = traits_def(CmpiHasCanonicalizationPatterns(), Pure())

    def __init__(self, operand1: Operation | SSAValue, operand2: Operation | SSAValue, arg):
        _init_comparison(self, operand1, operand2, arg, xarith.CMPI_COMPARISON_OPERATIONS)

    def verify_(self) -> None:
        _same_shape(self, self.lhs.type, self.result.type)


@irdl_op_definition
class CmpfOp(xarith.CmpfOp):
    """``arith.cmpf``: float comparison, elementwise on tensors (result ``i1``-like)."""

    name = "arith.cmpf"
    predicate = prop_def(IntegerAttr)
    lhs = operand_def(float_like)
    rhs = operand_def(float_like)
    fastmath = prop_def(FastMathFlagsAttr, default_value=FastMathFlagsAttr("none"))
    result = result_def(bool_like)
    traits = traits_def(Pure())

    def __init__(self, operand1, operand2, arg, fastmath: FastMathFlagsAttr | None = None):
        _init_comparison(self, operand1, operand2, arg, xarith.CMPF_COMPARISON_OPERATIONS)
        if fastmath is not None:
            self.fastmath = fastmath

    def verify_(self) -> None:
        _same_shape(self, self.lhs.type, self.result.type)


@irdl_op_definition
class SelectOp(xarith.SelectOp):
    """``arith.select``: per element when the condition is a tensor of ``i1``."""

    name = "arith.select"
    _T: ClassVar = VarConstraint("_T", AnyAttr())
    cond = operand_def(bool_like)
    lhs = operand_def(_T)
    rhs = operand_def(_T)
    result = result_def(_T)
    traits = traits_def(Pure(), SelectHasCanonicalizationPatterns())
    assembly_format = None

    # MLIR's syntax: `: T` for a scalar condition, `: tensor<..xi1>, T` otherwise.
    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.cond, self.lhs, self.rhs], printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        if self.cond.type != i1:
            printer.print_attribute(self.cond.type)
            printer.print_string(", ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> SelectOp:
        names = parser.parse_comma_separated_list(
            parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        if len(names) != 3 or len(types) not in (1, 2):
            parser.raise_error("arith.select expects `%cond, %a, %b : [cond type,] type`")
        cond_type = types[0] if len(types) == 2 else i1
        cond, lhs, rhs = parser.resolve_operands(
            names, [cond_type, types[-1], types[-1]], parser.pos
        )
        op = cls(cond, lhs, rhs)
        op.attributes.update(attrs)
        return op

    def verify_(self) -> None:
        if isinstance(self.cond.type, TensorType):
            _same_shape(self, self.cond.type, self.result.type)


def _cast(base: type, mnemonic: str, src, dst, doc: str, width_check=None) -> type:
    """An elementwise cast op named ``arith.<mnemonic>`` (scalar or tensor)."""

    def verify_(self) -> None:
        _same_shape(self, self.input.type, self.result.type)
        if width_check is not None:
            a = get_element_type_or_self(self.input.type)
            b = get_element_type_or_self(self.result.type)
            if not width_check(a.width.data, b.width.data):
                raise VerifyException(f"{self.name}: invalid bit widths {a} -> {b}")

    def init(self, op: SSAValue | Operation, target_type: Attribute):
        IRDLOperation.__init__(self, operands=[op], result_types=[target_type])

    cls = type(
        base.__name__,
        (base,),
        {
            "__doc__": doc,
            "__module__": __name__,
            "name": f"arith.{mnemonic}",
            "input": operand_def(src),
            "result": result_def(dst),
            "traits": traits_def(Pure()),
            "print": Operation.print,
            "parse": Operation.__dict__["parse"],
            "verify_": verify_,
            "__init__": init,
        },
    )
    return irdl_op_definition(cls)


_int = xarith.container_of(IntegerType)
_float = xarith.container_of(xarith.AnyFloatConstr)

SIToFPOp = _cast(xarith.SIToFPOp, "sitofp", _int, _float, "``arith.sitofp``, elementwise.")
UIToFPOp = _cast(xarith.UIToFPOp, "uitofp", _int, _float, "``arith.uitofp``, elementwise.")
FPToSIOp = _cast(xarith.FPToSIOp, "fptosi", _float, _int, "``arith.fptosi``, elementwise.")
FPToUIOp = _cast(xarith.FPToUIOp, "fptoui", _float, _int, "``arith.fptoui``, elementwise.")
ExtSIOp = _cast(
    xarith.ExtSIOp, "extsi", _int, _int, "``arith.extsi``, elementwise.", lambda a, b: b > a
)
ExtUIOp = _cast(
    xarith.ExtUIOp, "extui", _int, _int, "``arith.extui``, elementwise.", lambda a, b: b > a
)
TruncIOp = _cast(
    xarith.TruncIOp, "trunci", _int, _int, "``arith.trunci``, elementwise.", lambda a, b: b < a
)

WIDENED: tuple[type, ...] = (
    CmpiOp,
    CmpfOp,
    SelectOp,
    SIToFPOp,
    UIToFPOp,
    FPToSIOp,
    FPToUIOp,
    ExtSIOp,
    ExtUIOp,
    TruncIOp,
)

_by_name = {op.name: op for op in WIDENED}

Arith = Dialect(
    "arith",
    [_by_name.get(op.name, op) for op in xarith.Arith.operations],
    list(xarith.Arith.attributes),
    list(xarith.Arith._interfaces),
)

__all__ = ["Arith", "WIDENED", "like", "AnyFloat"]
