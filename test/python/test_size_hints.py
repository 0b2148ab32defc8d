"""Size hints (``strategy/hints.py``): the importer records the example sizes of a
dynamic graph's symbols, and the strategy's numbers use them."""

import sympy
import torch
from xdsl.dialects import func

import coil
from coil.dialects.symbolic import symbol
from coil.strategy import hints, plan
from coil.strategy.hints import SIZE_HINTS_ATTR, read_size_hints
from coil.transforms import loop_cost


def _forward(module):
    return next(op for op in module.ops if isinstance(op, func.FuncOp))


def test_importer_records_the_example_sizes():
    def f(x, y):
        return (x.softmax(-1) + y).sum(0)

    module = coil.import_module(f, (torch.randn(6, 40), torch.randn(40)), dynamic=True)
    fn = _forward(module)
    got = read_size_hints(fn)
    symbols = {a.data["coil.symbol"].data for a in fn.arg_attrs.data if "coil.symbol" in a.data}
    assert set(got) == symbols, (got, symbols)
    assert sorted(got.values()) == [6, 40]
    # The hints print and parse back with the function.
    assert f"{SIZE_HINTS_ATTR} = " in str(module)


def test_static_graph_has_no_hints():
    module = coil.import_module(lambda x: x.sum(1), (torch.randn(6, 40),), dynamic=False)
    assert SIZE_HINTS_ATTR not in _forward(module).attributes


def test_hints_in_force_replace_the_constants():
    s0, s1 = symbol("s0"), symbol("s1")
    e = s0 * s1 + 1
    assert plan.hint(e) == plan.SIZE_HINT**2 + 1
    assert loop_cost.estimate(e) == loop_cost.SIZE_HINT**2 + 1
    with hints.using({s0: 8}):
        # s1 has no hint: the caller's constant stands in for it.
        assert plan.hint(e) == 8 * plan.SIZE_HINT + 1
        assert loop_cost.estimate(e) == 8 * loop_cost.SIZE_HINT + 1
        assert hints.substitute(e, 3) == sympy.Integer(25)
    assert hints.current() == {}
