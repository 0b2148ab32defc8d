"""The backend's ``partition`` option (coil/frontend/partition.py): what each
setting makes the forward save, and gradients against eager under each."""

from __future__ import annotations

import copy

import pytest
import torch

import coil.backend
from coil.frontend.capture import capture_training
from coil.frontend.partition import check, partition_function


def _conv_bn_relu():
    torch.manual_seed(0)
    m = torch.nn.Sequential(
        torch.nn.Conv2d(4, 4, 3, padding=1, bias=False),
        torch.nn.BatchNorm2d(4),
        torch.nn.ReLU(),
        torch.nn.Conv2d(4, 4, 3, padding=1, bias=False),
        torch.nn.BatchNorm2d(4),
        torch.nn.ReLU(),
    )
    return m.train(), (torch.randn(2, 4, 8, 8, requires_grad=True),)


def _saved(setting: str, autocast=None) -> tuple[int, list[str]]:
    module, inputs = _conv_bn_relu()
    (graphs,) = capture_training(
        module, inputs, autocast=autocast, partition_fn=partition_function(setting)
    )
    return graphs.saved_bytes(), [n.name for n in graphs.saved_activations()]


def test_each_setting_saves_less_than_the_one_before():
    """save-all keeps every value the backward reads (the batch norms' outputs,
    the ReLU masks); min-cut recomputes the pointwise chains from the
    convolutions' outputs and the statistics; aggressive recomputes more; a
    budget of 0 keeps at most what min-cut does, and a budget of 1 is min-cut."""
    save_all, _ = _saved("save-all")
    min_cut, names = _saved("min-cut")
    aggressive, _ = _saved("aggressive")
    budget0, _ = _saved("budget=0")
    assert save_all > min_cut > aggressive, (save_all, min_cut, aggressive)
    assert budget0 <= aggressive, (budget0, aggressive)
    assert _saved("budget=1") == (min_cut, names)
    assert any("convolution" in n for n in names), names


def test_settings_hold_under_autocast():
    assert _saved("save-all", torch.bfloat16)[0] > _saved("min-cut", torch.bfloat16)[0]


def test_the_default_is_torchs_min_cut_partitioner(monkeypatch):
    """The default runs torch's min-cut partitioner (after the joint graph's
    aliases are removed)."""
    import torch._functorch.partitioners as partitioners

    calls = []
    real = partitioners.min_cut_rematerialization_partition

    def recording(*args, **kwargs):
        calls.append(True)
        return real(*args, **kwargs)

    monkeypatch.setattr(partitioners, "min_cut_rematerialization_partition", recording)
    partition_function.cache_clear()
    try:
        module, inputs = _conv_bn_relu()
        capture_training(module, inputs)  # the backend's default
        assert len(calls) == 1
        _saved("min-cut")
    finally:
        partition_function.cache_clear()
    assert len(calls) == 2


@pytest.mark.parametrize(
    "setting, words",
    [
        ("nope", "must be one of 'min-cut', 'save-all', 'aggressive', 'budget=F', not 'nope'"),
        ("budget=1.5", "the budget must be a number from 0 to 1"),
        ("budget=x", "the budget must be a number from 0 to 1"),
        (3, "must be a string"),
    ],
)
def test_a_wrong_setting_is_a_sentence(setting, words):
    with pytest.raises(ValueError, match="coil: option partition") as e:
        check(setting)
    assert words in str(e.value)
    torch._dynamo.reset()
    f = torch.compile(torch.sin, backend="coil", options={"partition": setting})
    with pytest.raises(Exception, match="option partition"):
        f(torch.randn(4, requires_grad=True))


@pytest.mark.parametrize("setting", ["save-all", "aggressive", "budget=0"])
def test_gradients_match_eager_under_each_setting(setting, monkeypatch):
    """The backend partitions with the setting given (recorded), and the
    gradients are eager's."""
    used = []
    real = coil.backend.partition_function

    def recording(name):
        used.append(name)
        return real(name)

    monkeypatch.setattr(coil.backend, "partition_function", recording)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.GELU(approximate="tanh"), torch.nn.LayerNorm(32)
    )
    eager = copy.deepcopy(model)
    x = torch.randn(8, 16)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="coil", options={"partition": setting})
    compiled(x).square().mean().backward()
    eager(x).square().mean().backward()
    assert used == [setting]
    for (name, p), q in zip(model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=name)


