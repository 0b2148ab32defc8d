"""The online softmax of convert-loop-to-tt: a looped row's sum of exp(x - max)
accumulated next to the running max (rescaled as it grows), against eager on
the CPU (Triton's interpreter). Rows are forced to loop (a persistent
threshold of 16, RBLOCK 8) so the small sizes here take the looped path; the
odd widths leave a masked last chunk."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from coil.pipeline import PIPELINES

LOOPED = PIPELINES["default"].replace(
    "convert-loop-to-tt", "convert-loop-to-tt{persistent-threshold=16 rblock=8}"
)


def _compile(fn, dynamic=False, pipeline=LOOPED):
    torch._dynamo.reset()
    options = {"pipeline": pipeline, "cache": False, "fallback": "error"}
    return torch.compile(fn, backend="coil", options=options, dynamic=dynamic)


CASES = {
    "softmax": (lambda x: torch.softmax(x, -1), lambda: (torch.randn(5, 37),)),
    "log_softmax": (lambda x: torch.log_softmax(x, -1), lambda: (torch.randn(7, 50) * 10,)),
    "softmax_of_transposed": (lambda x: torch.softmax(x.t(), -1), lambda: (torch.randn(33, 5),)),
    "softmax_bf16": (
        lambda x: torch.softmax(x, -1),
        lambda: (torch.randn(3, 40, dtype=torch.bfloat16),),
    ),
    "cross_entropy": (
        lambda x, t: F.cross_entropy(x, t),
        lambda: (torch.randn(6, 45), torch.randint(0, 45, (6,))),
    ),
    "large_values": (lambda x: torch.softmax(x, -1), lambda: (torch.randn(4, 29) * 300,)),
    "inf_rows": (
        lambda x: torch.softmax(x, -1),
        lambda: (
            torch.tensor(
                [[float("-inf")] * 20, [1.0] * 19 + [float("-inf")], [float("inf")] + [0.0] * 19]
            ),
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_looped_rows_match_eager(name):
    fn, make = CASES[name]
    args = make()
    torch.testing.assert_close(_compile(fn)(*args), fn(*args), equal_nan=True)


def test_dynamic_widths_match_eager():
    fn = lambda x: torch.log_softmax(x, -1)  # noqa: E731
    compiled = _compile(fn, dynamic=True)
    for shape in ((4, 23), (6, 41), (3, 100)):
        x = torch.randn(shape)
        torch.testing.assert_close(compiled(x), fn(x))


def test_one_loop_fewer_than_phases():
    """Softmax's looped kernel: two row loops online (max with sum; stores), three
    with online-softmax=false."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from coil.backend import compile_graph

    x = torch.randn(5, 37)
    gm = make_fx(lambda x: torch.softmax(x, -1))(x)
    online = compile_graph(gm, [x], pipeline=LOOPED, cache=False).coil_source
    phases = LOOPED.replace("rblock=8}", "rblock=8 online-softmax=false}")
    plain = compile_graph(gm, [x], pipeline=phases, cache=False).coil_source
    assert online.count("for roffset") == 2 and plain.count("for roffset") == 3
