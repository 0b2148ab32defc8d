"""A backward's donated inputs (AOTAutograd's ``bw_donated_idxs``: saved
activations that only the backward reads) may be written over in place by
memory-plan where they die, as Inductor's donated buffers.

Measured on an H200 (``benchmarks/memory_probe.py llama_train``: a Llama-style
decoder training step under bf16 autocast, vocab 32000, 4 x 512 tokens): at
coil's peak, in the backward, the saved bf16 logits (125 MB) and the bf16
gradient of the logits (another 125 MB, computed from them by one pointwise
nest) were alive at once, 55 MB above Inductor's peak, which writes the
gradient over the logits. Planned here for that step's backward (CUDA plan on
the CPU, saved inputs counted until their last use): 675.4 -> 612.9 MiB at the
peak, whose largest blocks are then those of Inductor's (the logits' storage,
the head weight's bf16 copy, its bf16 gradient).

The model below has the same head: a bf16 LM head under autocast, the loss on
``logits.float()`` as transformers computes it."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from xdsl.dialects import func

from coil.backend import _graph_pipeline
from coil.compile_driver import run_pipeline
from coil.dialects import buffer as B
from coil.frontend.capture import capture_training
from coil.frontend.fx_importer import import_graph
from coil.pipeline import PIPELINES
from coil.testing import tolerances

VOCAB, DIM, BATCH, SEQ = 512, 32, 2, 16


class RMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(dim))

    def forward(self, x):
        x32 = x.float()
        return self.weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-6)).to(
            x.dtype
        )


class TinyLM(nn.Module):
    """Embedding, one SwiGLU block with RMSNorms, an LM head and the causal-LM
    loss on f32 logits (transformers' ForCausalLMLoss)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.norm1, self.norm2 = RMSNorm(DIM), RMSNorm(DIM)
        self.gate, self.up = nn.Linear(DIM, 88, bias=False), nn.Linear(DIM, 88, bias=False)
        self.down = nn.Linear(88, DIM, bias=False)
        self.head = nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, ids):
        h = self.embed(ids)
        x = self.norm1(h)
        h = h + self.down(F.silu(self.gate(x)) * self.up(x))
        logits = self.head(self.norm2(h)).float()
        labels = F.pad(ids, (0, 1), value=-100)[..., 1:]
        return F.cross_entropy(logits.view(-1, VOCAB), labels.reshape(-1), ignore_index=-100)


def _step(fn, params, ids, amp, retain_graph=False):
    for p in params:
        p.grad = None
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
        loss = fn(ids)
    loss.backward(retain_graph=retain_graph)
    return loss, [p.grad.clone() for p in params]


@pytest.mark.parametrize("amp", [True, False], ids=["amp_bf16", "f32"])
def test_training_step_grads_match_eager(amp):
    """The step's loss and gradients against eager PyTorch's (the same
    autocast), two steps on fresh random ids: the second runs the compiled
    backward again on new saved activations."""
    torch.manual_seed(0)
    model = TinyLM()
    ref = copy.deepcopy(model)
    compiled = torch.compile(model, backend="coil")
    params, ref_params = list(model.parameters()), list(ref.parameters())
    tol = tolerances(torch.bfloat16 if amp else torch.float32)
    for _ in range(2):
        ids = torch.randint(0, VOCAB, (BATCH, SEQ))
        loss, grads = _step(compiled, params, ids, amp)
        ref_loss, ref_grads = _step(ref, ref_params, ids, amp)
        torch.testing.assert_close(loss, ref_loss, **tol)
        for g, r in zip(grads, ref_grads):
            assert g.abs().sum() > 0
            torch.testing.assert_close(g, r, **tol)


def test_retain_graph_backward_twice():
    """A first backward with ``retain_graph=True``: AOTAutograd donates nothing
    then (so the saved logits must survive the first backward), and the
    second backward's gradients, accumulated, match eager's."""
    torch.manual_seed(1)
    model = TinyLM()
    ref = copy.deepcopy(model)
    compiled = torch.compile(model, backend="coil")
    ids = torch.randint(0, VOCAB, (BATCH, SEQ))
    for fn in (compiled, ref):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = fn(ids)
        loss.backward(retain_graph=True)
        loss.backward()
    for p, r in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, r.grad, **tolerances(torch.bfloat16))


def _planned_backward(graphs, donated):
    """The backward at the buffer level (after memory-plan), as the backend
    compiles it (with or without its donated inputs)."""
    module = import_graph(graphs.backward, donated_inputs=graphs.donated if donated else ())
    run_pipeline(module, _graph_pipeline(PIPELINES["buffer"], False, False, True))
    return next(op for op in module.ops if isinstance(op, func.FuncOp))