class _LlamaBlock(torch.nn.Module):
    """A Llama-style layer: RMSNorm, rotary embeddings, grouped-query causal
    attention (SDPA with enable_gqa), SwiGLU."""

    def __init__(self, d=32, heads=4, kv=2, ff=64, seq=8):
        super().__init__()
        self.h, self.kv, self.hd = heads, kv, d // heads
        self.n1 = torch.nn.Parameter(torch.ones(d))
        self.n2 = torch.nn.Parameter(torch.ones(d))
        self.q = torch.nn.Linear(d, d, bias=False)
        self.k = torch.nn.Linear(d, kv * self.hd, bias=False)
        self.v = torch.nn.Linear(d, kv * self.hd, bias=False)
        self.o = torch.nn.Linear(d, d, bias=False)
        self.gate = torch.nn.Linear(d, ff, bias=False)
        self.up = torch.nn.Linear(d, ff, bias=False)
        self.down = torch.nn.Linear(ff, d, bias=False)
        inv = 10000 ** (torch.arange(0, self.hd, 2).float() / self.hd)
        t = torch.arange(seq).float()[:, None] / inv
        self.register_buffer("cos", torch.cat((t, t), -1).cos(), persistent=False)
        self.register_buffer("sin", torch.cat((t, t), -1).sin(), persistent=False)

    @staticmethod
    def norm(x, w):
        return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))

    def rope(self, x):
        a, b = x.chunk(2, -1)
        return x * self.cos + torch.cat((-b, a), -1) * self.sin

    def forward(self, x):
        b, s, _ = x.shape
        h = self.norm(x, self.n1)
        q = self.rope(self.q(h).view(b, s, self.h, self.hd).transpose(1, 2))
        k = self.rope(self.k(h).view(b, s, self.kv, self.hd).transpose(1, 2))
        v = self.v(h).view(b, s, self.kv, self.hd).transpose(1, 2)
        a = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=True, enable_gqa=True
        )
        x = x + self.o(a.transpose(1, 2).reshape(b, s, -1))
        h = self.norm(x, self.n2)
        return x + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))


def _inductor_partition(module, inputs):
    """Inductor's forward and backward of one step (its joint-graph passes and
    partitioner; the graphs are run as they are, nothing is compiled)."""
    import functools

    from torch._functorch.aot_autograd import make_boxed_func
    from torch._inductor.compile_fx import compile_fx

    from coil.frontend.capture import TrainingGraphs

    graphs: dict[bool, list] = {False: [], True: []}

    def inner(gm, example_inputs, **kwargs):
        graphs[bool(kwargs.get("is_backward"))].append(gm)
        return make_boxed_func(gm.forward)

    torch._dynamo.reset()
    backend = functools.partial(compile_fx, inner_compile=inner)
    torch.compile(module, backend=backend, fullgraph=True)(*inputs).sum().backward()
    torch._dynamo.reset()
    return [TrainingGraphs(f, b) for f, b in zip(graphs[False], graphs[True])]


def test_llama_block_saves_no_more_than_inductors_partition():
    """Autograd saves the attention's output for its backward through an
    ``aten.alias``; to the min-cut the alias was another node, and the forward
    saved the output-projection's input (the same values, transposed and
    copied) beside it: 8 KiB more than Inductor here, the attention output
    twice. The aliases are removed before the cut, as Inductor does."""
    torch.manual_seed(0)
    block = _LlamaBlock()
    x = torch.randn(2, 8, 32, requires_grad=True)
    (coil_graphs,) = capture_training(block, (x,))
    (inductor_graphs,) = _inductor_partition(block, (x,))
    assert coil_graphs.saved_bytes() <= inductor_graphs.saved_bytes(), (
        [n.name for n in coil_graphs.saved_activations()],
        [n.name for n in inductor_graphs.saved_activations()],
    )
    attention = [
        n
        for n in coil_graphs.saved_activations()
        if tuple(n.meta["val"].shape) == (2, 4, 8, 8)
        and coil_graphs.producer(n).target is not torch.ops.aten.add.Tensor
    ]
    assert len(attention) == 1, [n.name for n in attention]


