"""Symbolic integer expressions (sympy) shared by every coil dialect.

Sizes, strides and (later) index expressions are sympy expressions over size
symbols (``s0``, ``s1`` ...) and loop indices. This module owns

* the canonical form of a symbol (``integer=True, nonnegative=True``: sympy
  compares symbols by name *and* assumptions, so every symbol coil creates or
  imports goes through :func:`symbol`);
* the textual syntax, printed and parsed with xDSL's MLIR lexer. Floor division
  and modulo are spelled ``floordiv`` / ``mod`` as in MLIR affine maps, because
  ``//`` starts a comment and ``%`` starts an SSA name in MLIR text::

      2*s0 + 1        (s0 floordiv 2) mod 3        max(s0, 4)

* ``#coil.expr<...>`` (one expression) and ``#coil.shape<[...]>`` (a tuple of
  them), the attributes types and properties store.

Floor division and modulo are torch's own sympy functions
(``torch.utils._sympy.functions.FloorDiv`` / ``PythonMod``), so expressions that
come out of torch's ShapeEnv import unchanged and simplify the same way. That
module is imported (with torch) only when an expression needs one of them: a
``floordiv``/``mod``/``max``/``min`` in the text, or an expression built by code
that already imported torch. Plain sizes such as ``2*s0 + 1`` never load torch.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterable, Sequence
from types import ModuleType

import sympy
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr
from xdsl.ir import Data, Dialect
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer

_TORCH_SYMPY = "torch.utils._sympy.functions"


def torch_sympy() -> ModuleType:
    """torch's sympy functions (``FloorDiv``, ``PythonMod``, ``Max`` ...); imports torch."""
    import torch.utils._sympy.functions as fns

    return fns


def loaded_torch_sympy() -> ModuleType | None:
    """torch's sympy functions if already imported: when they are not, no
    expression can contain them, so printing need not import torch to check."""
    return sys.modules.get(_TORCH_SYMPY)


SymInt = int | sympy.Expr
"""A dimension, stride or index: a Python int when static, else a sympy expression."""


class SymbolicSyntaxError(ValueError):
    """An expression that coil's symbolic syntax cannot express."""


def symbol(name: str) -> sympy.Symbol:
    """The canonical symbol ``name`` (all coil symbols share these assumptions)."""
    return sympy.Symbol(name, integer=True, nonnegative=True)


def index_symbols(n_ranges: int, n_reduction: int = 0) -> list[sympy.Symbol]:
    """The symbols naming a loop body's indices: i0.. (ranges), then r0..
    (reduction ranges)."""
    return [symbol(f"i{k}") for k in range(n_ranges)] + [
        symbol(f"r{k}") for k in range(n_reduction)
    ]


def indirect_symbol(k: int) -> sympy.Symbol:
    """``t<k>``: the k-th indirect operand of a ``loop.load``."""
    return symbol(f"t{k}")


def is_index_symbol(s: sympy.Symbol) -> bool:
    """Loop indices and indirect operands (i<k>, r<k>, t<k>), not size symbols."""
    return s.name[:1] in ("i", "r", "t") and s.name[1:].isdigit()


def canonicalize_symbols(expr: sympy.Expr) -> sympy.Expr:
    """Rewrite every free symbol of ``expr`` into its canonical form."""
    subs = {s: symbol(s.name) for s in expr.free_symbols if s != symbol(s.name)}
    return expr.xreplace(subs) if subs else expr


def to_expr(value: SymInt) -> sympy.Expr:
    """A sympy expression for an int or expression (ints become ``sympy.Integer``)."""
    if isinstance(value, bool):
        raise TypeError("a bool is not a symbolic integer")
    if isinstance(value, int):
        return sympy.Integer(value)
    if isinstance(value, sympy.Expr):
        return canonicalize_symbols(value)
    raise TypeError(f"not a symbolic integer: {value!r}")


def to_symint(expr: sympy.Expr | int) -> SymInt:
    """A Python int when ``expr`` is a constant, else the expression itself."""
    if isinstance(expr, int):
        return expr
    if expr.is_Integer:
        return int(expr)
    return expr