def test_backward_writes_logits_grad_over_saved_logits():
    """The captured step's backward (AOTAutograd with coil's partitioner, bf16
    autocast): the saved bf16 logits are donated, and the gradient of the
    logits takes over their storage (a ``buffer.reuse`` of that argument);
    the planned peak drops by the logits' bytes."""
    torch.manual_seed(2)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ))
    (graphs,) = capture_training(TinyLM(), (ids,), loss=lambda x: x, autocast=torch.bfloat16)
    assert graphs.donated
    fn = _planned_backward(graphs, donated=True)
    attrs = fn.arg_attrs.data
    donated = {a for a, d in zip(fn.args, attrs) if "coil.donated" in d.data}
    # saved activations only: never a parameter or the batch (primals_*)
    assert donated and not any((a.name_hint or "").startswith("primals") for a in donated)
    reused = [op for op in fn.body.block.ops if isinstance(op, B.ReuseOp) and op.source in donated]
    nbytes = BATCH * SEQ * VOCAB * 2
    assert any(int(op.result.type.storage_bytes()) == nbytes for op in reused), [
        str(op) for op in reused
    ]
    before = int(_planned_backward(graphs, donated=False).attributes["coil.peak_bytes"].data)
    after = int(fn.attributes["coil.peak_bytes"].data)
    assert after <= before - nbytes


def test_donated_inputs_sharing_storage_are_not_marked():
    """Two inputs viewing one storage (two saved views of one intermediate)
    are not marked ``coil.donated``, even where AOTAutograd donates both:
    writing over one would change what the other reads."""
    graph = torch.fx.Graph()
    graph.placeholder("none").meta["val"] = None  # a non-tensor input: never donated
    base = torch.randn(4, 4)
    vals = [base, base.t(), torch.randn(4, 4), torch.randn(4, 4)]
    nodes = []
    for k, v in enumerate(vals):
        n = graph.placeholder(f"x{k}")
        n.meta["val"] = v
        nodes.append(n)
    out = graph.call_function(torch.ops.aten.add.Tensor, (nodes[0], nodes[1]))
    out.meta["val"] = vals[0] + vals[1]
    out2 = graph.call_function(torch.ops.aten.add.Tensor, (nodes[2], nodes[3]))
    out2.meta["val"] = vals[2] + vals[3]
    graph.output((out, out2))
    gm = torch.fx.GraphModule({}, graph)
    module = import_graph(gm, donated_inputs=[0, 1, 2, 3])
    fn = next(iter(module.ops))
    marked = [k for k, d in enumerate(fn.arg_attrs.data) if "coil.donated" in d.data]
    assert marked == [3]


_FINISH_OVER_DONATED = """
func.func @f(%a: !buffer.buffer<[8], f32> {coil.donated}) -> !buffer.buffer<[8], f32> {
  %s = buffer.alloc : !buffer.buffer<[8], f32>
  loop.pointwise [8] outs(%s : !buffer.buffer<[8], f32>) {
  ^bb0(%i0: index):
    %v = loop.load %a[i0] : !buffer.buffer<[8], f32>
    loop.yield %v : f32
  }
  %t = buffer.reuse %a : !buffer.buffer<[8], f32> -> !buffer.buffer<[8], f32>
  loop.pointwise [8] outs(%t : !buffer.buffer<[8], f32>) {
  ^bb0(%i0: index):
    %v = loop.load %s[i0] : !buffer.buffer<[8], f32>
    loop.yield %v : f32
  }
  buffer.dealloc %s : !buffer.buffer<[8], f32>
  func.return %t : !buffer.buffer<[8], f32>
}
"""


def test_split_finish_fresh_output_over_donated_input():
    """``split_finish.fresh_outputs``: where the finish's output reuses storage
    the first launch reads, it becomes an allocation before that launch and
    the reused buffer is freed where the reuse was -- unless that buffer is a
    (donated) argument, which the wrapper, not the plan, releases."""
    from coil.ir import parse_module
    from coil.lowering.loop_to_tt.split_finish import fresh_outputs

    module = parse_module(_FINISH_OVER_DONATED)
    fn = next(iter(module.ops))
    nests = [op for op in fn.body.block.ops if op.name == "loop.pointwise"]
    fresh_outputs(nests[0], nests[1])
    module.verify()
    ops = list(fn.body.block.ops)
    assert not any(isinstance(op, B.ReuseOp) and op.source is fn.args[0] for op in ops)
    freed = [op.buffer for op in ops if isinstance(op, B.DeallocOp)]
    assert fn.args[0] not in freed
    allocs = [op for op in ops if isinstance(op, B.AllocOp)]
    assert len(allocs) == 2 and allocs[1].next_op is nests[0]
    assert list(nests[1].outs) == [allocs[1].result]


def test_backward_never_writes_over_an_output_the_caller_holds():
    # The saved normalized input of a layer norm's backward, (x - mean) * rstd,
    # is the layer norm's output after coil's CSE: one buffer, returned to the
    # caller and donated to the backward, which wrote over it (the output
    # changed by up to 3.0 after backward(); fuzz --train, seed 23). Saved
    # tensors shaped like a user output are not donated.
    def fn(x):
        return torch.cumsum(x, 1), F.layer_norm(x, [2], None, None)

    for dynamic in (False, True):
        torch._dynamo.reset()
        options = {"fallback": "extern"}
        compiled = torch.compile(fn, backend="coil", dynamic=dynamic, options=options)
        x = torch.randn(8, 2, requires_grad=True)
        a, b = compiled(x)
        kept = b.detach().clone()
        (a.sum() + (b * torch.randn_like(b)).sum()).backward()
        assert torch.equal(b.detach(), kept)
        torch.testing.assert_close(b.detach(), fn(x)[1].detach())
