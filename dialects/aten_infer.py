"""Result types of aten ops from torch's shape and dtype rules, without torch.

The aten verifier checks each op's result types against what torch would give
for its operand types; passes that build ops can ask for them
(:func:`coil.dialects.aten.infer_result_types`, beside the op classes it looks
up). The rules are ATen's, written per op family so verification stays cheap
and needs no torch import:

* pointwise: operands broadcast (right-aligned; a size-1 dim takes the other
  size) and the dtype is torch's type promotion (``dtypes.result_type``:
  dimensioned tensors, then 0-d tensors, then Python scalars), turned to the
  default float for the ops that compute in float (``exp``, true ``div`` ...)
  or to bool for comparisons and tests;
* matmuls: ``mm`` ``[n, k] x [k, m] -> [n, m]``, ``bmm`` with a batch, ``addmm``
  with a broadcast bias; both operands of one dtype;
* reductions: the reduced dims dropped (or kept as 1), ``sum``/``prod`` of
  integers accumulate in int64, ``argmax`` gives int64, ``any``/``all`` bool;
* views and copies: ``view``/``reshape`` (``-1`` resolved, the element count
  kept), ``permute``, ``t``/``transpose``, ``unsqueeze``, ``squeeze``,
  ``expand``, ``select``, ``_to_copy``/``clone``;
* collectives (c10d functional): the input's type, dim 0 times ``group_size``
  for an all-gather, divided by it for a reduce-scatter, the sum of the output
  splits for an all-to-all.

Only sizes and the element type are compared (strides and devices are
eager's layout choices, which the importer records). An op with no rule, an
operand that is not a tensor type, or a size that cannot be decided (two
different symbols broadcast against each other) is never rejected for want
of an answer: an unknown size is ``None`` and matches anything.

:func:`coil.frontend.meta.meta_result_types` gives the types from the op's
own meta function under FakeTensorMode for any op (it imports torch); the
tests check these rules against it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sympy
from xdsl.dialects import builtin
from xdsl.dialects.builtin import FloatAttr, IntegerAttr
from xdsl.ir import Attribute

from coil.dialects import dtypes
from coil.dialects.symbolic import (
    ExprAttr,
    ShapeAttr,
    SymInt,
    format_expr,
    sym_eq,
    to_expr,
    to_symint,
)
from coil.intmath import numel

Dim = SymInt | None
"""A size: an int, a sympy expression, or None where it cannot be decided."""


class IncompatibleOperands(ValueError):
    """The operands themselves break the op's rule (mm of [4, 8] by [3, 5])."""


@dataclass(frozen=True)
class Inferred:
    """One result: sizes (None: unknown rank) and element type (None: unknown)."""

    shape: tuple[Dim, ...] | None
    dtype: Attribute | None

    def describe(self) -> str:
        dims = "?" if self.shape is None else ", ".join(_dim_text(d) for d in self.shape)
        dtype = "?" if self.dtype is None else str(self.dtype)
        return f"!aten.tensor<[{dims}], {dtype}>"

    def matches(self, t: Attribute) -> bool:
        shape = getattr(t, "shape", None)
        if shape is None:
            return True  # not a tensor type: the base verifier's business
        if self.dtype is not None and t.element_type != self.dtype:  # type: ignore[attr-defined]
            return False
        if self.shape is None:
            return True
        return len(shape) == len(self.shape) and all(
            want is None or _may_be_equal(want, got) for want, got in zip(self.shape, shape)
        )


