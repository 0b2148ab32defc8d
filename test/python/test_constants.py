"""Parameter-only work computed once per parameter version
(``buffer-hoist-constants``, ``runtime/wrapper.py``'s ``ConstantCache``).

A weight scaled before a product is stored on every call (the product's extern
reads it) and reads a parameter alone: in an inference graph it moves into the
wrapper's constants function. These tests count how often that function runs:
once for repeated calls; again after an in-place update of the weight (an
optimizer-style ``mul_``, ``load_state_dict``, ``.data =``); never in a
training graph (no constants function). The IR forms are in
test/transforms/buffer-hoist-constants.mlir and
test/targets/python/constants.mlir."""

from __future__ import annotations

import copy
import gc

import pytest
import torch

from coil.runtime import wrapper
from coil.testing import assert_close_to_eager


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(24, 16))
        self.b = torch.nn.Parameter(torch.randn(24))

    def forward(self, x):
        return torch.relu(x @ (self.w * 2).t() + self.b)


@pytest.fixture
def runs(monkeypatch):
    """How many times a constants function ran (all caches of the process)."""
    count = {"n": 0}
    real = wrapper.ConstantCache.run

    def counted(self, inputs):
        count["n"] += 1
        return real(self, inputs)

    monkeypatch.setattr(wrapper.ConstantCache, "run", counted)
    return count


def _compiled(model):
    torch._dynamo.reset()
    return torch.compile(model, backend="coil")


def test_computed_once_then_again_after_each_update(runs):
    model = Scaled().eval()
    compiled = _compiled(model)
    x = torch.randn(5, 16)
    with torch.no_grad():
        assert_close_to_eager(compiled(x), model(x))
        assert runs["n"] == 1
        for _ in range(3):  # nothing changed: the cache answers
            assert_close_to_eager(compiled(x), model(x))
        assert runs["n"] == 1
        model.w.mul_(-3)  # an in-place update (an optimizer step's kind)
        assert_close_to_eager(compiled(x), model(x))
        assert runs["n"] == 2
        model.load_state_dict(Scaled().state_dict())
        assert_close_to_eager(compiled(x), model(x))
        assert runs["n"] == 3
        model.w.data = torch.randn(24, 16)  # keeps the version, not the storage
        assert_close_to_eager(compiled(x), model(x))
        assert runs["n"] == 4
        model.b.add_(1)  # a parameter the constants function does not read
        assert_close_to_eager(compiled(x), model(x))
        assert runs["n"] == 4


def test_the_wrapper_reads_the_weight_through_the_cache(tmp_path):
    torch._dynamo.reset()
    model = Scaled().eval()
    compiled = torch.compile(model, backend="coil", options={"dump_dir": str(tmp_path)})
    with torch.no_grad():
        compiled(torch.randn(5, 16))
    (source,) = [p.read_text() for p in tmp_path.glob("*/wrapper.py")]
    assert "def constants(args):" in source and "= _constants.get((" in source
    (hoisted,) = tmp_path.glob("*/*-buffer-hoist-constants.mlir")
    assert "coil.constants = @forward_constants" in hoisted.read_text()


def test_two_models_of_one_code_keep_their_own_results(runs):
    """Two instances compile to the same wrapper (one code-cache module, one
    ConstantCache): entries are per set of inputs, so alternating calls compute
    each model's results once."""
    a, b = Scaled().eval(), Scaled().eval()
    torch._dynamo.reset()
    ca, cb = torch.compile(a, backend="coil"), torch.compile(b, backend="coil")
    x = torch.randn(5, 16)
    with torch.no_grad():
        for _ in range(2):
            assert_close_to_eager(ca(x), a(x))
            assert_close_to_eager(cb(x), b(x))
    assert runs["n"] == 2


