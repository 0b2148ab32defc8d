"""Random FX graphs (hypothesis strategies) compiled with coil against eager.

:func:`graphs` draws a :class:`Program`: an FX ``GraphModule`` built node by
node and its inputs. Inputs have random shapes (size-1 and odd sizes among
them), dtypes (mostly float32; int64, bool, float16) and layouts (contiguous,
transposed, strided slices, a storage offset, stride-0 broadcasts). Each step
applies one op to values already in the graph: unary and binary pointwise ops
with broadcasting and type promotion (GELU and SiLU among them), comparisons
and ``where``, reductions over a random dim (or all) with and without keepdim,
layer and RMS norms over the last dim (with and without weights), softmax/cumsum, views
(transpose, permute, reshape, unsqueeze/squeeze, strided slices, select,
expand, flip), casts, ``cat``, gathers through an index input, and matmuls
(``mm``, ``addmm`` with a bias input) between coil's kernels. Every step
is run eagerly while the graph is built (shapes, dtypes and validity come from
the real values; a step eager rejects is redrawn), so every graph is valid.

:func:`check` compiles a program with ``torch.compile(backend="coil")`` under
the 'extern' fallback policy (an error is an error, not an eager fallback),
static or dynamic, and compares with eager through
:func:`coil.testing.difference`.

``test/python/test_fuzz.py`` runs a fixed-seed subset in CI (and shrinks a
failure to a minimal graph). The longer run: ``python -m coil.tools.fuzz
--graphs 2000 --seed 1`` draws that many graphs, checks each, and prints every
failure (the graph's code, its inputs' layouts, the error) instead of stopping
at the first; README.md says how it was last run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import operator
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
import torch.nn.functional as F
from hypothesis import strategies as st

SIZES = (1, 1, 2, 3, 4, 5, 7, 8, 13, 16, 33)
"""Dimension sizes to draw from: size 1 (broadcast, specialization) and odd
sizes (masks) are over-represented."""

LONG = (0, 300, 1025, 5000)
"""Sizes one dimension sometimes takes instead: empty, and rows longer than a
block or than the persistent-reduction threshold (4096: looped reductions)."""

FLOAT = (torch.float32, torch.float16, torch.bfloat16)


@dataclass
class Program:
    """A graph and its inputs; ``describe()`` is a readable repro."""

    gm: torch.fx.GraphModule
    inputs: list[torch.Tensor]
    dynamic: bool = False
    steps: list[str] = field(default_factory=list)

    def describe(self) -> str:
        layouts = [
            f"  {n}: shape {tuple(t.shape)} strides {t.stride()} offset "
            f"{t.storage_offset()} {t.dtype}"
            for n, t in zip(self.placeholders(), self.inputs)
        ]
        return (
            f"dynamic={self.dynamic}\ninputs:\n" + "\n".join(layouts) + "\n" + self.gm.code.strip()
        )

    def placeholders(self) -> list[str]:
        return [n.name for n in self.gm.graph.nodes if n.op == "placeholder"]


class _Reject(Exception):
    """A drawn step eager rejects (or one not worth testing): draw another."""


class _Builder:
    """An FX graph under construction with each node's eager value."""

    def __init__(self, gen: torch.Generator) -> None:
        self.graph = torch.fx.Graph()
        self.gen = gen
        self.nodes: list[torch.fx.Node] = []
        self.values: list[torch.Tensor] = []
        self.inputs: list[torch.Tensor] = []
        self.steps: list[str] = []

    def add_input(self, value: torch.Tensor) -> int:
        node = self.graph.placeholder(f"in{len(self.inputs)}")
        self.inputs.append(value)
        return self._keep(node, value)

    def _keep(self, node: torch.fx.Node, value: torch.Tensor) -> int:
        self.nodes.append(node)
        self.values.append(value)
        return len(self.nodes) - 1

    def call(self, kind: str, target: Any, args: Sequence[Any], kwargs=None, name="") -> int:
        """Add ``target(*args)`` (``kind``: call_function or call_method); ``args``
        refer to graph values as ``_Ref(k)``."""
        kwargs = kwargs or {}

        def real(a: Any) -> Any:
            if isinstance(a, _Ref):
                return self.values[a.k]
            if isinstance(a, list | tuple):
                return type(a)(real(x) for x in a)
            return a

        def node(a: Any) -> Any:
            if isinstance(a, _Ref):
                return self.nodes[a.k]
            if isinstance(a, list | tuple):
                return type(a)(node(x) for x in a)
            return a

        try:
            if kind == "call_method" and target.endswith("_"):  # in place: on a copy
                value = getattr(real(args[0]).clone(), target)(*real(args[1:]), **kwargs)
            elif kind == "call_method":
                value = getattr(real(args[0]), target)(*real(args[1:]), **kwargs)
            else:
                value = target(*real(args), **kwargs)
        except Exception as e:
            raise _Reject(str(e)) from e
        if not isinstance(value, torch.Tensor):
            raise _Reject("not a tensor")
        if value.numel() > 20000 or value.dim() > 5:
            raise _Reject("too big")
        if value.is_floating_point() and not bool(value.isfinite().all()):
            raise _Reject("inf/nan: differences there say little")
        n = self.graph.create_node(kind, target, node(tuple(args)), kwargs)
        self.steps.append(name or str(getattr(target, "__name__", target)))
        return self._keep(n, value)