def _may_be_equal(want: SymInt, got: SymInt) -> bool:
    """Sizes a result type may have: provably equal, or one the tracer may know
    equal from a guard it did not substitute. A number against an expression:
    a [s0, s0] input viewed as [256] has FakeTensor size s0**2 once s0 == 16 is
    guarded. A symbol against a compound expression of other symbols: torch
    2.11's compiled autograd views to [s62, s57, 64] under the guard
    s57 == 16 // s62 and types the result [s62, 16 // s62, 64]. Either is
    accepted unless provably different. Two different numbers, two different
    symbols (torch turns a guard s0 == s1 into a replacement), two different
    compound expressions, or a symbol against an expression of itself
    (s0 // 2) are a contradiction."""
    if same_size(want, got):
        return True
    a, b = to_expr(want), to_expr(got)
    if a.is_number and b.is_number:
        return False
    if a.is_number or b.is_number:
        return not _known_different(want, got)
    if a.is_Symbol == b.is_Symbol:
        return False
    symbol, other = (a, b) if a.is_Symbol else (b, a)
    return symbol not in other.free_symbols and not _known_different(want, got)


def _dim_text(d: Dim) -> str:
    if d is None:
        return "?"
    try:
        return format_expr(d)
    except ValueError:  # no textual form (a float-valued expression)
        return str(d)


def same_size(a: SymInt, b: SymInt) -> bool:
    """Provably equal sizes (ints compared directly; expressions expanded, exact
    floor divisions as their quotients: ``symbolic.sym_eq``)."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return sym_eq(a, b)


def _known_different(a: SymInt, b: SymInt) -> bool:
    """Provably unequal sizes: backed size symbols (``s<k>``) are >= 2 (torch
    specializes 0 and 1), any other symbol >= 0."""
    diff = sympy.expand(to_expr(a) - to_expr(b))
    if diff.is_number:
        return diff != 0
    shifted = sympy.expand(
        diff.xreplace({s: s + 2 for s in diff.free_symbols if s.name[:1] == "s"})
    )
    return bool(shifted.is_positive) or bool(shifted.is_negative)


# --------------------------------------------------------------------------
# The call an op makes: operand types and stored arguments, by schema name
# --------------------------------------------------------------------------


@dataclass
class Call:
    """What a rule reads: the operand types and the stored (or default)
    argument attributes of one op, by schema argument name."""

    name: str
    operands: dict[str, list[Attribute | None]]
    attrs: dict[str, Attribute]

    @staticmethod
    def of(op: Any) -> Call:
        schema = op.schema()
        operands = {
            name: [None if v is None else v.type for v in values]
            for name, values in op.operand_groups().items()
        }
        attrs = {spec.name: op.arg_attr(spec.name) for spec in schema.props}
        return Call(op.name, operands, attrs)

    def tensor(self, name: str) -> Attribute | None:
        values = self.operands.get(name) or []
        return values[0] if values else None

    def int_arg(self, name: str) -> SymInt | None:
        attr = self.attrs.get(name)
        return attr.symint if isinstance(attr, ExprAttr) else None

    def ints_arg(self, name: str) -> list[SymInt] | None:
        attr = self.attrs.get(name)
        if isinstance(attr, ShapeAttr):
            return list(attr.symints)
        if isinstance(attr, ExprAttr):  # int[1] given as one int
            return [attr.symint]
        return None

    def bool_arg(self, name: str) -> bool:
        attr = self.attrs.get(name)
        return isinstance(attr, IntegerAttr) and bool(attr.value.data)

    def dtype_arg(self, name: str) -> Attribute | None:
        attr = self.attrs.get(name)
        return attr if attr is not None and dtypes.is_element_type(attr) else None


def _is_tensor(t: Attribute | None) -> bool:
    return t is not None and hasattr(t, "shape") and hasattr(t, "element_type")


def _promotion_entry(t: Attribute | None) -> tuple[str, Attribute] | None:
    """A pointwise operand's (category, element type) for dtypes.result_type."""
    if t is None:
        return None
    if _is_tensor(t):
        return ("zerodim" if len(t.shape) == 0 else "tensor", t.element_type)  # type: ignore[attr-defined]
    # A wrapped number: an int/SymInt (i64, index), a float (f64) or a bool (i1).
    if t == builtin.i1:
        return ("scalar", builtin.i1)
    if isinstance(t, builtin.IntegerType | builtin.IndexType):
        return ("scalar", builtin.i64)
    if isinstance(t, builtin.Float64Type):
        return ("scalar", builtin.f64)
    return None