def test_a_second_compile_reuses_the_entries(runs):
    """Compiling the same model again (after a reset) loads the same wrapper
    module: its entries for the same parameters at the same versions are still
    valid, so the constants function does not run again; an update does."""
    model = Scaled()
    x = torch.randn(5, 16)
    with torch.no_grad():
        for expected in (1, 0):
            runs["n"] = 0
            compiled = _compiled(model)
            for _ in range(2):
                assert_close_to_eager(compiled(x), model(x))
            assert runs["n"] == expected
        model.w.mul_(-1)
        assert_close_to_eager(compiled(x), model(x))
        assert runs["n"] == 1


def test_an_entry_goes_with_its_parameters():
    calls = []
    cache = wrapper.ConstantCache(lambda args: calls.append(1) or [args[0] * 2], (0,))
    w = torch.randn(4)
    (first,) = cache.get([w])
    assert cache.get([w])[0] is first and len(calls) == 1
    with torch.no_grad():
        w.add_(1)
    (again,) = cache.get([w])
    # Recomputed into the tensor returned before (a CUDA graph keeps reading it).
    assert again is first and len(calls) == 2
    torch.testing.assert_close(again, w * 2)
    del w
    gc.collect()
    assert not cache.entries


def test_inference_tensors_are_computed_every_call():
    """Inference tensors keep no version counter: nothing can tell an update."""
    calls = []
    cache = wrapper.ConstantCache(lambda args: calls.append(1) or [args[0] + 1], (0,))
    with torch.inference_mode():
        w = torch.randn(4)
        cache.get([w])
        w.mul_(2)
        (out,) = cache.get([w])
        torch.testing.assert_close(out, w + 1)
    assert len(calls) == 2


def test_training_graphs_have_no_constants_function(runs, tmp_path):
    torch._dynamo.reset()
    model = Scaled()
    compiled = torch.compile(model, backend="coil", options={"dump_dir": str(tmp_path)})
    x = torch.randn(5, 16)
    compiled(x).sum().backward()
    grad = model.w.grad.clone()
    model.w.grad = None
    model(x).sum().backward()
    assert_close_to_eager(grad, model.w.grad)
    assert runs["n"] == 0
    for source in tmp_path.glob("*/wrapper.py"):
        assert "ConstantCache" not in source.read_text()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_weights_padded_and_copied_once_and_replayed(runs, tmp_path):
    """On a GPU the per-call transforms this pass exists for: a 1003-wide head
    on 16 rows (under MIN_ROWS: padded only because the pad is computed once)
    and channels-last convolution weights; under CUDA graphs a weight updated
    in place is computed from again before the replay."""

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(16, 64, 3, padding=1)
            self.head = torch.nn.Linear(64, 1003)

        def forward(self, x):
            return self.head(self.conv(x).mean((2, 3)))

    base = Net().cuda().eval().to(torch.bfloat16)
    x = torch.randn(16, 16, 16, 16, device="cuda", dtype=torch.bfloat16)
    for cudagraphs in (False, True):
        # A model of its own per compile: both compiles load the same wrapper
        # module, whose entries for the same parameters at the same versions
        # would be reused (0 runs; test_a_second_compile_reuses_the_entries).
        model = copy.deepcopy(base)
        torch._dynamo.reset()
        runs["n"] = 0
        options = {"dump_dir": str(tmp_path / str(cudagraphs)), "cudagraphs": cudagraphs}
        compiled = torch.compile(model, backend="coil", options=options)
        with torch.no_grad():
            for _ in range(3):
                torch.testing.assert_close(compiled(x), model(x), rtol=2e-2, atol=2e-2)
            dumped = [p.read_text() for p in (tmp_path / str(cudagraphs)).glob("*/wrapper.py")]
            assert runs["n"] == 1, f"constants ran {runs['n']} times; wrappers: {dumped}"[:6000]
            model.head.weight.mul_(-1)
            model.conv.weight.mul_(0.5)
            torch.testing.assert_close(compiled(x), model(x), rtol=2e-2, atol=2e-2)
            assert runs["n"] == 2
        (source,) = [p.read_text() for p in (tmp_path / str(cudagraphs)).glob("*/wrapper.py")]
        constants = source.split("def call(args):")[0]
        assert "aten.cat" in constants or "torch.cat" in constants
