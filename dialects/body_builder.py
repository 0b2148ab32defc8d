"""Building loop bodies: typed scalar arithmetic for the lowerings and passes.

A :class:`BodyBuilder` appends ops to one body block and picks the right
``arith``/``math`` op for the operand types (``addf`` vs ``addi``, ``cmpf`` vs
``cmpi``, the cast between any two element types), the way Inductor's
``ops.*`` handler hides dtype dispatch from ``lowering.py``. It depends only on
the dialects, so both the aten-to-loop lowerings and loop-level transforms
(``loop-split-reduction``'s finish bodies) build bodies with it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import sympy
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IntegerAttr,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from coil.dialects import dtypes
from coil.dialects import loop as L
from coil.dialects.symbolic import SymInt


class CannotLower(Exception):
    """This op (or these operand types) has no loop-level lowering: call ATen."""


class ExternByDesign(CannotLower):
    """This instance of the op is not a kernel's work and is called through ATen
    by design, with no fallback warning: a copy to another device is a transfer
    (``cudaMemcpy``), which Inductor also leaves to ATen."""


def is_float(t: Attribute) -> bool:
    return isinstance(t, AnyFloat)


def is_bool(t: Attribute) -> bool:
    return t == i1


def check_supported(dtype: Attribute) -> None:
    """The element types loop bodies compute with (unsigned/complex/fp8 go to ATen)."""
    if dtype not in SUPPORTED_DTYPES:
        raise CannotLower(f"dtype {dtypes.name_of(dtype)} is not supported in loop bodies")


# Element types stand for torch dtypes throughout the lowering (no torch import).
SUPPORTED_DTYPES = (
    dtypes.f16,
    dtypes.bf16,
    dtypes.f32,
    dtypes.f64,
    dtypes.i8,
    dtypes.i16,
    dtypes.i32,
    dtypes.i64,
    dtypes.i1,
)


def compute_dtype(dtype: Attribute) -> Attribute:
    """Reduced-precision floats compute in f32 (as Inductor does)."""
    return dtypes.f32 if dtype in (dtypes.f16, dtypes.bf16) else dtype


class BodyBuilder:
    """Appends scalar ops to ``block`` (a loop body)."""

    def __init__(self, block: Block, n_ranges: int, n_reduction: int = 0):
        self.block = block
        self.idx: list[sympy.Symbol] = L.index_symbols(n_ranges, n_reduction)

    def _add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0] if op.results else None

    # ---- leaves ---------------------------------------------------------------

    def load(
        self,
        source: SSAValue,
        index: Sequence[SymInt],
        indirect: Sequence[SSAValue] = (),
        mask: SSAValue | None = None,
    ) -> SSAValue:
        return self._add(L.LoadOp(source, index, indirect, mask))

    def index(self, expr: SymInt, type_: Attribute = i64) -> SSAValue:
        return self._add(L.IndexOp(expr, type_))

    def const(self, value: bool | int | float, type_: Attribute) -> SSAValue:
        if is_float(type_):
            attr = FloatAttr(float(value), type_)
        elif is_bool(type_):
            attr = IntegerAttr(int(bool(value)), i1)
        else:
            if isinstance(value, float):
                if not math.isfinite(value):
                    raise CannotLower(f"{value} is not an integer")
                value = int(value)
            attr = IntegerAttr(int(value), type_)
        return self._add(arith.ConstantOp(attr, type_))

    def const_like(self, value: bool | int | float, like: SSAValue) -> SSAValue:
        return self.const(value, like.type)

    # ---- casts ----------------------------------------------------------------

    def cast(self, v: SSAValue, to: Attribute) -> SSAValue:
        """Convert as torch's ``.to(dtype)`` does (float->int truncates, x->bool is x != 0)."""
        src = v.type
        if src == to:
            return v
        if is_bool(to):
            zero = self.const(0, src)
            return self.cmp("ne", v, zero)
        if is_float(src) and is_float(to):
            if src.bitwidth == to.bitwidth:  # f16 <-> bf16: through f32
                return self.cast(self.cast(v, dtypes.f32), to)
            wider = src.bitwidth < to.bitwidth
            return self._add(arith.ExtFOp(v, to) if wider else arith.TruncFOp(v, to))
        if is_float(to):  # int/bool -> float
            op = arith.UIToFPOp if is_bool(src) else arith.SIToFPOp
            return self._add(op(v, to))
        if is_float(src):  # float -> int
            return self._add(arith.FPToSIOp(v, to))
        # int/bool -> int
        if src.bitwidth < to.bitwidth:
            op = arith.ExtUIOp if is_bool(src) else arith.ExtSIOp
            return self._add(op(v, to))
        return self._add(arith.TruncIOp(v, to))

    # ---- arithmetic (both operands of one type) --------------------------------

    def _binary(self, fop, iop, a: SSAValue, b: SSAValue) -> SSAValue:
        if a.type != b.type:
            raise CannotLower(f"operand types differ: {a.type} vs {b.type}")
        if is_float(a.type):
            return self._add(fop(a, b))
        if iop is None:
            raise CannotLower(f"{fop.name} has no integer form")
        return self._add(iop(a, b))

    def add(self, a, b):
        return self._binary(arith.AddfOp, arith.AddiOp, a, b)

    def sub(self, a, b):
        return self._binary(arith.SubfOp, arith.SubiOp, a, b)

    def mul(self, a, b):
        return self._binary(arith.MulfOp, arith.MuliOp, a, b)

    def truediv(self, a, b):
        return self._binary(arith.DivfOp, None, a, b)

    def divsi(self, a, b):
        """Integer division rounding toward zero (C's, torch's ``trunc`` mode)."""
        return self._add(arith.DivSIOp(a, b))

    def floordivsi(self, a, b):
        """Integer division rounding down (Python's ``//``, torch's ``floor`` mode)."""
        return self._add(arith.FloorDivSIOp(a, b))

    def remsi(self, a, b):
        """Integer remainder with the dividend's sign (C's ``%``, torch.fmod)."""
        return self._add(arith.RemSIOp(a, b))

    def maximum(self, a, b):
        """NaN-propagating maximum (torch.maximum)."""
        return self._binary(arith.MaximumfOp, arith.MaxSIOp, a, b)

    def minimum(self, a, b):
        return self._binary(arith.MinimumfOp, arith.MinSIOp, a, b)

    def neg(self, a):
        if is_float(a.type):
            return self._add(arith.NegfOp(a))
        return self.sub(self.const(0, a.type), a)

    def andi(self, a, b):
        return self._add(arith.AndIOp(a, b))

    def ori(self, a, b):
        return self._add(arith.OrIOp(a, b))

    def xori(self, a, b):
        return self._add(arith.XOrIOp(a, b))

    def logical_not(self, a):
        return self.xori(self.cast(a, i1), self.const(True, i1))

    def select(self, cond, a, b):
        return self._add(arith.SelectOp(cond, a, b))

    _FPRED = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
    _IPRED = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
    _UPRED = {"eq": "eq", "ne": "ne", "lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge"}

    def cmp(self, pred: str, a: SSAValue, b: SSAValue) -> SSAValue:
        """Compare as torch does (NaN != anything; ``ne`` is true for NaN)."""
        if a.type != b.type:
            raise CannotLower(f"compared types differ: {a.type} vs {b.type}")
        if is_float(a.type):
            return self._add(arith.CmpfOp(a, b, self._FPRED[pred]))
        preds = self._IPRED if not is_bool(a.type) else self._UPRED
        return self._add(arith.CmpiOp(a, b, preds[pred]))

    def isnan(self, a):
        return self._add(arith.CmpfOp(a, a, "uno"))

    def math(self, name: str, *args: SSAValue) -> SSAValue:
        """A ``math`` dialect op by mnemonic (``exp``, ``log``, ``tanh``, ``erf`` ...)."""
        op_class = MATH_OPS[name]
        return self._add(op_class(*args))

    def yield_(self, *values: SSAValue) -> None:
        self.block.add_op(L.YieldOp(*values))


MATH_OPS = {op.name.split(".", 1)[1]: op for op in mathd.Math.operations}
"""``math`` dialect ops by mnemonic."""

__all__ = [
    "BodyBuilder",
    "CannotLower",
    "check_supported",
    "compute_dtype",
    "is_bool",
    "is_float",
]
