"""The textual form every coil tensor type shares: ``<[sizes], dtype, key value ...>``.

``!aten.tensor``, ``!loop.tensor`` and ``!buffer.buffer`` all print their sizes
and element type, then the layout fields they have and that differ from the
default (``strides`` when not row-major, ``offset`` when not 0, ``device``
unless cpu). One parser and one printer serve the three, so the types read
alike and a layout written for one parses for the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sympy
from xdsl.ir import Attribute
from xdsl.parser import AttrParser
from xdsl.utils.exceptions import VerifyException

from coil.dialects import dtypes
from coil.dialects.symbolic import (
    SymInt,
    contiguous_strides,
    format_expr,
    format_expr_list,
    index_symbols,
    is_index_symbol,
    loaded_torch_sympy,
    parse_expr,
    parse_expr_list,
    to_expr,
)


@dataclass
class Layout:
    """What a tensor type's parameters say (fields a type lacks stay at defaults)."""

    shape: tuple[sympy.Expr, ...]
    element_type: Attribute
    strides: tuple[sympy.Expr, ...] | None = None  # None: row-major
    offset: sympy.Expr = sympy.Integer(0)
    device: str = "cpu"

    def strides_or_contiguous(self) -> tuple:
        return self.strides if self.strides is not None else contiguous_strides(self.shape)


def parse_layout(parser: AttrParser, keys: Sequence[str] = ()) -> Layout:
    """Parse ``<[sizes], dtype (, key value)*>`` accepting the layout ``keys``
    (a subset of ``strides``, ``offset``, ``device``)."""
    with parser.in_angle_brackets():
        shape = parse_expr_list(parser)
        parser.parse_punctuation(",")
        start = parser.pos
        element_type = parser.parse_type()
        if not dtypes.is_element_type(element_type):
            parser.raise_error(f"{element_type} is not a torch element type", start, parser.pos)
        layout = Layout(shape, element_type)
        while keys and parser.parse_optional_punctuation(","):
            key = parser.parse_keyword_in(tuple(keys))
            if key == "strides":
                layout.strides = parse_expr_list(parser)
                if len(layout.strides) != len(shape):
                    parser.raise_error(f"expected {len(shape)} strides, got {len(layout.strides)}")
            elif key == "offset":
                layout.offset = parse_expr(parser)
            else:
                device = parser.parse_optional_str_literal()
                if device is None:
                    parser.raise_error('expected a quoted device name, e.g. device "cuda:0"')
                layout.device = device
    return layout


def verify_layout(
    kind: str, shape: Sequence, element_type: Attribute, strides: Sequence | None = None
) -> None:
    """A tensor type's own checks: a torch element type, one stride per size."""
    if not dtypes.is_element_type(element_type):
        raise VerifyException(f"{element_type} is not a torch element type")
    if strides is not None and len(shape) != len(strides):
        raise VerifyException(f"{kind} has {len(shape)} sizes but {len(strides)} strides")


def format_layout(
    shape: Sequence[sympy.Expr],
    element_type: Attribute,
    strides: Sequence[sympy.Expr] | None = None,
    offset: sympy.Expr | int = 0,
    device: str = "cpu",
) -> str:
    """``<[sizes], dtype, ...>`` with only the fields that differ from the defaults."""
    text = f"<{format_expr_list(shape)}, {element_type}"
    if strides is not None and tuple(strides) != tuple(contiguous_strides(shape)):
        text += f", strides {format_expr_list(strides)}"
    if offset != 0:
        text += f", offset {format_expr(offset)}"
    if device != "cpu":
        text += f', device "{device}"'
    return text + ">"


# --------------------------------------------------------------------------
# Strided addresses of index maps (bufferize's views, the executor's views)
# --------------------------------------------------------------------------


def nonnegative(e: sympy.Expr) -> bool:
    """``e >= 0`` for every value of its symbols: a backed size symbol ``s<k>`` is
    >= 2 (torch specializes sizes 0 and 1); any other symbol (an unbacked ``u<k>``
    size, an index) only >= 0."""
    if e.is_nonnegative:
        return True
    shifted = sympy.expand(e.xreplace({s: s + 2 for s in e.free_symbols if s.name[:1] == "s"}))
    return bool(shifted.is_nonnegative)


