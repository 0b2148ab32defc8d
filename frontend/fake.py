"""FakeTensors for IR types, symbolic sizes included.

Passes that ask torch about an op (trace a decomposition, infer a result type)
need FakeTensors shaped like the op's operands. :class:`FakeEnv` makes them on
its own ShapeEnv, creating one torch symbol per IR size symbol (with distinct
prime hints, so no two are unified by duck sizing and none is specialized to
0 or 1), and remembers how to map torch's symbols back to the IR's.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import sympy
import torch
from torch._dynamo.source import ConstantSource
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv
from torch.utils._sympy.functions import FloorDiv, PythonMod
from torch.utils._sympy.functions import Max as TorchMax
from torch.utils._sympy.functions import Min as TorchMin

from coil.dialects.aten import TensorType
from coil.dialects.symbolic import SymInt

_HINTS = (17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97)


class FakeEnv:
    def __init__(self) -> None:
        self.shape_env = ShapeEnv()
        self.mode = FakeTensorMode(shape_env=self.shape_env, allow_non_fake_inputs=True)
        self._symints: dict[sympy.Symbol, torch.SymInt] = {}
        self.back_to_ir: dict[sympy.Symbol, sympy.Symbol] = {}
        self._hints = itertools.chain(_HINTS, itertools.count(101, 2))

    def _symbol(self, sym: sympy.Symbol) -> torch.SymInt:
        if sym not in self._symints:
            hint = next(self._hints)
            torch_sym = self.shape_env.create_symbol(hint, source=ConstantSource(sym.name))
            self._symints[sym] = self.shape_env.create_symintnode(torch_sym, hint=hint)
            self.back_to_ir[torch_sym] = sym
        return self._symints[sym]

    def symint(self, expr: SymInt) -> int | torch.SymInt:
        """An int or a SymInt computing ``expr`` over this env's symbols."""
        if isinstance(expr, int):
            return expr
        if expr.is_Integer:
            return int(expr)
        if expr.is_Symbol:
            return self._symbol(expr)
        args = [self.symint(a) for a in expr.args]
        if isinstance(expr, sympy.Add):
            return sum(args[1:], args[0])
        if isinstance(expr, sympy.Mul):
            out = args[0]
            for a in args[1:]:
                out = out * a
            return out
        if isinstance(expr, sympy.Pow):
            return args[0] ** args[1]
        if isinstance(expr, FloorDiv):
            return args[0] // args[1]
        if isinstance(expr, PythonMod):
            return args[0] % args[1]
        if isinstance(expr, sympy.Max | TorchMax):
            return functools.reduce(torch.sym_max, args)
        if isinstance(expr, sympy.Min | TorchMin):
            return functools.reduce(torch.sym_min, args)
        raise TypeError(f"cannot build a SymInt for {expr}")

    def python_value(self, value: Any) -> Any:
        """An op argument with sympy sizes turned into SymInts (tuples into lists)."""
        if isinstance(value, sympy.Expr):
            return self.symint(value)
        if isinstance(value, tuple | list):
            return [self.python_value(v) for v in value]
        return value

    def fake_tensor(self, ty: TensorType) -> torch.Tensor:
        sizes = [self.symint(d) for d in ty.shape]
        strides = [self.symint(s) for s in ty.strides]
        with self.mode:
            return torch.empty_strided(sizes, strides, dtype=ty.dtype, device=ty.device)
