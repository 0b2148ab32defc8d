"""strides_through_view (bufferize's layout for a product's viewed operand)
checks a view's address over every point of its ranges; it does so with one
vectorized integer evaluation (dialects.symbolic.eval_over_range). These
compare it with the per-point sympy substitution it replaced, on reshapes,
permutations, broadcasts and torch's floordiv/mod forms."""

import pytest
import sympy
import torch.utils._sympy.functions as fns

from coil.dialects import loop as L
from coil.dialects.symbolic import eval_over_range
from coil.transforms.loop_layout import strides_through_view

i0, i1, i2 = L.index_symbols(3)


def _per_point(source_shape, index, view_shape, want):
    """The definition, one sympy substitution per point (the old code)."""
    syms = L.index_symbols(len(view_shape))
    exprs = [sympy.sympify(e) for e in index]
    owner = []
    for e, n in zip(exprs, source_shape):
        used = [q for q, s in enumerate(syms) if s in e.free_symbols]
        if len(used) > 1 or (not used and (e != 0 or n != 1)):
            return None
        owner.append(used[0] if used else None)
    strides = []
    for e, q in zip(exprs, owner):
        if q is None:
            strides.append(1)
            continue
        step = next((v for v in range(1, view_shape[q]) if e.xreplace({syms[q]: v}) == 1), None)
        strides.append(1 if step is None else want[q] * step)
    for q, sym in enumerate(syms):
        mine = [k for k, o in enumerate(owner) if o == q]
        for v in range(view_shape[q]):
            if sum(strides[k] * int(exprs[k].xreplace({sym: v})) for k in mine) != want[q] * v:
                return None
    return strides


CASES = {
    # (B*W, N, C) of a (B, W, N, C) source, row-major wanted
    "merge_floor_mod": (
        [4, 6, 5, 3],
        [sympy.floor(i0 / 6), sympy.Mod(i0, 6), i1, i2],
        [24, 5, 3],
        [15, 3, 1],
    ),
    "merge_torch": (
        [4, 6, 5, 3],
        [fns.FloorDiv(i0, 6), fns.PythonMod(i0, 6), i1, i2],
        [24, 5, 3],
        [15, 3, 1],
    ),
    "modular_indexing": (
        [4, 6, 5],
        [fns.FloorDiv(i0, 6), fns.ModularIndexing(i0, 1, 6), i1],
        [24, 5],
        [5, 1],
    ),
    "transpose": ([7, 9], [i1, i0], [9, 7], [7, 1]),
    "transpose_not_row_major": ([7, 9], [i1, i0], [9, 7], [1, 9]),
    "size_one_source_dim": ([1, 5, 3], [0, i0, i1], [5, 3], [3, 1]),
    "broadcast_view": ([5], [i1], [4, 5], [5, 1]),
    "two_view_indices_in_one": ([20], [i0 * 5 + i1], [4, 5], [5, 1]),
    "not_exact": ([4, 6], [sympy.floor(i0 / 6), sympy.Mod(i0, 6)], [24], [2]),
    "odd_divisor": ([7, 49], [sympy.floor(i0 / 49), sympy.Mod(i0, 49)], [343], [1]),
}


@pytest.mark.parametrize("name", CASES)
def test_matches_per_point_definition(name):
    source, index, view, want = CASES[name]
    assert strides_through_view(source, index, view, want) == _per_point(source, index, view, want)


def test_eval_over_range_exact_integer_division():
    import numpy as np

    v = np.arange(10_000, dtype=np.int64)
    # float 1/49 * 49 is 0.999...: the evaluation must divide in integers
    assert (eval_over_range(sympy.floor(i0 / 49), i0, v) == v // 49).all()
    assert (eval_over_range(fns.ModularIndexing(i0, 7, 3), i0, v) == (v // 7) % 3).all()
    assert eval_over_range(sympy.sin(i0), i0, v) is None
