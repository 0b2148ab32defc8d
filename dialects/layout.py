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

from coil.dialects import dtypes
from coil.dialects.symbolic import (
    contiguous_strides,
    format_expr,
    format_expr_list,
    parse_expr,
    parse_expr_list,
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
