"""Integer arithmetic on sizes, one home for every layer.

The product of sizes (static or symbolic), ceiling division and powers of two
were written out again in the dialects, the passes, the strategy and the
runtime. They live here, below every layer (this module imports only sympy),
so a generated host module that imports ``coil.runtime.wrapper.cdiv`` loads
nothing more than torch already did.
"""

from __future__ import annotations

from collections.abc import Iterable

import sympy


def prod(values: Iterable[int | sympy.Expr]) -> sympy.Expr:
    """The product of sizes as a sympy expression (``Integer(1)`` when empty),
    left unexpanded: ``prod([s0 + 1, 4])`` is ``4*s0 + 4`` by sympy's own
    distribution, ``prod([s0 + 1, s1])`` stays ``s1*(s0 + 1)``."""
    out = sympy.Integer(1)
    for v in values:
        out = out * sympy.sympify(v)
    return out


def numel(shape: Iterable[int | sympy.Expr]) -> sympy.Expr:
    """The number of elements of ``shape``: :func:`prod`, expanded to a sum of
    monomials (the form sizes are compared and printed in)."""
    return sympy.expand(prod(shape))


def cdiv(a: int, b: int) -> int:
    """Ceiling division of integers (``b > 0``)."""
    return -(a // -b)


def next_pow2(n: int) -> int:
    """The least power of two ``>= n`` (1 for ``n <= 1``)."""
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def is_pow2(n: int) -> bool:
    """Whether ``n`` is a positive power of two."""
    return n > 0 and n & (n - 1) == 0