def test_remove_noop_aliases_keeps_a_returned_alias_of_an_input():
    def f(x):
        return torch.ops.aten.alias.default(x), torch.ops.aten.alias.default(x).sin()

    gm = torch.fx.symbolic_trace(f)
    from coil.frontend.partition import remove_noop_aliases

    assert remove_noop_aliases(gm) == 1
    x = torch.randn(3)
    a, b = gm(x)
    assert a is not x and a.data_ptr() == x.data_ptr()
    torch.testing.assert_close(b, x.sin())


def test_llama_block_gradients_match_eager():
    torch.manual_seed(0)
    block = _LlamaBlock()
    eager = copy.deepcopy(block)
    x = torch.randn(2, 8, 32)
    torch._dynamo.reset()
    compiled = torch.compile(block, backend="coil")
    compiled(x).square().mean().backward()
    eager(x).square().mean().backward()
    for (name, p), q in zip(block.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=name)


@pytest.mark.parametrize("kernels", ["cpp", "triton"])
def test_a_recomputed_value_a_comparison_reads_is_the_forwards(kernels, monkeypatch):
    # amax's backward finds the maximum with x == amax(x). Recomputed in the
    # backward, tanh(x) / exp(x) differed from the forward's in the last bit
    # where one C++ kernel ran it in a vectorized loop (glibc's vector math)
    # and the other in a scalar tail: the maximum matched nothing and lost its
    # gradient, in 38 of 60 random inputs (found by fuzz --train). The operands
    # of equality comparisons are saved, never recomputed.
    monkeypatch.setenv("COIL_CPU_KERNELS", kernels)

    def fn(x):
        return torch.tanh(x).amax(0, keepdim=True), torch.exp(x).amax(-1)

    compiled = torch.compile(fn, backend="coil", options={"fallback": "extern"})
    for seed, n in enumerate((300, 77, 1025, 33, 300, 77)):
        torch.manual_seed(seed)
        x = torch.randn(n, requires_grad=True)
        ref = x.detach().clone().requires_grad_(True)
        sum(t.sum() for t in compiled(x)).backward()
        sum(t.sum() for t in fn(ref)).backward()
        torch.testing.assert_close(x.grad, ref.grad, atol=1e-6, rtol=1e-4)


def test_compared_values_are_saved_not_recomputed():
    from torch.utils.checkpoint import CheckpointPolicy

    from coil.frontend.partition import save_compared_values

    def joint_like(x, m):
        t = torch.tanh(x)
        return torch.ops.aten.eq.Tensor(t, m), torch.ops.aten.ne.Tensor(x, m), t.sin()

    gm = torch.fx.symbolic_trace(joint_like)
    # tanh only: the placeholders x and m are inputs, nothing to recompute.
    assert save_compared_values(gm) == 1
    marked = {n.name: n.meta.get("recompute") for n in gm.graph.nodes}
    assert marked["tanh"] == CheckpointPolicy.MUST_SAVE
    assert marked["sin"] is None and marked["x"] is None


def test_a_value_read_only_by_full_like_leaves_no_dead_nest():
    # The backward of rms_norm(floor(x)): floor's gradient is zeros_like of the
    # norm's input gradient, so that gradient's nests had no reader left at the
    # loop level; they stayed as a fusion group yielding nothing and the
    # lowering refused it (fuzz --train, seed 7). dce now drops them.
    def fn(x):
        return torch.nn.functional.rms_norm(torch.floor(x), [1], None)

    compiled = torch.compile(fn, backend="coil", options={"fallback": "extern"})
    x = torch.randn(2, 1, 1, 1, requires_grad=True)
    compiled(x).sum().backward()
    assert torch.equal(x.grad, torch.zeros_like(x))