@dataclass(frozen=True)
class _Ref:
    k: int


def _tensor(draw, gen: torch.Generator, shape: tuple[int, ...], dtype: torch.dtype):
    """A tensor of ``shape`` with a drawn layout."""
    layout = draw(st.sampled_from(["contiguous"] * 3 + ["transposed", "sliced", "offset", "bcast"]))
    rank = len(shape)

    def make(s: Sequence[int]) -> torch.Tensor:
        if dtype == torch.bool:
            return torch.rand(*s, generator=gen) > 0.5
        if dtype == torch.int64:
            return torch.randint(-8, 9, tuple(s), generator=gen)
        return torch.randn(*s, generator=gen).to(dtype)

    if layout == "transposed" and rank >= 2:
        return make(shape[::-1]).permute(*range(rank - 1, -1, -1))
    if layout == "sliced" and rank >= 1:
        d = draw(st.integers(0, rank - 1))
        big = list(shape)
        big[d] = 2 * shape[d]
        return make(big).narrow(d, 0, 2 * shape[d])[(slice(None),) * d + (slice(None, None, 2),)]
    if layout == "offset":
        flat = make([math.prod(shape) + 3])
        return flat[3:].view(shape)
    if layout == "bcast" and rank >= 1:
        d = draw(st.integers(0, rank - 1))
        small = list(shape)
        small[d] = 1
        return make(small).expand(*shape)
    return make(shape)


UNARY_FLOAT = (
    torch.exp,
    torch.tanh,
    torch.sigmoid,
    torch.relu,
    torch.sin,
    torch.cos,
    torch.erf,
    torch.floor,
    torch.sign,
    torch.nn.functional.gelu,
    torch.nn.functional.silu,
)
UNARY_ANY = (torch.neg, torch.abs)
BINARY = (
    operator.add,
    operator.sub,
    operator.mul,
    torch.maximum,
    torch.minimum,
)
COMPARE = (operator.gt, operator.eq, operator.le)
REDUCE = ("sum", "mean", "amax", "amin", "argmax", "argmin", "var", "prod", "logsumexp")


def _pick(draw, b: _Builder, ok: Callable[[torch.Tensor], bool] = lambda v: True) -> int:
    choices = [k for k, v in enumerate(b.values) if ok(v)]
    if not choices:
        raise _Reject("no operand")
    # Recent values more often: chains rather than fans of the inputs.
    weights = sorted(choices, reverse=True)
    return draw(st.sampled_from(weights[:4] + choices))


