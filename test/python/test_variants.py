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