def _scalar_attr_entry(attr: Attribute | None) -> tuple[str, Attribute] | None:
    if isinstance(attr, IntegerAttr) and attr.type == builtin.i1:
        return ("scalar", builtin.i1)
    if isinstance(attr, ExprAttr):
        return ("scalar", builtin.i64)
    if isinstance(attr, FloatAttr):
        return ("scalar", builtin.f64)
    return None


def broadcast(shapes: Sequence[Sequence[SymInt]]) -> tuple[Dim, ...]:
    """torch's broadcast of ``shapes`` (None where two symbolic sizes differ)."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[Dim] = []
    for k in range(rank):
        dims = [s[len(s) - rank + k] for s in shapes if len(s) - rank + k >= 0]
        size: Dim = 1
        for d in dims:
            if same_size(d, 1):
                continue
            if size is None:
                continue
            if same_size(size, 1):
                size = d
            elif not same_size(size, d):
                if _known_different(size, d):
                    raise IncompatibleOperands(
                        f"shapes {_shapes_text(shapes)} do not broadcast "
                        f"({_dim_text(size)} vs {_dim_text(d)})"
                    )
                size = None
        out.append(size)
    return tuple(out)


def _shapes_text(shapes: Sequence[Sequence[SymInt]]) -> str:
    return " and ".join("[" + ", ".join(_dim_text(d) for d in s) + "]" for s in shapes)


# --------------------------------------------------------------------------
# Families
# --------------------------------------------------------------------------

Rule = Callable[[Call], list[Inferred] | None]
RULES: dict[str, Rule] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    def wrap(fn: Rule) -> Rule:
        for name in names:
            assert name not in RULES, name
            RULES[name] = fn
        return fn

    return wrap


def _pointwise(operand_names: Sequence[str], result: str) -> Rule:
    """``result``: "promote" (torch's type promotion), "float" (promotion, then
    integers and bool to the default float), "bool_to_long" (promotion, bool to
    int64, as pow), "bool", "same" (the first operand's dtype) or "real" (the
    same, but a complex operand's real type: abs)."""

    def infer(call: Call) -> list[Inferred] | None:
        entries, shapes = [], []
        for name in operand_names:
            t = call.tensor(name) if name in call.operands else None
            entry = (
                _promotion_entry(t)
                if name in call.operands
                else _scalar_attr_entry(call.attrs.get(name))
            )
            if entry is None:
                return None
            entries.append(entry)
            if _is_tensor(t):
                shapes.append(t.shape)  # type: ignore[union-attr]
        if not shapes:
            return None
        shape = broadcast(shapes)
        if result == "bool":
            return [Inferred(shape, builtin.i1)]
        if result in ("same", "real"):
            dtype = entries[0][1] if entries[0][0] != "scalar" else None
            if result == "real" and dtype is not None and dtypes.is_complex(dtype):
                dtype = dtype.element_type  # type: ignore[attr-defined]
            return [Inferred(shape, dtype)]
        try:
            dtype = dtypes.result_type(entries)
        except dtypes.UnsupportedDtype:
            return [Inferred(shape, None)]
        if result == "float" and not (dtypes.is_float(dtype) or dtypes.is_complex(dtype)):
            dtype = dtypes.DEFAULT_FLOAT
        if result == "bool_to_long" and dtypes.is_bool(dtype):
            dtype = builtin.i64
        return [Inferred(shape, dtype)]

    return infer


_UNARY_SAME = """relu neg clone alias detach lift_fresh_copy bitwise_not sign floor ceil round
    trunc hardtanh leaky_relu elu gelu silu""".split()
_UNARY_FLOAT = """exp expm1 log log2 log10 log1p sin cos tan asin acos atan sinh cosh tanh asinh
    acosh atanh sqrt rsqrt sigmoid erf reciprocal""".split()
_UNARY_BOOL = "isnan isinf logical_not".split()
_BINARY_PROMOTE = """add.Tensor add.Scalar sub.Tensor sub.Scalar mul.Tensor mul.Scalar
    maximum.default minimum.default remainder.Tensor remainder.Scalar fmod.Tensor fmod.Scalar
    bitwise_and.Tensor bitwise_and.Scalar bitwise_or.Tensor bitwise_or.Scalar
    bitwise_xor.Tensor bitwise_xor.Scalar""".split()
_COMPARISONS = """eq.Tensor eq.Scalar ne.Tensor ne.Scalar lt.Tensor lt.Scalar le.Tensor le.Scalar
    gt.Tensor gt.Scalar ge.Tensor ge.Scalar logical_and.default logical_or.default
    logical_xor.default""".split()

for _op in _UNARY_SAME:
    rule(f"aten.{_op}.default")(_pointwise(["self"], "same"))
rule("aten.abs.default")(_pointwise(["self"], "real"))  # |a+bi| is real
for _op in _UNARY_FLOAT:
    rule(f"aten.{_op}.default")(_pointwise(["self"], "float"))
for _op in _UNARY_BOOL:
    rule(f"aten.{_op}.default")(_pointwise(["self"], "bool"))
for _op in _BINARY_PROMOTE:
    rule(f"aten.{_op}")(_pointwise(["self", "other"], "promote"))
for _op in _COMPARISONS:
    rule(f"aten.{_op}")(_pointwise(["self", "other"], "bool"))
rule("aten.pow.Tensor_Tensor", "aten.pow.Tensor_Scalar")(
    _pointwise(["self", "exponent"], "bool_to_long")
)
rule("aten.atan2.default")(_pointwise(["self", "other"], "float"))
rule("aten.div.Tensor", "aten.div.Scalar")(_pointwise(["self", "other"], "float"))
rule("aten.div.Tensor_mode", "aten.div.Scalar_mode")(_pointwise(["self", "other"], "promote"))


@rule("aten.where.self")
def _where(call: Call) -> list[Inferred] | None:
    cond = call.tensor("condition")
    inferred = _pointwise(["self", "other"], "promote")(call)
    if inferred is None or not _is_tensor(cond):
        return None
    shapes = [cond.shape]  # type: ignore[union-attr]
    shapes += [t.shape for t in (call.tensor("self"), call.tensor("other")) if _is_tensor(t)]  # type: ignore[union-attr]
    return [Inferred(broadcast(shapes), inferred[0].dtype)]


# ---- matmuls -------------------------------------------------------------------------


def _shape_text(t: Attribute) -> str:
    return "[" + ", ".join(_dim_text(d) for d in t.shape) + "]"  # type: ignore[attr-defined]


def _matmul(call: Call, a_name: str, b_name: str, rank: int) -> tuple[Inferred, Attribute] | None:
    a, b = call.tensor(a_name), call.tensor(b_name)
    if not (_is_tensor(a) and _is_tensor(b)):
        return None
    name = call.name
    for t in (a, b):
        if len(t.shape) != rank:  # type: ignore[union-attr]
            raise IncompatibleOperands(f"{name} takes {rank}-d tensors, got {_shape_text(t)}")
    ka, kb = a.shape[-1], b.shape[-2]  # type: ignore[union-attr]
    if _known_different(ka, kb):
        raise IncompatibleOperands(
            f"cannot multiply {_shape_text(a)} by {_shape_text(b)} "
            f"({_dim_text(ka)} != {_dim_text(kb)})"
        )
    if a.element_type != b.element_type:  # type: ignore[union-attr]
        raise IncompatibleOperands(
            f"operands must have one dtype, got {a.element_type} and {b.element_type}"  # type: ignore[union-attr]
        )
    shape: list[Dim] = [a.shape[-2], b.shape[-1]]  # type: ignore[union-attr]
    if rank == 3:
        (batch,) = broadcast([[a.shape[0]], [b.shape[0]]])  # type: ignore[union-attr]
        if not same_size(a.shape[0], b.shape[0]) and batch is not None:  # type: ignore[union-attr]
            raise IncompatibleOperands(f"batch sizes differ: {_shape_text(a)}, {_shape_text(b)}")
        shape.insert(0, a.shape[0])  # type: ignore[union-attr]
    return Inferred(tuple(shape), a.element_type), a.element_type  # type: ignore[union-attr]


@rule("aten.mm.default")
def _mm(call: Call) -> list[Inferred] | None:
    out = _matmul(call, "self", "mat2", 2)
    return None if out is None else [out[0]]


@rule("aten.bmm.default")
def _bmm(call: Call) -> list[Inferred] | None:
    out = _matmul(call, "self", "mat2", 3)
    return None if out is None else [out[0]]


@rule("aten.addmm.default")
def _addmm(call: Call) -> list[Inferred] | None:
    out = _matmul(call, "mat1", "mat2", 2)
    bias = call.tensor("self")
    if out is None or not _is_tensor(bias):
        return None
    result, dtype = out
    shape = broadcast([bias.shape, result.shape])  # type: ignore[union-attr, list-item]
    if len(shape) != 2:
        raise IncompatibleOperands(f"bias {_shape_text(bias)} does not broadcast to 2-d")
    if bias.element_type != dtype:  # type: ignore[union-attr]
        raise IncompatibleOperands(f"bias dtype {bias.element_type} differs from {dtype}")  # type: ignore[union-attr]
    return [Inferred(result.shape, dtype)]


# ---- reductions -----------------------------------------------------------------------


def _norm_dim(d: SymInt, rank: int, name: str) -> int:
    if not isinstance(d, int):
        raise IncompatibleOperands(f"{name}: a symbolic dim {format_expr(d)}")
    lo, hi = (-1, 0) if rank == 0 else (-rank, rank - 1)
    if not lo <= d <= hi:
        raise IncompatibleOperands(f"{name}: dim {d} out of range for a {rank}-d tensor")
    return d % max(rank, 1)


def _reduced(call: Call, dims: list[SymInt] | None, keepdim: bool) -> tuple[Dim, ...] | None:
    x = call.tensor("self")
    if not _is_tensor(x):
        return None
    shape, rank = list(x.shape), len(x.shape)  # type: ignore[union-attr]
    picked = set(range(rank)) if not dims else {_norm_dim(d, rank, call.name) for d in dims}
    if rank == 0:
        return ()
    return tuple(
        (1 if keepdim else None) if k in picked else s
        for k, s in enumerate(shape)
        if keepdim or k not in picked
    )


def _accumulated(x: Attribute, dtype: Attribute | None) -> Attribute:
    if dtype is not None:
        return dtype
    t = x.element_type  # type: ignore[attr-defined]
    return builtin.i64 if dtypes.is_bool(t) or dtypes.is_integer(t) else t


@rule("aten.sum.dim_IntList", "aten.sum.default", "aten.prod.dim_int", "aten.prod.default")
def _sum(call: Call) -> list[Inferred] | None:
    x = call.tensor("self")
    if not _is_tensor(x):
        return None
    if call.name == "aten.prod.dim_int":
        dims: list[SymInt] | None = [call.int_arg("dim")]  # type: ignore[list-item]
    else:
        dims = call.ints_arg("dim")
    shape = _reduced(call, dims, call.bool_arg("keepdim"))
    return [Inferred(shape, _accumulated(x, call.dtype_arg("dtype")))]


@rule("aten.mean.dim", "aten.mean.default")
def _mean(call: Call) -> list[Inferred] | None:
    x = call.tensor("self")
    if not _is_tensor(x):
        return None
    shape = _reduced(call, call.ints_arg("dim"), call.bool_arg("keepdim"))
    return [Inferred(shape, call.dtype_arg("dtype") or x.element_type)]  # type: ignore[union-attr]


@rule("aten.amax.default", "aten.amin.default")
def _amax(call: Call) -> list[Inferred] | None:
    x = call.tensor("self")
    if not _is_tensor(x):
        return None
    shape = _reduced(call, call.ints_arg("dim"), call.bool_arg("keepdim"))
    return [Inferred(shape, x.element_type)]  # type: ignore[union-attr]


@rule("aten.argmax.default", "aten.argmin.default")
def _argmax(call: Call) -> list[Inferred] | None:
    dim = call.int_arg("dim")
    shape = _reduced(call, None if dim is None else [dim], call.bool_arg("keepdim"))
    return [Inferred(shape, builtin.i64)]


@rule("aten.max.dim", "aten.min.dim")
def _max_dim(call: Call) -> list[Inferred] | None:
    x = call.tensor("self")
    dim = call.int_arg("dim")
    if not _is_tensor(x) or dim is None:
        return None
    shape = _reduced(call, [dim], call.bool_arg("keepdim"))
    return [Inferred(shape, x.element_type), Inferred(shape, builtin.i64)]  # type: ignore[union-attr]


@rule("aten.any.dim", "aten.any.default")
def _any(call: Call) -> list[Inferred] | None:
    x = call.tensor("self")
    if not _is_tensor(x):
        return None
    dim = call.int_arg("dim")
    shape = _reduced(call, None if dim is None else [dim], call.bool_arg("keepdim"))
    uint8 = x.element_type == dtypes.to_mlir("uint8")  # type: ignore[union-attr]
    return [Inferred(shape, x.element_type if uint8 else builtin.i1)]  # type: ignore[union-attr]


# ---- views and copies ------------------------------------------------------------------


def _exact_quotient(a: sympy.Expr, b: sympy.Expr) -> Dim:
    """``a / b`` when it is an integer polynomial in the size symbols, else None
    (torch would write a floordiv, which this torch-free rule leaves open)."""
    if b == 0:
        return None
    q = sympy.cancel(a / b)
    if q.is_number:
        return int(q) if q.is_Integer else None
    num, den = sympy.fraction(q)
    if den != 1 or not all(c.is_Integer for c in sympy.Poly(num, *num.free_symbols).coeffs()):
        return None
    return to_symint(sympy.expand(num))


@rule("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default")
def _view(call: Call) -> list[Inferred] | None:
    x = call.tensor("self")
    size = call.ints_arg("size") if "size" in call.attrs else call.ints_arg("shape")
    if not _is_tensor(x) or size is None:
        return None
    count = numel(map(to_expr, x.shape))  # type: ignore[union-attr]
    holes = [k for k, d in enumerate(size) if isinstance(d, int) and d == -1]
    if len(holes) > 1:
        raise IncompatibleOperands(f"{call.name}: more than one -1 in size")
    shape: list[Dim] = list(size)
    if holes:
        rest = numel(to_expr(d) for k, d in enumerate(size) if k != holes[0])
        shape[holes[0]] = _exact_quotient(count, rest)
    elif _known_different(count, numel(map(to_expr, size))):
        raise IncompatibleOperands(
            f"cannot view {_shape_text(x)} ({format_expr(count)} elements) as size "
            f"[{', '.join(_dim_text(d) for d in size)}]"
        )
    return [Inferred(tuple(shape), x.element_type)]  # type: ignore[union-attr]


@rule("aten.permute.default")
def _permute(call: Call) -> list[Inferred] | None:
    x, dims = call.tensor("self"), call.ints_arg("dims")
    if not _is_tensor(x) or dims is None:
        return None
    rank = len(x.shape)  # type: ignore[union-attr]
    if len(dims) != rank:
        raise IncompatibleOperands(f"permute of a {rank}-d tensor by {len(dims)} dims")
    norm = [_norm_dim(d, rank, call.name) for d in dims]
    if sorted(norm) != list(range(rank)):
        raise IncompatibleOperands(f"dims {dims} are not a permutation")
    return [Inferred(tuple(x.shape[d] for d in norm), x.element_type)]  # type: ignore[union-attr]


@rule("aten.t.default", "aten.transpose.int")
def _transpose(call: Call) -> list[Inferred] | None:
    x = call.tensor("self")
    if not _is_tensor(x):
        return None
    shape, rank = list(x.shape), len(x.shape)  # type: ignore[union-attr]
    if call.name == "aten.t.default":
        if rank > 2:
            raise IncompatibleOperands(f"t() of a {rank}-d tensor")
        return [Inferred(tuple(reversed(shape)), x.element_type)]  # type: ignore[union-attr]
    d0, d1 = call.int_arg("dim0"), call.int_arg("dim1")
    if d0 is None or d1 is None:
        return None
    a, b = _norm_dim(d0, rank, call.name), _norm_dim(d1, rank, call.name)
    if rank:
        shape[a], shape[b] = shape[b], shape[a]
    return [Inferred(tuple(shape), x.element_type)]  # type: ignore[union-attr]


@rule("aten.unsqueeze.default")
def _unsqueeze(call: Call) -> list[Inferred] | None:
    x, dim = call.tensor("self"), call.int_arg("dim")
    if not _is_tensor(x) or dim is None:
        return None
    shape = list(x.shape)  # type: ignore[union-attr]
    k = _norm_dim(dim, len(shape) + 1, call.name)
    shape.insert(k, 1)
    return [Inferred(tuple(shape), x.element_type)]  # type: ignore[union-attr]


@rule("aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default")
def _squeeze(call: Call) -> list[Inferred] | None:
    x = call.tensor("self")
    if not _is_tensor(x):
        return None
    shape, rank = list(x.shape), len(x.shape)  # type: ignore[union-attr]
    if call.name == "aten.squeeze.default":
        dims = set(range(rank))
    else:
        given = call.ints_arg("dim") if call.name == "aten.squeeze.dims" else [call.int_arg("dim")]
        if given is None or None in given:
            return None
        dims = {_norm_dim(d, rank, call.name) for d in given}  # type: ignore[arg-type]
    out: list[Dim] = []
    for k, s in enumerate(shape):
        if k in dims and same_size(s, 1):
            continue
        if k in dims and not isinstance(s, int):
            return [Inferred(None, x.element_type)]  # type: ignore[union-attr]  (size 1 at run time?)
        out.append(s)
    return [Inferred(tuple(out), x.element_type)]  # type: ignore[union-attr]


@rule("aten.expand.default")
def _expand(call: Call) -> list[Inferred] | None:
    x, size = call.tensor("self"), call.ints_arg("size")
    if not _is_tensor(x) or size is None:
        return None
    shape = list(x.shape)  # type: ignore[union-attr]
    if len(size) < len(shape):
        raise IncompatibleOperands(f"expand of {_shape_text(x)} to fewer dims {size}")
    out: list[Dim] = []
    for k, want in enumerate(size):
        j = k - (len(size) - len(shape))
        if isinstance(want, int) and want == -1:
            if j < 0:
                raise IncompatibleOperands(f"expand: -1 for a new leading dim in {size}")
            out.append(shape[j])
        else:
            if j >= 0 and not same_size(shape[j], 1) and _known_different(shape[j], want):
                raise IncompatibleOperands(
                    f"cannot expand {_shape_text(x)} to [{', '.join(map(_dim_text, size))}]"
                )
            out.append(want)
    return [Inferred(tuple(out), x.element_type)]  # type: ignore[union-attr]


@rule("aten.select.int")
def _select(call: Call) -> list[Inferred] | None:
    x, dim = call.tensor("self"), call.int_arg("dim")
    if not _is_tensor(x) or dim is None:
        return None
    shape = list(x.shape)  # type: ignore[union-attr]
    del shape[_norm_dim(dim, len(shape), call.name)]
    return [Inferred(tuple(shape), x.element_type)]  # type: ignore[union-attr]


@rule("aten._to_copy.default")
def _to_copy(call: Call) -> list[Inferred] | None:
    x = call.tensor("self")
    if not _is_tensor(x):
        return None
    return [Inferred(tuple(x.shape), call.dtype_arg("dtype") or x.element_type)]  # type: ignore[union-attr]


# --------------------------------------------------------------------------
# Collectives (c10d functional): the input's dtype, dim 0 gathered or scattered
# --------------------------------------------------------------------------


def _collectives(packet: str) -> tuple[str, ...]:
    """The overload names of a c10d packet, in both namespaces that have it."""
    names = [f"_c10d_functional.{packet}.default"]
    if packet in ("all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single"):
        names.append(f"_c10d_functional_autograd.{packet}.default")
    return tuple(names)


def _first_dim(call: Call, size: Callable[[SymInt], Dim]) -> list[Inferred] | None:
    """The input's type with dim 0 resized by ``size`` (a 0-d input is kept)."""
    x = call.tensor("input") if "input" in call.operands else call.tensor("tensor")
    if not _is_tensor(x):
        return None
    shape: list[Dim] = list(x.shape)  # type: ignore[union-attr]
    if shape:
        shape[0] = size(shape[0])  # type: ignore[arg-type]
    return [Inferred(tuple(shape), x.element_type)]  # type: ignore[union-attr]


@rule(
    *_collectives("all_reduce"),
    *_collectives("broadcast"),
    *_collectives("wait_tensor"),
    *_collectives("_wrap_tensor_autograd"),
)
def _same_as_input(call: Call) -> list[Inferred] | None:
    return _first_dim(call, lambda n: n)


@rule(*_collectives("all_gather_into_tensor"))
def _all_gather(call: Call) -> list[Inferred] | None:
    size = call.int_arg("group_size")
    if size is None:
        return None
    return _first_dim(call, lambda n: to_symint(sympy.expand(to_expr(n) * to_expr(size))))


@rule(*_collectives("reduce_scatter_tensor"))
def _reduce_scatter(call: Call) -> list[Inferred] | None:
    size = call.int_arg("group_size")
    if size is None:
        return None

    def scattered(n: SymInt) -> Dim:
        q = _exact_quotient(to_expr(n), to_expr(size))
        if q is None and to_expr(n).is_Integer and to_expr(size).is_Integer:
            raise IncompatibleOperands(
                f"{call.name}: dim 0 ({n}) is not divisible by group_size ({size})"
            )
        return q

    return _first_dim(call, scattered)


@rule(*_collectives("all_to_all_single"))
def _all_to_all(call: Call) -> list[Inferred] | None:
    splits = call.ints_arg("output_split_sizes")
    if splits is None:
        return None
    if not splits:
        return _first_dim(call, lambda n: n)
    total = to_symint(sympy.expand(sum((to_expr(d) for d in splits), sympy.Integer(0))))
    return _first_dim(call, lambda n: total)


# --------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------


def infer(call: Call) -> list[Inferred] | None:
    """The result types of ``call`` by its family's rule, or None (no rule, or an
    operand the rule cannot read). Raises :class:`IncompatibleOperands`."""
    fn = RULES.get(call.name)
    return None if fn is None else fn(call)


def check_result_types(op: Any) -> str | None:
    """Why ``op``'s result types are not what torch gives for its operands
    (None when they are, or when that cannot be told)."""
    if op.name not in RULES:
        return None
    try:
        inferred = infer(Call.of(op))
    except IncompatibleOperands as e:  # some rules name the op already
        return str(e) if str(e).startswith(f"{op.name}:") else f"{op.name}: {e}"
    if inferred is None or len(inferred) != len(op.results):
        return None
    for k, (want, res) in enumerate(zip(inferred, op.results)):
        if not want.matches(res.type):
            which = f"result {k}" if len(op.results) > 1 else "result"
            return (
                f"{op.name}: {which} type {res.type} does not match the type inferred "
                f"from its operands: {want.describe()}"
            )
    return None
