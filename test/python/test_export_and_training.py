"""torch.export archives with dynamic sizes, and training through the backend."""

from __future__ import annotations

import copy

import pytest
import torch
from torch.export import Dim

from coil.examples.models import build
from coil.frontend.export import exported_inputs, load_exported_program
from coil.ir import parse_module, print_module
from coil.runtime.aten_executor import run_module


def test_pt2_with_a_dynamic_batch_runs_on_other_sizes(tmp_path):
    model, (x,) = build("gpt2_block")
    model.eval()
    ep = torch.export.export(model, (x,), dynamic_shapes=({0: Dim("batch")},))
    path = tmp_path / "block.pt2"
    torch.export.save(ep, str(path))
    module = load_exported_program(str(path))
    text = print_module(module)
    assert print_module(parse_module(text)) == text
    assert "!aten.tensor<[s" in text  # the batch is a symbol
    with torch.no_grad():
        for batch in (1, 3):
            y = torch.randn(batch, 16, 32)
            (out,) = run_module(module, exported_inputs(ep, [y]))
            torch.testing.assert_close(out, model(y))


def test_training_gradients_match_eager():
    """AOTAutograd compiles the backward graph with coil too."""
    model, (x,) = build("gpt2_block")
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, backend="coil")
    compiled(x).square().mean().backward()
    eager(x).square().mean().backward()
    for (name, p), (_, q) in zip(model.named_parameters(), eager.named_parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=name)


def test_training_through_fused_attention_matches_eager():
    """F.scaled_dot_product_attention trains through the CPU flash kernel, whose
    backward reads the forward's logsumexp: the forward must not be decomposed
    (it was, and the gradients before attention were wrong)."""

    class SdpaBlock(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = torch.nn.Linear(32, 96)
            self.proj = torch.nn.Linear(32, 32)

        def forward(self, x):
            q, k, v = self.qkv(x).view(2, 16, 3, 4, 8).permute(2, 0, 3, 1, 4)
            y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.proj(y.transpose(1, 2).reshape(2, 16, 32))

    torch.manual_seed(0)
    model = SdpaBlock()
    eager = copy.deepcopy(model)
    x = torch.randn(2, 16, 32)
    torch.compile(model, backend="coil")(x).square().mean().backward()
    eager(x).square().mean().backward()
    for (name, p), (_, q) in zip(model.named_parameters(), eager.named_parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=name)


def test_training_step_is_boxed_and_does_not_warn():
    """coil's compiled graphs take AOTAutograd's boxed arguments (the caller's
    list, cleared): no "doesn't take boxed arguments" warning in training."""
    import warnings

    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    eager = copy.deepcopy(model)
    x = torch.randn(5, 8)
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.compile(model, backend="coil")(x).square().mean().backward()
    assert not [w for w in caught if "boxed" in str(w.message)]
    eager(x).square().mean().backward()
    for p, q in zip(model.parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)


def test_min_cut_partition_recomputes_pointwise_in_the_backward():
    """As Inductor: the forward saves its input, not the pointwise intermediates
    (the backward recomputes sin/mul, which coil fuses into its kernels)."""
    from coil.frontend.capture import aot_backend

    graphs = []

    def keep(gm, inputs):
        graphs.append(gm)
        return gm

    def f(x):
        return torch.tanh(torch.cos(torch.sin(x) * 2)).sum()

    x = torch.randn(16, requires_grad=True)
    torch._dynamo.reset()
    torch.compile(f, backend=aot_backend(keep))(x).backward()
    fw, bw = graphs
    (output,) = [n for n in fw.graph.nodes if n.op == "output"]
    saved = [str(a) for a in output.args[0][1:]]
    assert saved == ["primals_1"], saved
    torch.testing.assert_close(x.grad, torch.func.grad(f)(x.detach()))


def test_training_saves_softmax_statistics_not_its_output():
    """As Inductor: a training graph's log-softmax is decomposed before the
    partition, so the forward saves the logits' row max and log-sum (and the
    logits, an input) instead of a logits-sized log-softmax; inference graphs
    keep the op whole. The gradients match eager through coil."""
    from coil.frontend.capture import aot_backend

    graphs = []

    def keep(gm, inputs):
        graphs.append(gm)
        return gm

    def f(logits, target):
        return torch.nn.functional.cross_entropy(logits, target)

    logits = torch.randn(8, 50, requires_grad=True)
    target = torch.randint(0, 50, (8,))
    torch._dynamo.reset()
    torch.compile(f, backend=aot_backend(keep))(logits, target).backward()
    fw, _ = graphs
    (output,) = [n for n in fw.graph.nodes if n.op == "output"]
    saved = [a.meta["val"] for a in output.args[0][1:] if isinstance(a, torch.fx.Node)]
    big = [s.shape for s in saved if s.numel() == logits.numel()]
    assert big == [logits.shape], f"saved: {[s.shape for s in saved]}"  # the input only
    names = {str(n.target) for n in fw.graph.nodes}
    assert "aten._log_softmax.default" not in names

    graphs.clear()
    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(f, backend=aot_backend(keep))(logits, target)
    assert "aten._log_softmax.default" in {str(n.target) for n in graphs[0].graph.nodes}

    torch._dynamo.reset()
    x = logits.detach().clone().requires_grad_()
    torch.compile(f, backend="coil")(x, target).backward()
    expected = torch.func.grad(f)(logits.detach(), target)
    torch.testing.assert_close(x.grad, expected)


@pytest.mark.triton_kernels  # reads the Triton kernel's text (the C++ scatter: test_cpu_kernels)
def test_embedding_backward_accumulates_in_place(tmp_path):
    """The embedding's backward (index_put of the gradient rows into zeros) is
    coil's loop.scatter adding atomically into the zeros' own buffer (bufferize
    copies nothing: the zeros are read by the scatter alone); repeated ids
    accumulate as in eager."""
    emb = torch.nn.Embedding(50, 8)
    ref = copy.deepcopy(emb)
    ids = torch.tensor([[1, 3, 3, 7], [7, 7, 0, 49]])

    def loss(m):
        return (m(ids) * torch.arange(8.0)).square().sum()

    torch._dynamo.reset()
    compiled = torch.compile(loss, backend="coil", options={"dump_dir": str(tmp_path)})
    compiled(emb).backward()
    loss(ref).backward()
    torch.testing.assert_close(emb.weight.grad, ref.weight.grad)
    code = "\n".join(p.read_text() for p in tmp_path.glob("*/wrapper.py"))
    kernels = "\n".join(p.read_text() for p in tmp_path.glob("*/kernels.py"))
    assert "torch.ops.aten.index_put" not in code, code
    assert "tl.atomic_add(" in kernels and "# kind: scatter" in kernels, kernels