def exact_floordivs(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` with every ``FloorDiv(a, b)`` whose ``b`` divides ``a`` as
    polynomials (with integer coefficients) replaced by the quotient: torch's
    shape arithmetic leaves ``(s0*s0) // s0`` where a view of ``s0*s0``
    elements takes ``s0`` rows (the backward of a reshape under
    ``dynamic=True``), and that is ``s0`` for every size."""
    fns = loaded_torch_sympy()
    if fns is None or not isinstance(expr, sympy.Basic) or not expr.has(fns.FloorDiv):
        return expr

    def exact(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
        try:
            quotient, remainder = sympy.div(sympy.expand(a), sympy.expand(b))
            symbols = quotient.free_symbols
            coeffs = sympy.Poly(quotient, *symbols).coeffs() if symbols else [quotient]
        except sympy.PolynomialError:  # not polynomials (a nested floor division)
            return fns.FloorDiv(a, b)
        if remainder == 0 and all(c.is_Integer for c in coeffs):
            return quotient
        return fns.FloorDiv(a, b)

    return expr.replace(fns.FloorDiv, exact)


def sym_eq(a: SymInt, b: SymInt) -> bool:
    """Whether two symbolic integers are equal for every value of their symbols
    (structurally, after expansion: ``2*(s0 + 1)`` equals ``2*s0 + 2``; an
    exact floor division, ``(s0*s0) // s0``, as its quotient)."""
    diff = sympy.expand(to_expr(a) - to_expr(b))
    return diff == 0 or sympy.expand(exact_floordivs(diff)) == 0


def contiguous_strides(shape: Sequence[SymInt]) -> tuple[SymInt, ...]:
    """Row-major strides for ``shape`` (as torch computes them: size-1 dims count as 1)."""
    strides: list[SymInt] = []
    running: sympy.Expr = sympy.Integer(1)
    for dim in reversed(shape):
        dim = to_symint(to_expr(dim))
        strides.append(to_symint(running))
        # torch counts a size-0 dim as 1; size symbols are >= 1 by construction.
        running = sympy.expand(running * (max(dim, 1) if isinstance(dim, int) else dim))
    return tuple(reversed(strides))


# --------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------

_ADD, _MUL, _ATOM = 0, 1, 2


SIZE_HINTS_ATTR = "coil.size_hints"
"""The function attribute holding each size symbol's example value (written by
the importer, read by ``strategy/hints.py``)."""


def size_hints_attr(hints) -> DictionaryAttr:
    """``{s0 = 8 : i64, ...}``, symbols in natural order (``s2`` before ``s10``)."""

    def natural(name: str) -> tuple[str, int]:
        head = name.rstrip("0123456789")
        return head, int(name[len(head) :] or 0)

    items = sorted(((str(k), int(v)) for k, v in hints.items()), key=lambda kv: natural(kv[0]))
    return DictionaryAttr({k: IntegerAttr(v, 64) for k, v in items})


def eval_over_range(expr: sympy.Expr, sym: sympy.Symbol, values):
    """``expr`` at every integer of ``values`` (a numpy int64 array) for
    ``sym``, exactly (integer floor division and modulo), or None where
    ``expr`` holds something other than integers, ``sym``, sums, integer
    products, floordiv/mod (torch's functions or sympy's floor of a rational
    multiple, and Mod). One vectorized pass instead of a sympy substitution per
    point: a reshape's index over a 3136-long range took seconds that way."""
    import numpy as np

    def ev(e):
        if e == sym:
            return values
        if e.is_Integer:
            return np.full(values.shape, int(e), dtype=np.int64)
        if e.is_Add:
            parts = [ev(a) for a in e.args]
            return None if any(p is None for p in parts) else sum(parts[1:], parts[0])
        if e.is_Mul:
            coeff, rest = e.as_coeff_Mul()
            if not coeff.is_Integer:
                return None
            inner = ev(rest) if rest != 1 else np.ones(values.shape, dtype=np.int64)
            return None if inner is None else int(coeff) * inner
        if isinstance(e, sympy.floor):
            coeff, rest = e.args[0].as_coeff_Mul()
            if not coeff.is_Rational:
                return None
            inner = ev(rest)
            return None if inner is None else (int(coeff.p) * inner) // int(coeff.q)
        if isinstance(e, sympy.Mod):
            a, b = ev(e.args[0]), ev(e.args[1])
            return None if a is None or b is None else a % b
        fns = loaded_torch_sympy()
        if fns is None:
            return None
        if isinstance(e, fns.FloorDiv):
            a, b = ev(e.args[0]), ev(e.args[1])
            return None if a is None or b is None else a // b
        if isinstance(e, fns.PythonMod | fns.Mod):
            a, b = ev(e.args[0]), ev(e.args[1])
            return None if a is None or b is None else a % b
        if isinstance(e, fns.ModularIndexing):
            a, d, m = (ev(x) for x in e.args)
            return None if a is None or d is None or m is None else (a // d) % m
        return None

    return ev(sympy.sympify(expr))


def format_expr(expr: SymInt) -> str:
    """The textual form of ``expr`` (parseable by :func:`parse_expr`)."""
    return _format_text(to_expr(expr))


# Printing a module prints the same few size expressions in every layout and
# type of it, and a pass-by-pass check or a dump prints the module after every
# pass: a dynamic 4-convolution graph dumped after its 30 passes formatted
# 20,772 expressions (7.5 of its 18 s of compile under cProfile). The text is a
# function of the (immutable, hashable) canonical expression alone.
@functools.lru_cache(maxsize=1 << 14)
def _format_text(expr: sympy.Expr) -> str:
    return _format(expr)[0]


def _wrap(part: tuple[str, int], min_prec: int) -> str:
    text, prec = part
    return f"({text})" if prec < min_prec else text


def _format(expr: sympy.Expr) -> tuple[str, int]:
    if expr.is_Integer:
        value = int(expr)
        return (str(value), _ATOM) if value >= 0 else (str(value), _ADD)
    if expr.is_Symbol:
        return expr.name, _ATOM
    if isinstance(expr, sympy.Add):
        terms = expr.as_ordered_terms()
        text = _format_term(terms[0])
        for term in terms[1:]:
            if term.as_coeff_Mul()[0] < 0:
                text += " - " + _format_term(-term)
            else:
                text += " + " + _format_term(term)
        return text, _ADD
    if isinstance(expr, sympy.Mul):
        coeff = expr.as_coeff_Mul()[0]
        if coeff < 0:
            # Unary minus binds to one factor: "-s0 floordiv 2" would read as
            # (-s0) floordiv 2, so a negated floordiv/mod is parenthesized.
            inner = -expr
            return "-" + _wrap(_format(inner), _ATOM if _is_divmod(inner) else _MUL), _ADD
        if not coeff.is_Integer:
            raise SymbolicSyntaxError(f"non-integer coefficient in {expr}")
        factors = []
        for factor in expr.as_ordered_factors():
            if isinstance(factor, sympy.Pow):
                factors.append(_format_pow(factor)[0])
            else:
                factors.append(_wrap(_format(factor), _ATOM))
        return "*".join(factors), _MUL
    if isinstance(expr, sympy.Pow):
        return _format_pow(expr)
    if isinstance(expr, sympy.Mod):
        lhs, rhs = expr.args
        return f"{_wrap(_format(lhs), _ATOM)} mod {_wrap(_format(rhs), _ATOM)}", _MUL
    if isinstance(expr, sympy.Max | sympy.Min):
        fname = "max" if isinstance(expr, sympy.Max) else "min"
        args = ", ".join(_format(a)[0] for a in expr.args)
        return f"{fname}({args})", _ATOM
    fns = loaded_torch_sympy()
    if fns is None:
        raise SymbolicSyntaxError(
            f"cannot print symbolic expression {expr} ({type(expr).__name__})"
        )
    FloorDiv, PythonMod, ModularIndexing = fns.FloorDiv, fns.PythonMod, fns.ModularIndexing
    if isinstance(expr, FloorDiv):
        lhs, rhs = expr.args
        return f"{_wrap(_format(lhs), _ATOM)} floordiv {_wrap(_format(rhs), _ATOM)}", _MUL
    if isinstance(expr, PythonMod | fns.Mod):
        lhs, rhs = expr.args
        return f"{_wrap(_format(lhs), _ATOM)} mod {_wrap(_format(rhs), _ATOM)}", _MUL
    if isinstance(expr, ModularIndexing):
        base, div, mod = expr.args
        return _format(PythonMod(FloorDiv(base, div), mod))
    if isinstance(expr, fns.Max | fns.Min):
        fname = "max" if isinstance(expr, fns.Max) else "min"
        args = ", ".join(_format(a)[0] for a in expr.args)
        return f"{fname}({args})", _ATOM
    if isinstance(expr, fns.CeilToInt | fns.FloorToInt):
        raise SymbolicSyntaxError(f"float-valued symbolic expression {expr} is not supported")
    raise SymbolicSyntaxError(f"cannot print symbolic expression {expr} ({type(expr).__name__})")


def _format_pow(expr: sympy.Pow) -> tuple[str, int]:
    base, exp = expr.args
    if not (exp.is_Integer and int(exp) > 0):
        raise SymbolicSyntaxError(f"cannot print power {expr}")
    return "*".join([_wrap(_format(base), _ATOM)] * int(exp)), _MUL


def _is_divmod(expr: sympy.Expr) -> bool:
    if isinstance(expr, sympy.Mod):
        return True
    fns = loaded_torch_sympy()
    return fns is not None and isinstance(
        expr, fns.FloorDiv | fns.PythonMod | fns.Mod | fns.ModularIndexing
    )


def _format_term(term: sympy.Expr) -> str:
    return _wrap(_format(term), _MUL)


# --------------------------------------------------------------------------
# Parsing (on xDSL's MLIR lexer, so it nests inside any attribute or op syntax)
# --------------------------------------------------------------------------

# torch's Max/Min, as ShapeEnv builds them (sympy's compare unequal to them).
_FUNCTIONS = ("max", "min")


def parse_expr(parser: AttrParser) -> sympy.Expr:
    """Parse ``expr := term (('+'|'-') term)*`` at the parser's position."""
    expr = _parse_term(parser)
    while True:
        if parser.parse_optional_punctuation("+"):
            expr = expr + _parse_term(parser)
        elif parser.parse_optional_punctuation("-"):
            expr = expr - _parse_term(parser)
        else:
            return expr


def _parse_term(parser: AttrParser) -> sympy.Expr:
    expr = _parse_factor(parser)
    while True:
        if parser.parse_optional_punctuation("*"):
            expr = expr * _parse_factor(parser)
        elif parser.parse_optional_keyword("floordiv"):
            expr = torch_sympy().FloorDiv(expr, _parse_divisor(parser))
        elif parser.parse_optional_keyword("mod"):
            expr = torch_sympy().PythonMod(expr, _parse_divisor(parser))
        else:
            return expr


def _parse_divisor(parser: AttrParser) -> sympy.Expr:
    start = parser.pos
    divisor = _parse_factor(parser)
    if divisor == 0:
        parser.raise_error("division by zero in a symbolic expression", start, parser.pos)
    return divisor


def _parse_factor(parser: AttrParser) -> sympy.Expr:
    if parser.parse_optional_punctuation("-"):
        return -_parse_factor(parser)
    if parser.parse_optional_punctuation("("):
        expr = parse_expr(parser)
        parser.parse_punctuation(")")
        return expr
    value = parser.parse_optional_integer(allow_boolean=False, allow_negative=False)
    if value is not None:
        return sympy.Integer(value)
    name = parser.parse_optional_identifier()
    if name is None:
        parser.raise_error("expected a symbolic integer expression (int, symbol, '(' or '-')")
    if name in _FUNCTIONS:
        args = parser.parse_comma_separated_list(parser.Delimiter.PAREN, lambda: parse_expr(parser))
        if not args:
            parser.raise_error(f"{name}() needs at least one argument")
        fns = torch_sympy()
        return (fns.Max if name == "max" else fns.Min)(*args)
    if name in ("floordiv", "mod"):
        parser.raise_error(f"'{name}' needs a left operand")
    return symbol(name)


def parse_expr_list(parser: AttrParser) -> tuple[sympy.Expr, ...]:
    """Parse ``[e0, e1, ...]``."""
    return tuple(
        parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: parse_expr(parser))
    )


def format_expr_list(values: Iterable[SymInt]) -> str:
    return "[" + ", ".join(format_expr(v) for v in values) + "]"


# --------------------------------------------------------------------------
# Attributes
# --------------------------------------------------------------------------


@irdl_attr_definition
class ExprAttr(Data[sympy.Expr]):
    """One symbolic integer, e.g. ``#coil.expr<2*s0 + 1>``."""

    name = "coil.expr"

    def __init__(self, value: SymInt):
        super().__init__(to_expr(value))

    @property
    def symint(self) -> SymInt:
        return to_symint(self.data)

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> sympy.Expr:
        with parser.in_angle_brackets():
            return parse_expr(parser)

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{format_expr(self.data)}>")


@irdl_attr_definition
class ShapeAttr(Data[tuple[sympy.Expr, ...]]):
    """A tuple of symbolic integers (sizes or strides), e.g. ``#coil.shape<[s0, 128]>``."""

    name = "coil.shape"

    def __init__(self, values: Iterable[SymInt]):
        super().__init__(tuple(to_expr(v) for v in values))

    @property
    def symints(self) -> tuple[SymInt, ...]:
        return tuple(to_symint(v) for v in self.data)

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> tuple[sympy.Expr, ...]:
        with parser.in_angle_brackets():
            return parse_expr_list(parser)

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{format_expr_list(self.data)}>")


Coil = Dialect("coil", [], [ExprAttr, ShapeAttr])
"""Attributes shared by all coil dialects (``#coil.expr``, ``#coil.shape``)."""