def _step(draw, b: _Builder) -> None:
    kind = draw(
        st.sampled_from(
            ["unary"] * 3
            + ["binary"] * 3
            + ["reduce"] * 2
            + ["norm"] * 2  # (hypothesis draws a list's later entries rarely)
            + ["view"] * 3
            + ["cast", "compare", "where", "softmax", "cumsum", "cat", "gather", "scalar"]
            + ["integer", "clamp", "masked_fill", "matmul", "stack"]
        )
    )
    if kind == "unary":
        k = _pick(draw, b)
        fns = UNARY_ANY + (UNARY_FLOAT if b.values[k].is_floating_point() else ())
        if b.values[k].dtype == torch.bool:
            b.call("call_function", torch.logical_not, [_Ref(k)])
            return
        fn = draw(st.sampled_from(fns))
        b.call("call_function", fn, [_Ref(k)])
    elif kind == "scalar":
        k = _pick(draw, b, lambda v: v.dtype != torch.bool)
        c = draw(st.sampled_from([2, -1, 0.5, 3.0]))
        fn = draw(st.sampled_from([operator.mul, operator.add, operator.sub]))
        b.call("call_function", fn, [_Ref(k), c])
    elif kind == "binary":
        k = _pick(draw, b, lambda v: v.dtype != torch.bool)
        shape = b.values[k].shape

        def fits(v: torch.Tensor) -> bool:
            try:
                torch.broadcast_shapes(shape, v.shape)
            except RuntimeError:
                return False
            return v.dtype != torch.bool

        j = _pick(draw, b, fits)
        fn = draw(st.sampled_from(BINARY))
        b.call("call_function", fn, [_Ref(k), _Ref(j)])
    elif kind == "integer":  # integer-only arithmetic: floor division, remainder, bits
        k = _pick(draw, b, lambda v: v.dtype in (torch.int64, torch.int32, torch.bool))
        v = b.values[k]
        if v.dtype == torch.bool:
            j = _pick(draw, b, lambda w: w.dtype == torch.bool and _broadcasts(v, w))
            fn = draw(st.sampled_from([operator.and_, operator.or_, operator.xor]))
            b.call("call_function", fn, [_Ref(k), _Ref(j)])
        else:
            fn = draw(st.sampled_from([operator.floordiv, operator.mod, operator.and_]))
            c = draw(st.sampled_from([3, -2, 5]))
            b.call("call_function", fn, [_Ref(k), c])
    elif kind == "clamp":
        k = _pick(draw, b, lambda v: v.dtype != torch.bool)
        lo = draw(st.sampled_from([None, -1, 0]))
        b.call("call_function", torch.clamp, [_Ref(k), lo, 1 if lo is None else 2])
    elif kind == "masked_fill":
        k = _pick(draw, b, lambda v: v.dtype != torch.bool)
        m = _pick(draw, b, lambda w: w.dtype == torch.bool and _broadcasts(b.values[k], w))
        if torch.broadcast_shapes(b.values[k].shape, b.values[m].shape) != b.values[k].shape:
            raise _Reject("mask broadcasts the value")
        b.call("call_method", "masked_fill", [_Ref(k), _Ref(m), -3])
    elif kind == "matmul":  # an extern between coil's kernels
        k = _pick(draw, b, lambda v: v.dim() == 2 and v.is_floating_point())
        j = _pick(
            draw,
            b,
            lambda w: (
                w.dim() == 2 and w.dtype == b.values[k].dtype and w.shape[0] == b.values[k].shape[1]
            ),
        )
        if draw(st.booleans()):
            b.call("call_function", torch.mm, [_Ref(k), _Ref(j)])
        else:  # with a bias over the columns (memory-plan's addmm.out into a buffer)
            n = b.values[j].shape[1]
            bias = b.add_input(torch.randn(n, generator=b.gen).to(b.values[k].dtype))
            beta = draw(st.sampled_from([1, 0.5]))
            b.call("call_function", torch.addmm, [_Ref(bias), _Ref(k), _Ref(j)], {"beta": beta})
    elif kind == "stack":
        k = _pick(draw, b)
        j = _pick(draw, b, lambda w: w.shape == b.values[k].shape)
        b.call("call_function", torch.stack, [[_Ref(k), _Ref(j)], draw(st.integers(0, 1))])
    elif kind == "compare":
        k = _pick(draw, b, lambda v: v.dtype != torch.bool)
        fn = draw(st.sampled_from(COMPARE))
        b.call("call_function", fn, [_Ref(k), 0])
    elif kind == "where":
        c = _pick(draw, b, lambda v: v.dtype == torch.bool)
        x = _pick(draw, b, lambda v: v.dtype != torch.bool)
        b.call("call_function", torch.where, [_Ref(c), _Ref(x), 0.0])
    elif kind == "reduce":
        k = _pick(draw, b, lambda v: v.dim() >= 1 and v.numel() > 0 and v.dtype != torch.bool)
        v = b.values[k]
        name = draw(st.sampled_from(REDUCE))
        if name in ("mean", "var", "logsumexp") and not v.is_floating_point():
            name = "sum"
        dim = draw(st.integers(-1, v.dim() - 1))
        keepdim = draw(st.booleans())
        if name == "logsumexp" and dim < 0:
            dim = v.dim() - 1
        if dim < 0 and name in ("sum", "mean", "amax", "amin", "prod"):
            b.call("call_method", name, [_Ref(k)], name=name)
        elif dim < 0:
            b.call("call_method", name, [_Ref(k)], name=name)
        else:
            b.call("call_method", name, [_Ref(k), dim], {"keepdim": keepdim}, name=name)
    elif kind == "softmax":
        k = _pick(draw, b, lambda v: v.dim() >= 1 and v.is_floating_point())
        dim = draw(st.integers(0, b.values[k].dim() - 1))
        fn = draw(st.sampled_from([torch.softmax, torch.log_softmax]))
        b.call("call_function", fn, [_Ref(k), dim])
    elif kind == "norm":  # a layer norm or RMS norm over the last dim, affine or not
        k = _pick(draw, b, lambda v: v.dim() >= 1 and v.shape[-1] > 0 and v.is_floating_point())
        v = b.values[k]
        n = v.shape[-1]
        affine = draw(st.booleans())

        def param() -> _Ref | None:
            if not affine:
                return None
            return _Ref(b.add_input(torch.randn(n, generator=b.gen).to(v.dtype)))

        args = [_Ref(k), [n], param()]
        if draw(st.booleans()):
            b.call("call_function", F.layer_norm, [*args, param()], name="layer_norm")
        else:
            b.call("call_function", F.rms_norm, args, name="rms_norm")
    elif kind == "cumsum":
        k = _pick(draw, b, lambda v: v.dim() >= 1 and v.dtype != torch.bool)
        dim = draw(st.integers(0, b.values[k].dim() - 1))
        b.call("call_function", torch.cumsum, [_Ref(k), dim])
    elif kind == "cast":
        k = _pick(draw, b)
        dtype = draw(
            st.sampled_from([torch.float32, torch.float16, torch.int64, torch.int32, torch.bool])
        )
        b.call("call_method", "to", [_Ref(k), dtype], name=f"to({dtype})")
    elif kind == "cat":
        k = _pick(draw, b, lambda v: v.dim() >= 1)
        v = b.values[k]
        dim = draw(st.integers(0, v.dim() - 1))

        def joins(w: torch.Tensor) -> bool:
            return w.dim() == v.dim() and all(
                a == c for d, (a, c) in enumerate(zip(w.shape, v.shape)) if d != dim
            )

        j = _pick(draw, b, joins)
        b.call("call_function", torch.cat, [[_Ref(k), _Ref(j)], dim])
    elif kind == "gather":
        k = _pick(draw, b, lambda v: v.dim() >= 1 and v.shape[0] > 0)
        n = b.values[k].shape[0]
        count = draw(st.sampled_from([1, 3, 5]))
        if draw(st.booleans()):  # x[index] takes negative indices
            i = b.add_input(torch.randint(-n, n, (count,), generator=b.gen))
            b.call("call_function", operator.getitem, [_Ref(k), _Ref(i)], name="x[index]")
        else:
            i = b.add_input(torch.randint(0, n, (count,), generator=b.gen))
            b.call("call_function", torch.index_select, [_Ref(k), 0, _Ref(i)])
    else:
        _view(draw, b)


