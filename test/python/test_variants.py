"""Kernel variants over ranges of a symbolic size (``strategy/variants.py``,
``host.variants``): one ``dynamic=True`` compile of a softmax over a dynamic
row, called with rows in different buckets, runs the persistent kernel for
short rows and the looped one for long rows, and matches eager at each."""

import pytest
import torch

from coil.runtime.launch import Launcher
from coil.testing import assert_close_to_eager


@pytest.fixture
def launched(monkeypatch):
    """The kernels each launch ran, by name (every Launcher records itself)."""
    names: list[str] = []
    bind = Launcher.bind

    def recording_bind(self):
        bind(self)
        inner, name = self.run, self.name
        if getattr(inner, "records", False):
            return

        def run(*args):
            names.append(name)
            return inner(*args)

        run.records = True
        self.run = run

    monkeypatch.setattr(Launcher, "bind", recording_bind)
    return names


def test_rows_run_the_variant_of_their_bucket(launched):
    def f(x):
        return torch.softmax(x * 1.5, -1)

    # The Triton kernels (under the interpreter here): the variants are theirs.
    compiled = torch.compile(f, backend="coil", dynamic=True, options={"cpu_kernels": "triton"})
    ran = {}
    for n in (300, 2000, 5000):  # <= 4096: the persistent kernel; past it: looped
        launched.clear()
        x = torch.randn(3, n)
        assert_close_to_eager(compiled(x), f(x))
        ran[n] = list(launched)
    (short,) = ran[300]
    assert short.endswith("_r4096"), ran
    assert ran[2000] == ran[300], ran
    (long,) = ran[5000]
    assert not long.endswith("_r4096") and long == short.removesuffix("_r4096"), ran


def test_renumbered_kernels_avoid_the_variants_names():
    """A dynamic argmin's looped variant keeps its lowering name; a later argmin
    renumbered by the kernel dedupe must not take it (it did: "Redefinition of
    symbol coil_argmin_3", a graph of coil.tools.fuzz)."""

    def f(x):
        cumsum = torch.cumsum(x, 2)
        clamp = torch.clamp(x, 0, 2)
        softmax = torch.softmax(clamp, 0)
        return (
            torch.cumsum(cumsum, 0),
            clamp.argmin(1, keepdim=True),
            torch.maximum(x, softmax),
            cumsum.argmin(0),
        )

    compiled = torch.compile(
        f, backend="coil", dynamic=True, options={"cpu_kernels": "triton", "fallback": "extern"}
    )
    for shape in ((3, 4, 8), (5, 3, 7)):
        x = torch.randn(*shape).permute(2, 1, 0)
        for got, want in zip(compiled(x), f(x)):
            assert_close_to_eager(got, want)