def _within(e: sympy.Expr, d: sympy.Expr, bounds: dict, zeros: dict) -> bool:
    """0 <= e < d over the whole domain (e affine with non-negative coefficients,
    so its extremes are at the domain's corners)."""
    if any(is_index_symbol(s) and s not in bounds for s in e.free_symbols):
        return False
    fns = loaded_torch_sympy()
    if fns is not None and e.has(fns.FloorDiv, fns.PythonMod, fns.ModularIndexing):
        return False
    for s in e.free_symbols:
        if is_index_symbol(s) and not nonnegative(sympy.expand(e).coeff(s, 1)):
            return False
    return nonnegative(e.xreplace(zeros)) and nonnegative(sympy.expand(d - 1 - e.xreplace(bounds)))


def simplify_address(address: sympy.Expr, shape: Sequence[SymInt]) -> sympy.Expr:
    """Undo the floordiv/mod a reshape puts in an address where the ranges allow:
    ``c*d*(e floordiv d) + c*(e mod d)`` is ``c*e``; ``e floordiv d`` is 0 and
    ``e mod d`` is ``e`` when ``0 <= e < d``."""
    fns = loaded_torch_sympy()
    if fns is None:  # torch's sympy functions not loaded: no floordiv/mod to undo
        return sympy.expand(address)
    FloorDiv, PythonMod, ModularIndexing = fns.FloorDiv, fns.PythonMod, fns.ModularIndexing
    syms = index_symbols(len(shape))
    bounds = {s: to_expr(n) - 1 for s, n in zip(syms, shape)}
    zeros = {s: sympy.Integer(0) for s in syms}
    address = address.replace(
        lambda x: isinstance(x, ModularIndexing),
        lambda x: PythonMod(FloorDiv(x.args[0], x.args[1]), x.args[2]),
    )
    address = sympy.expand(address)
    for _ in range(16):
        repl: dict[sympy.Expr, sympy.Expr] = {}
        for f in address.atoms(FloorDiv):
            if _within(*f.args, bounds, zeros):
                repl[f] = sympy.Integer(0)
        for m in address.atoms(PythonMod):
            if _within(*m.args, bounds, zeros):
                repl[m] = m.args[0]
        new = sympy.expand(address.xreplace(repl)) if repl else address
        mods = {m.args: m for m in new.atoms(PythonMod)}
        for f in new.atoms(FloorDiv):
            m = mods.get(f.args)
            if m is None:
                continue
            e, d = f.args
            c1, c2 = new.coeff(f), new.coeff(m)
            if c2 != 0 and sympy.expand(c1 - c2 * d) == 0:
                new = sympy.expand(new - c1 * f - c2 * m + c2 * e)
                break
        if new == address:
            break
        address = new
    if address.atoms(FloorDiv, PythonMod):
        # A reshape merging three or more dims leaves (e floordiv a) mod b next
        # to e floordiv (a*b), which pair up only through x mod d = x - d*(x
        # floordiv d) (exact for Python's floor division, any sign): write every
        # mod so, and keep the result if all the floordivs cancel.
        flat = sympy.expand(
            address.replace(
                lambda x: isinstance(x, PythonMod),
                lambda x: x.args[0] - x.args[1] * FloorDiv(x.args[0], x.args[1]),
            )
        )
        if not flat.atoms(FloorDiv, PythonMod):
            return flat
    return address


def view_address(
    index: Sequence[sympy.Expr],
    strides: Sequence[SymInt],
    offset: SymInt,
    shape: Sequence[SymInt],
) -> tuple[list[sympy.Expr], sympy.Expr]:
    """The flat address of view ``source[index]`` (index over the view's i0..,
    source laid out with ``strides``/``offset``) as per-index coefficients and a
    constant: address = offset' + sum(strides'_k * i_k) when the result holds
    no index symbol (after undoing reshape div/mod where the ranges allow)."""
    syms = index_symbols(len(shape))
    # A size-1 dimension's index is always 0 (lets e.g. (i0 floordiv 4) go).
    zero = {s: sympy.Integer(0) for s, n in zip(syms, shape) if to_expr(n) == 1}
    address = to_expr(offset)
    for e, stride in zip(index, strides):
        address += e.xreplace(zero) * to_expr(stride)
    address = simplify_address(address, shape)
    coeffs = [sympy.expand(address.coeff(s, 1)) for s in syms]
    rest = sympy.expand(address - sum(c * s for c, s in zip(coeffs, syms)))
    return coeffs, rest