def _mutate_input(draw, b: _Builder) -> None:
    """``in<k>.add_(v)`` or ``in<k>.mul_(2)``: the graph writes one of its inputs
    (functionalized into a copy back to the input)."""
    writable = [
        k
        for k, v in enumerate(b.values)
        if b.nodes[k].op == "placeholder"
        and v.is_floating_point()
        and not any(st == 0 and n > 1 for st, n in zip(v.stride(), v.shape))
    ]
    if not writable:
        raise _Reject("no writable input")
    k = draw(st.sampled_from(writable))
    target = b.values[k]

    def fits(w: torch.Tensor) -> bool:
        return (
            w.dtype != torch.bool
            and _broadcasts(target, w)
            and torch.broadcast_shapes(target.shape, w.shape) == target.shape
        )

    if draw(st.booleans()):
        j = _pick(draw, b, fits)
        b.call("call_method", "add_", [_Ref(k), _Ref(j)])
    else:
        b.call("call_method", "mul_", [_Ref(k), 2])


def _broadcasts(v: torch.Tensor, w: torch.Tensor) -> bool:
    try:
        torch.broadcast_shapes(v.shape, w.shape)
    except RuntimeError:
        return False
    return True


def _view(draw, b: _Builder) -> None:
    k = _pick(draw, b)
    v = b.values[k]
    rank = v.dim()
    what = draw(
        st.sampled_from(
            ["transpose", "permute", "reshape", "unsqueeze", "squeeze", "slice", "select"]
            + ["expand", "flip", "flatten", "contiguous"]
        )
    )
    if what == "transpose" and rank >= 2:
        d0, d1 = draw(st.permutations(range(rank)))[:2]
        b.call("call_method", "transpose", [_Ref(k), d0, d1])
    elif what == "permute" and rank >= 2:
        b.call("call_method", "permute", [_Ref(k), *draw(st.permutations(range(rank)))])
    elif what == "reshape" and rank >= 1:
        n = v.numel()
        shapes = [(n,), (-1, v.shape[-1]) if v.shape[-1] else (n,), (1, n)]
        shapes += [(d, n // d) for d in (2, 3, 4) if n % d == 0 and n]
        b.call("call_method", "reshape", [_Ref(k), draw(st.sampled_from(shapes))])
    elif what == "unsqueeze":
        b.call("call_method", "unsqueeze", [_Ref(k), draw(st.integers(0, rank))])
    elif what == "squeeze" and 1 in v.shape:
        b.call("call_method", "squeeze", [_Ref(k), list(v.shape).index(1)])
    elif what == "slice" and rank >= 1:
        d = draw(st.integers(0, rank - 1))
        start = draw(st.integers(0, max(0, v.shape[d] - 1)))
        step = draw(st.sampled_from([1, 2, 3]))
        index = (slice(None),) * d + (slice(start, None, step),)
        b.call("call_function", operator.getitem, [_Ref(k), index], name="slice")
    elif what == "select" and rank >= 1 and v.shape[0] > 0:
        i = draw(st.integers(-v.shape[0], v.shape[0] - 1))
        b.call("call_method", "select", [_Ref(k), 0, i])
    elif what == "expand" and 1 in v.shape:
        sizes = [draw(st.sampled_from([3, 5])) if s == 1 else -1 for s in v.shape]
        b.call("call_method", "expand", [_Ref(k), *sizes])
    elif what == "flip" and rank >= 1:
        b.call("call_method", "flip", [_Ref(k), draw(st.integers(0, rank - 1))])
    elif what == "flatten":
        b.call("call_method", "flatten", [_Ref(k)])
    elif what == "contiguous":
        b.call("call_method", "contiguous", [_Ref(k)])
    else:
        raise _Reject(f"{what} does not apply")


@st.composite
def graphs(draw, max_steps: int = 8) -> Program:
    """A random :class:`Program` (see the module docstring)."""
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    b = _Builder(gen)
    rank = draw(st.integers(1, 4))
    shape = [draw(st.sampled_from(SIZES)) for _ in range(rank)]
    if draw(st.integers(0, 7)) == 0:  # sometimes one long (or empty) dimension
        shape[draw(st.integers(0, rank - 1))] = draw(st.sampled_from(LONG))
        if math.prod(shape) > 20000:
            shape = [s if s in LONG else 1 for s in shape]
    shape = tuple(shape)
    for _ in range(draw(st.integers(1, 3))):
        # Inputs broadcast against the first: some dims 1, maybe fewer dims.
        mine = tuple(s if draw(st.integers(0, 3)) else 1 for s in shape)
        mine = mine[draw(st.integers(0, rank - 1)) if draw(st.integers(0, 3)) == 0 else 0 :]
        dtype = draw(
            st.sampled_from([torch.float32] * 5 + [torch.int64, torch.bool, torch.float16])
        )
        b.add_input(_tensor(draw, gen, mine, dtype))
    steps = draw(st.integers(1, max_steps))
    tries = 0
    while len(b.steps) < steps and tries < 4 * steps:
        tries += 1
        try:
            _step(draw, b)
        except _Reject:
            continue
    if not b.steps:
        from hypothesis import reject

        reject()
    if draw(st.integers(0, 4)) == 0:  # sometimes an input is updated in place
        try:
            _mutate_input(draw, b)
        except _Reject:
            pass
    # Every value nothing reads is an output (no dead code; at most four, the
    # latest), and sometimes one that is also read.
    computed = [n for n in b.nodes if n.op != "placeholder"]
    outs = [n for n in computed if not n.users][-4:]
    read = [n for n in computed if n.users]
    if read and draw(st.booleans()):
        outs.append(read[draw(st.integers(0, len(read) - 1))])
    b.graph.output(tuple(outs))
    gm = torch.fx.GraphModule(torch.nn.Module(), b.graph)
    return Program(gm, b.inputs, draw(st.booleans()), b.steps)


def check(program: Program, split: int = 0, train: bool = False) -> str | None:
    """Compile ``program`` with coil and compare with eager: None when they agree,
    else what went wrong (a difference or the error coil raised). A program
    eager itself rejects is discarded (``hypothesis.reject``). ``split`` N >= 2
    forces ``loop-split-reduction{split=N}`` (the fuzzer's tensors are too
    small for the heuristic to split). ``train``: the floating inputs (but about
    a third, fixed by the program) require gradients, and the gradients of a
    random weighting of the floating outputs (``torch.autograd.grad``) are
    compared too: the joint graph, the forward/backward partition and the
    backward's kernels (a program with no differentiable output, or one eager
    cannot differentiate, is discarded)."""
    from hypothesis import reject

    from coil.backend import coil
    from coil.testing import difference

    # In training about a third of the floating inputs (a choice fixed by the
    # program) need no gradient, as frozen weights and data: the partition then
    # has inputs on both sides. The first floating input always needs one.
    floats = [k for k, t in enumerate(program.inputs) if t.is_floating_point()]
    frozen = {k for k in floats[1:] if (k + len(program.steps)) % 3 == 2}

    def clones(dtype: torch.dtype | None = None) -> list[torch.Tensor]:
        out = []
        for k, t in enumerate(program.inputs):
            c = t.clone() if t.is_contiguous() else _same_layout(t)
            if dtype is not None and c.is_floating_point():
                c = c.to(dtype)  # a contiguous float64 copy: the reference
            if train and c.is_floating_point() and k not in frozen:
                c.requires_grad_(True)
            out.append(c)
        return out

    def run(fn: Callable, inputs: list[torch.Tensor], cotangents: list | None = None):
        """The outputs, and in training the inputs' gradients (zeros where unused)
        of ``sum(out * cotangent)`` over the differentiable outputs."""
        outs = fn(*inputs)
        if not train:
            return outs, None
        flat = list(outs) if isinstance(outs, tuple | list) else [outs]
        diff = [o for o in flat if isinstance(o, torch.Tensor) and o.grad_fn is not None]
        wrt = [t for t in inputs if t.requires_grad]
        if not diff or not wrt:
            return outs, None
        if cotangents is None:
            gen = torch.Generator().manual_seed(len(diff))
            cotangents = [torch.randn(o.shape, generator=gen).to(o.dtype) for o in diff]
        grads = torch.autograd.grad(
            diff, wrt, [c.to(o.dtype) for c, o in zip(cotangents, diff)], allow_unused=True
        )
        grads = [torch.zeros_like(t) if g is None else g for g, t in zip(grads, wrt)]
        detached = [o.detach() if isinstance(o, torch.Tensor) else o for o in flat]
        outs = tuple(detached) if isinstance(outs, tuple | list) else detached[0]
        return outs, (grads, cotangents)

    eager_inputs = clones()
    try:
        # (FX prints the traceback of an error in a generated forward on stderr.)
        with contextlib.redirect_stderr(io.StringIO()):
            expected, eager_grads = run(program.gm, eager_inputs)
    except Exception:
        # Eager rejects the program (an in-place op on an operand that aliases
        # its target, say; in training, an in-place op on a leaf that requires
        # gradients): the generator's slip, not a test of coil.
        reject()
    if train and eager_grads is None:
        reject()  # nothing to differentiate
    cotangents = eager_grads[1] if eager_grads else None
    reference = reference_grads = None
    if any(t.is_floating_point() for t in program.inputs):
        try:
            reference, reference_grads = run(program.gm, clones(torch.float64), cotangents)
        except Exception:
            reference = reference_grads = None

    options: dict[str, Any] = {"fallback": "extern"}
    if split:
        from coil.pipeline import PIPELINES

        default = PIPELINES["default"]
        options["pipeline"] = default.replace(
            "loop-split-reduction,", f"loop-split-reduction{{split={split}}},"
        )

    def backend(gm: torch.fx.GraphModule, inputs: list[Any]) -> Any:
        return coil(gm, inputs, options=options)

    torch._dynamo.reset()
    try:
        compiled = torch.compile(program.gm, backend=backend, dynamic=program.dynamic)
        coil_inputs = clones()
        actual, coil_grads = run(compiled, coil_inputs, cotangents)
    except Exception as e:
        return f"error: {error_line(e)}"
    finally:
        torch._dynamo.reset()
    problem = difference(actual, expected, reference)
    if problem is None and train:
        if coil_grads is None:
            return "gradients: the compiled outputs are not differentiable"
        grads = difference(
            coil_grads[0], eager_grads[0], reference_grads[0] if reference_grads else None
        )
        problem = f"gradients: {grads}" if grads else None
    if problem is None:  # inputs the graph writes must end up as eager leaves them
        detach = [t.detach() for t in coil_inputs], [t.detach() for t in eager_inputs]
        mutated = difference(*detach)
        problem = f"inputs after the call: {mutated}" if mutated else None
    return problem


def error_line(e: BaseException) -> str:
    """``Type: first line`` of an error; for dynamo's BackendCompilerFailed, the
    backend's own error (the line after "raised:")."""
    text = str(e).strip()
    if "raised:" in text:
        text = text.split("raised:", 1)[1].strip()
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return f"{type(e).__name__}: {line}"[:400]


def _same_layout(t: torch.Tensor) -> torch.Tensor:
    """A copy of ``t`` with its strides and storage offset (a broadcast stays one)."""
    storage = t.untyped_storage()
    copy = torch.empty(0, dtype=t.dtype).set_(
        storage.clone(), t.storage_offset(), t.shape, t.stride()
    )
    return copy


def main(argv: Sequence[str] | None = None) -> int:
    from hypothesis import HealthCheck, given, seed, settings
    from hypothesis.errors import UnsatisfiedAssumption

    parser = argparse.ArgumentParser(
        prog="python -m coil.tools.fuzz",
        description="Random FX graphs through torch.compile(backend='coil') against eager",
    )
    parser.add_argument("--graphs", type=int, default=200, help="how many graphs to check")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed")
    parser.add_argument("--max-steps", type=int, default=8, help="ops per graph (at most)")
    parser.add_argument(
        "--split",
        type=int,
        default=0,
        help="force every reduction over at least N elements into N chunks "
        "(loop-split-reduction{split=N}), so split reductions get fuzzed",
    )
    parser.add_argument(
        "--train",
        action="store_true",
        help="floating inputs require gradients; compare the inputs' gradients "
        "(forward, partition, backward) as well as the outputs",
    )
    args = parser.parse_args(argv)
    if args.split == 1 or args.split < 0:
        parser.error("--split: 0 (the heuristic) or at least 2")
    failures: list[tuple[Program, str]] = []
    checked = 0
    start = time.monotonic()

    @seed(args.seed)
    @settings(
        max_examples=args.graphs,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(graphs(args.max_steps))
    def run(program: Program) -> None:
        nonlocal checked
        checked += 1
        try:
            problem = check(program, args.split, args.train)
        except UnsatisfiedAssumption:  # eager rejects it: hypothesis draws another
            checked -= 1
            raise
        except Exception:  # the harness itself failed: report, go on
            problem = "harness: " + traceback.format_exc(limit=2)
        if problem is not None:
            failures.append((program, problem))
            print(f"\n--- failure {len(failures)} (graph {checked}): {problem}", flush=True)
            print(program.describe(), flush=True)
        if checked % 50 == 0:
            elapsed = time.monotonic() - start
            print(
                f"[{checked} graphs, {len(failures)} failures, {elapsed:.0f}s]",
                file=sys.stderr,
                flush=True,
            )

    run()
    elapsed = time.monotonic() - start
    print(f"\n{checked} graphs checked in {elapsed:.0f}s: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
