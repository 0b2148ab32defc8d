"""Distributed training programs: coil against eager on torch.distributed.

Each program runs on every rank of a process group (gloo on the CPU, NCCL on
GPUs), trains a small GPT-style model (:class:`GPT`) the same way twice --
uncompiled, and compiled with coil -- from the same weights and data, checks
that losses and gradients agree at every step, and returns what the tests
check besides (the losses, the wrapper modules coil wrote, coil's warnings).
:func:`launch` starts the processes. The programs:

* :func:`functional_collectives` -- a function calling every c10d functional
  collective (differentiable, so the backward graph has them too);
* :func:`tensor_parallel` -- ``parallelize_module`` over DTensor (attention
  and MLP split column-/row-wise): the all-reduces are in coil's graphs;
* :func:`data_parallel` -- ``DistributedDataParallel`` with compiled autograd
  and Dynamo's ``python_reducer``: the gradient all-reduces are in the
  backward graph coil compiles;
* :func:`fully_shard_blocks` -- FSDP2 (``fully_shard``) over blocks compiled
  with coil. torch 2.13 cannot trace FSDP2's own collectives (its hooks are
  ``torch._dynamo.disable``d; see the README): they run eagerly between the
  compiled blocks;
* :func:`traced_sharding` -- FSDP's sharding with the collectives traced
  (:func:`shard_parameters`: parameters as DTensor shards, gathered at each
  use, as torchtitan's SimpleFSDP) under coil, against uncompiled FSDP2;
* :func:`traced_sharding_bucketed` -- the same under coil's ``sharded``
  pipeline (collectives bucketed, all-gathers prefetched one bucket ahead);
* :func:`traced_sharding_recompute` -- the benchmark's ``coil-traced`` on a
  tiny Llama: the backward gathers again, the embedding is tied.

Every process started here, and every process it starts, has
``NCCL_NVLS_ENABLE=0`` and ``TORCH_SYMM_MEM_DISABLE_MULTICAST=1`` (:data:`ENV`).
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import socket
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}
"""Set in every process: no NVLink multicast (NVLS) in NCCL or symmetric memory."""

STEPS = 3
"""Training steps each program compares."""


# --------------------------------------------------------------------------
# Processes
# --------------------------------------------------------------------------


def launch(
    program: Callable[..., Any],
    world_size: int,
    *args: Any,
    device: str = "cpu",
    timeout_s: float | None = None,
) -> list:
    """Run ``program(rank, world_size, device, *args)`` on ``world_size`` new
    processes in one process group (gloo on the CPU, NCCL for ``device="cuda"``,
    one GPU per rank); returns each rank's result. A failure on any rank raises
    with that rank's traceback. ``timeout_s`` bounds how long a collective
    waits for the other ranks (torch's default: 10 minutes)."""
    import torch.multiprocessing as mp

    os.environ.update(ENV)  # inherited by the processes started here
    with tempfile.TemporaryDirectory() as out:
        mp.start_processes(
            _worker,
            args=(world_size, _free_port(), device, out, program, args, timeout_s),
            nprocs=world_size,
            start_method="spawn",
        )
        return [torch.load(Path(out, f"rank{r}.pt"), weights_only=False) for r in range(world_size)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank, world_size, port, device, out, program, args, timeout_s=None) -> None:
    import datetime

    os.environ.update(ENV, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    wait = {} if timeout_s is None else {"timeout": datetime.timedelta(seconds=timeout_s)}
    if device == "cuda":
        torch.cuda.set_device(rank)
        dist.init_process_group(
            "nccl",
            rank=rank,
            world_size=world_size,
            device_id=torch.device("cuda", rank),
            **wait,
        )
    else:
        dist.init_process_group("gloo", rank=rank, world_size=world_size, **wait)
    try:
        with wrapper_dumps():
            result = program(rank, world_size, device, *args)
        torch.save(result, Path(out, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


# --------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------


class Block(nn.Module):
    """A GPT-2 block: pre-norm causal self-attention and a GELU MLP. q, k and v
    are separate projections and the heads are found from the width, so a
    tensor-parallel plan can split them by heads."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.head_dim = dim // heads
        self.ln_1 = nn.LayerNorm(dim)
        self.wq, self.wk, self.wv = (nn.Linear(dim, dim) for _ in range(3))
        self.wo = nn.Linear(dim, dim)
        self.ln_2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.proj = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        h = self.ln_1(x)
        q, k, v = (
            w(h).view(b, t, -1, self.head_dim).transpose(1, 2) for w in (self.wq, self.wk, self.wv)
        )
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.wo(y.transpose(1, 2).reshape(b, t, -1))
        return x + self.proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    """GPT-2: token and position embeddings, blocks, a final norm and the output
    projection tied to the token embedding. GPT-2 small is ``GPT(50257, 768,
    12, 12, 1024)``; the tests use a tiny one."""

    def __init__(
        self, vocab: int = 64, dim: int = 16, heads: int = 4, layers: int = 1, seq: int = 8
    ):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(seq, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.wte.weight
        for m in self.modules():  # GPT-2's initialization
            if isinstance(m, nn.Linear | nn.Embedding):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding (the halves convention of HF Llama)."""
    a, b = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-b, a), dim=-1) * sin


class LlamaBlock(nn.Module):
    """A Llama decoder layer (HF ``LlamaDecoderLayer``'s computation and
    parameter names): RMSNorm, grouped-query attention with rotary embeddings,
    RMSNorm, a SwiGLU MLP. Heads are found from the widths, so a
    tensor-parallel plan can split q/k/v and gate/up by columns."""

    def __init__(self, config: Any):
        super().__init__()
        dim, heads = config.hidden_size, config.num_attention_heads
        kv = config.num_key_value_heads
        self.head_dim = getattr(config, "head_dim", None) or dim // heads
        self.groups = heads // kv
        self.input_layernorm = RMSNorm(dim, config.rms_norm_eps)
        self.q_proj = nn.Linear(dim, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(dim, kv * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, kv * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, dim, bias=False)
        self.post_attention_layernorm = RMSNorm(dim, config.rms_norm_eps)
        self.gate_proj = nn.Linear(dim, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(dim, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, dim, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        h = self.input_layernorm(x)
        q, k, v = (
            w(h).view(b, t, -1, self.head_dim).transpose(1, 2)
            for w in (self.q_proj, self.k_proj, self.v_proj)
        )
        cos, sin = cos.to(q.dtype), sin.to(q.dtype)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        if self.groups > 1:  # every key/value head serves `groups` query heads
            k, v = (y.repeat_interleave(self.groups, dim=1) for y in (k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o_proj(y.transpose(1, 2).reshape(b, t, -1))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(nn.Module):
    """A Llama causal LM from a ``transformers.LlamaConfig`` (the computation of
    HF ``LlamaForCausalLM`` without its cache and mask machinery, so that one
    graph traces on any transformers version): embeddings, :class:`LlamaBlock`
    s as ``blocks``, a final RMSNorm and the output projection (tied to the
    embedding when the config says so). Llama 3.2 1B is ``vocab_size=128256,
    hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
    num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=True``."""

    def __init__(self, config: Any, seq: int):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.blocks = nn.ModuleList(LlamaBlock(config) for _ in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.embed_tokens.weight
        theta = getattr(config, "rope_theta", None) or (
            getattr(config, "rope_parameters", None) or {}
        ).get("rope_theta", 10000.0)
        head_dim = self.blocks[0].head_dim
        inv = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        angles = torch.outer(torch.arange(seq, dtype=torch.float32), inv)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)
        for m in self.modules():  # HF's initialization
            if isinstance(m, nn.Linear | nn.Embedding):
                nn.init.normal_(m.weight, std=getattr(config, "initializer_range", 0.02))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        t = ids.shape[1]
        x = self.embed_tokens(ids)
        cos, sin = self.cos[:t], self.sin[:t]
        for block in self.blocks:
            x = block(x, cos, sin)
        return self.lm_head(self.norm(x))


def lm_loss(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy of ``model`` on ``ids`` (the targets are ids shifted by one)."""
    logits = model(ids[:, :-1])
    return F.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())


def batch(step: int, rank: int, vocab: int, seq: int, device: str, size: int = 2) -> torch.Tensor:
    """Token ids for one step: different on every rank (data parallel) unless ``rank`` is 0."""
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randint(0, vocab, (size, seq + 1), generator=g).to(device)


def tiny_gpt(device: str) -> GPT:
    torch.manual_seed(0)
    return GPT().to(device)


# --------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------


def coil_options(dump_dir: str | os.PathLike) -> dict[str, Any]:
    """``torch.compile`` arguments for coil, writing every graph under ``dump_dir``
    (in the processes :func:`launch` starts, only the wrappers: :func:`wrapper_dumps`)."""
    return {"backend": "coil", "options": {"dump_dir": str(dump_dir)}}


@contextlib.contextmanager
def wrapper_dumps() -> Iterator[None]:
    """Dumps of the wrappers alone: each graph compiles as under a dump (without
    the graph cache) but without printing the IR after every pass, and its
    wrapper module is written where the dump writes it
    (``DUMP_DIR/graph_NNN/wrapper.py``, what :func:`wrappers` reads). The full
    dump doubled these programs' compile time (the tiny GPT's training step:
    4.4 s of CPU with it, 2.0 s without, one process on the 2-core CI machine)."""
    import coil.backend

    real = coil.backend.compile_graph

    def compile_graph(*args: Any, dump_dir: Any = None, cache: Any = None, **kwargs: Any):
        if not dump_dir:
            return real(*args, dump_dir=dump_dir, cache=cache, **kwargs)
        run = real(*args, dump_dir=None, cache=False, **kwargs)
        root = Path(dump_dir)
        root.mkdir(parents=True, exist_ok=True)
        folder = root / f"graph_{len(list(root.glob('graph_*'))):03d}"
        folder.mkdir()
        (folder / "wrapper.py").write_text(run.coil_source)
        return run

    with mock.patch.object(coil.backend, "compile_graph", compile_graph):
        yield


def wrappers(dump_dir: str | os.PathLike) -> list[str]:
    """The wrapper modules coil wrote under ``dump_dir``, in compilation order."""
    return [p.read_text() for p in sorted(Path(dump_dir).glob("graph_*/wrapper.py"))]


@contextlib.contextmanager
def coil_warnings() -> Iterator[list[str]]:
    """Collect what coil logs at warning level (an op sent to ATen by fallback)."""
    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    handler = Collect(logging.WARNING)
    logger = logging.getLogger("coil")
    logger.addHandler(handler)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)


def full(t: torch.Tensor | None) -> torch.Tensor | None:
    """A DTensor gathered to a plain tensor (plain tensors as they are)."""
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def assert_same_grads(ref: nn.Module, model: nn.Module, what: str) -> None:
    for (name, a), b in zip(ref.named_parameters(), model.parameters(), strict=True):
        ga, gb = full(a.grad), full(b.grad)
        if ga is None or gb is None:
            assert ga is None and gb is None, f"{what}: {name}: one gradient is missing"
            continue
        torch.testing.assert_close(gb, ga, msg=lambda m, n=name: f"{what}: grad of {n}: {m}")


def train_both(
    ref: nn.Module,
    model: nn.Module,
    run: nn.Module,
    step_ids: Callable[[int], torch.Tensor],
    what: str,
    backward: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
) -> list[tuple[float, float]]:
    """``STEPS`` SGD steps of ``ref`` (uncompiled) and ``model`` (called as ``run``,
    its compiled form; the backward under ``backward()``) on the same batches;
    losses and gradients must agree at each step. Returns the (eager, coil) losses."""
    # foreach=False: under tensor parallelism some parameters are DTensors and
    # some plain tensors, and CUDA's default multi-tensor step would hand both
    # to one _foreach_add_, which DTensor refuses (CPU steps one at a time).
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.1, foreach=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=False)
    losses = []
    for step in range(STEPS):
        ids = step_ids(step)
        loss_ref = lm_loss(ref, ids)
        loss_ref.backward()
        with backward():
            loss = lm_loss(run, ids)
            loss.backward()
        torch.testing.assert_close(loss, loss_ref, msg=lambda m, s=step: f"{what}: loss {s}: {m}")
        assert_same_grads(ref, model, f"{what}, step {step}")
        losses.append((float(loss_ref), float(loss)))
        for o in (opt_ref, opt):
            o.step()
            o.zero_grad()
    return losses


# --------------------------------------------------------------------------
# Programs
# --------------------------------------------------------------------------


def functional_collectives(rank: int, world: int, device: str, dump_dir: str) -> dict[str, Any]:
    """Every c10d functional collective in one compiled function, forward and
    backward, against eager."""
    import torch.distributed._functional_collectives as funcol

    group = dist.group.WORLD
    # torch 2.13's names (the older ones are deprecated there, the only ones before).
    gather = getattr(funcol, "all_gather_single", None) or funcol.all_gather_tensor
    scatter = getattr(funcol, "reduce_scatter_single", None) or funcol.reduce_scatter_tensor

    def f(x: torch.Tensor, y: torch.Tensor):
        a = funcol.all_reduce(x * 2, "sum", group)
        g = gather(x + 1, 0, group)
        r = scatter(g.cos() * 3, "sum", 0, group)
        t = funcol.all_to_all_single(y * x.sum(), None, None, group)
        # No gradient through broadcast: eager's has one, the traced op none.
        b = funcol.broadcast(y[:, :3].sin(), 0, group)
        return a.relu() + r * b, t * 2

    torch.manual_seed(rank)
    x = torch.randn(2 * world, 3, device=device, requires_grad=True)
    y = torch.randn(2 * world, 5, device=device)
    x_ref = x.detach().clone().requires_grad_()
    with coil_warnings() as warned:
        out = torch.compile(f, **coil_options(Path(dump_dir, f"rank{rank}")))(x, y)
        sum(o.sum() for o in out).backward()
    ref = f(x_ref, y)
    sum(o.sum() for o in ref).backward()
    for o, r in zip(out, ref, strict=True):
        torch.testing.assert_close(o, r)
    torch.testing.assert_close(x.grad, x_ref.grad)
    return {"wrappers": wrappers(Path(dump_dir, f"rank{rank}")), "warnings": warned}


def tensor_parallel(rank: int, world: int, device: str, dump_dir: str) -> dict[str, Any]:
    """Tensor parallelism over DTensor: q/k/v and the MLP's first layer split by
    columns, the output projections by rows (an all-reduce after each)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    mesh = init_device_mesh(device, (world,))
    ref = tiny_gpt(device)
    plan = {
        f"blocks.{i}.{name}": style
        for i in range(len(ref.blocks))
        for name, style in [
            *((w, ColwiseParallel()) for w in ("wq", "wk", "wv", "fc")),
            *((w, RowwiseParallel()) for w in ("wo", "proj")),
        ]
    }
    model = copy.deepcopy(ref)
    parallelize_module(ref, mesh, plan)
    parallelize_module(model, mesh, plan)
    run = torch.compile(model, **coil_options(Path(dump_dir, f"rank{rank}")))
    with coil_warnings() as warned:
        # Every rank of a tensor-parallel group sees the same batch.
        losses = train_both(
            ref, model, run, lambda s: batch(s, 0, 64, 8, device), "tensor parallel"
        )
    return {
        "losses": losses,
        "wrappers": wrappers(Path(dump_dir, f"rank{rank}")),
        "warnings": warned,
    }


def data_parallel(rank: int, world: int, device: str, dump_dir: str) -> dict[str, Any]:
    """DDP, compiled with coil, its backward under compiled autograd with
    Dynamo's python_reducer: the gradient all-reduces are in coil's backward
    graph. The reference is DDP with its C++ reducer, uncompiled."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    ref = DDP(tiny_gpt(device))
    options = coil_options(Path(dump_dir, f"rank{rank}"))
    with torch._dynamo.config.patch(optimize_ddp="python_reducer"):
        model = DDP(tiny_gpt(device))  # the reducer is chosen here

        def backward() -> contextlib.AbstractContextManager:
            return torch._dynamo.compiled_autograd._enable(torch.compile(**options))

        run = torch.compile(model, **options)
        with coil_warnings() as warned:
            losses = train_both(
                ref, model, run, lambda s: batch(s, rank, 64, 8, device), "DDP", backward
            )
    return {
        "losses": losses,
        "wrappers": wrappers(Path(dump_dir, f"rank{rank}")),
        "warnings": warned,
    }


def fully_shard_blocks(rank: int, world: int, device: str, dump_dir: str) -> dict[str, Any]:
    """FSDP2: every block compiled with coil, then sharded with ``fully_shard``
    (as torchtitan does), the root sharded too; its all-gathers and
    reduce-scatters run eagerly in FSDP's hooks."""
    from torch.distributed.fsdp import fully_shard

    def sharded(compiled: bool) -> GPT:
        model = tiny_gpt(device)
        for i, block in enumerate(model.blocks):
            if compiled:
                block = torch.compile(block, **coil_options(Path(dump_dir, f"rank{rank}")))
                model.blocks[i] = block
            fully_shard(block)
        return fully_shard(model)

    ref, model = sharded(False), sharded(True)
    with coil_warnings() as warned:
        losses = train_both(
            ref, model, model, lambda s: batch(s, rank, 64, 8, device), "fully_shard"
        )
    return {
        "losses": losses,
        "wrappers": wrappers(Path(dump_dir, f"rank{rank}")),
        "warnings": warned,
    }


class GatherShards(nn.Module):
    """A parametrization: the whole parameter from its shards (an all-gather in
    the forward; its gradient averaged over the ranks and scattered back to the
    shards, a reduce-scatter, in the backward). With ``param_dtype`` the shard
    is cast before the all-gather (FSDP2's ``MixedPrecisionPolicy.param_dtype``:
    half the bytes on the wire for bf16), with ``reduce_dtype`` the gradient
    before the reduce-scatter (``reduce_dtype``). With ``recompute`` the
    backward gathers the parameter again instead of keeping the forward's
    (SimpleFSDP's policy: the cast, all-gather and wait are recomputed, so the
    gathered parameters are not alive between the forward and the backward,
    as FSDP2 reshards after the forward)."""

    def __init__(
        self,
        param_dtype: torch.dtype | None = None,
        reduce_dtype: torch.dtype | None = None,
        recompute: bool = False,
    ):
        super().__init__()
        self.param_dtype, self.reduce_dtype = param_dtype, reduce_dtype
        self.recompute = recompute

    def gather(self, shard: torch.Tensor) -> torch.Tensor:
        from torch.distributed.tensor import Partial, Replicate

        if self.param_dtype is None and self.reduce_dtype is None:
            gathered = shard.redistribute(placements=[Replicate()])
        elif _redistribute_casts():
            gathered = shard.redistribute(
                placements=[Replicate()],
                forward_dtype=self.param_dtype,
                backward_dtype=self.reduce_dtype or shard.dtype,
            )
        else:  # an older torch: the cast as a DTensor op (its gradient reduced in param_dtype)
            gathered = shard.to(self.param_dtype or shard.dtype).redistribute(
                placements=[Replicate()]
            )
        return gathered.to_local(grad_placements=[Partial("avg")])

    def forward(self, shard: torch.Tensor) -> torch.Tensor:
        if not self.recompute:
            return self.gather(shard)
        from torch.utils.checkpoint import checkpoint

        return checkpoint(
            self.gather,
            shard,
            use_reentrant=False,
            context_fn=_recompute_gathers,
            preserve_rng_state=False,
        )


def _redistribute_casts() -> bool:
    """Whether ``DTensor.redistribute`` takes ``forward_dtype``/``backward_dtype``."""
    import inspect

    from torch.distributed.tensor import DTensor

    return "forward_dtype" in inspect.signature(DTensor.redistribute).parameters


def _recompute_gathers():
    """Selective checkpointing contexts: recompute the all-gathers, their waits
    and the casts; save everything else (torchtitan's SimpleFSDP ``fsdp_policy``)."""
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    recomputed = {
        torch.ops._c10d_functional.all_gather_into_tensor.default,
        torch.ops._c10d_functional.wait_tensor.default,
        torch.ops.aten._to_copy.default,
    }

    def policy(ctx, op, *args, **kwargs):
        if op in recomputed:
            return CheckpointPolicy.MUST_RECOMPUTE
        return CheckpointPolicy.MUST_SAVE

    return create_selective_checkpoint_contexts(policy)


def shard_parameters(
    model: nn.Module,
    mesh: Any,
    param_dtype: torch.dtype | None = None,
    reduce_dtype: torch.dtype | None = None,
    recompute: bool = False,
) -> nn.Module:
    """Data-parallel sharding that Dynamo traces (torchtitan's SimpleFSDP): every
    parameter becomes a DTensor sharded on dim 0 over ``mesh`` (FSDP2's layout),
    and every use of it gathers it through :class:`GatherShards` (cast to
    ``param_dtype`` before the all-gather, its gradient to ``reduce_dtype``
    before the reduce-scatter; gathered again in the backward with
    ``recompute``), so the all-gathers and reduce-scatters are ops of the
    compiled graphs."""
    import torch.nn.utils.parametrize as parametrize
    from torch.distributed.tensor import Shard, distribute_tensor

    sharded: dict[nn.Parameter, nn.Parameter] = {}  # tied parameters stay tied
    for module in list(model.modules()):
        for name, param in list(module.named_parameters(recurse=False)):
            if param not in sharded:
                sharded[param] = nn.Parameter(distribute_tensor(param.data, mesh, [Shard(0)]))
            module.register_parameter(name, sharded[param])
            gather = GatherShards(param_dtype, reduce_dtype, recompute)
            parametrize.register_parametrization(module, name, gather, unsafe=True)
    return model


def traced_sharding(rank: int, world: int, device: str, dump_dir: str) -> dict[str, Any]:
    """FSDP's collectives in coil's graphs: :func:`shard_parameters` under coil
    against FSDP2 (``fully_shard``, uncompiled) from the same weights: the
    same sharding, the same averaged gradients."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh(device, (world,))
    ref = fully_shard(tiny_gpt(device), mesh=mesh)
    model = shard_parameters(tiny_gpt(device), mesh)
    run = torch.compile(model, **coil_options(Path(dump_dir, f"rank{rank}")))
    with coil_warnings() as warned:
        losses = train_both(ref, model, run, lambda s: batch(s, rank, 64, 8, device), "sharded")
    return {
        "losses": losses,
        "wrappers": wrappers(Path(dump_dir, f"rank{rank}")),
        "warnings": warned,
    }


def traced_sharding_bucketed(rank: int, world: int, device: str, dump_dir: str) -> dict[str, Any]:
    """:func:`traced_sharding` under coil's ``sharded`` pipeline: the
    all-gathers and the reduce-scatters bucketed (``aten-bucket-collectives``)
    and the next bucket's all-gather prefetched (``aten-reorder-collectives
    {prefetch=1}``), against uncompiled FSDP2 step for step."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    from coil.pipeline import PIPELINES

    mesh = init_device_mesh(device, (world,))
    ref = fully_shard(tiny_gpt(device), mesh=mesh)
    model = shard_parameters(tiny_gpt(device), mesh)
    options = coil_options(Path(dump_dir, f"rank{rank}"))
    options["options"]["pipeline"] = PIPELINES["sharded"]
    run = torch.compile(model, **options)
    with coil_warnings() as warned:
        losses = train_both(ref, model, run, lambda s: batch(s, rank, 64, 8, device), "bucketed")
    return {
        "losses": losses,
        "wrappers": wrappers(Path(dump_dir, f"rank{rank}")),
        "warnings": warned,
    }


def tiny_llama(device: str) -> Llama:
    """A two-layer Llama (grouped-query attention, SwiGLU, tied embeddings) of
    the benchmark's structure at tiny widths; no transformers needed."""
    from types import SimpleNamespace

    config = SimpleNamespace(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    return Llama(config, 8).to(device)


def traced_sharding_recompute(rank: int, world: int, device: str, dump_dir: str) -> dict[str, Any]:
    """The benchmark's ``coil-traced`` on a tiny Llama: :func:`shard_parameters`
    gathering again in the backward (``recompute``), a tied embedding, under
    coil's ``sharded`` pipeline, against uncompiled FSDP2 step for step."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    from coil.pipeline import PIPELINES

    mesh = init_device_mesh(device, (world,))
    ref = tiny_llama(device)
    for block in ref.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(ref, mesh=mesh)
    model = shard_parameters(tiny_llama(device), mesh, recompute=True)
    options = coil_options(Path(dump_dir, f"rank{rank}"))
    options["options"]["pipeline"] = PIPELINES["sharded"]
    run = torch.compile(model, **options)
    with coil_warnings() as warned:
        losses = train_both(ref, model, run, lambda s: batch(s, rank, 64, 8, device), "recompute")
    return {
        "losses": losses,
        "wrappers": wrappers(Path(dump_dir, f"rank{rank}")),
        "warnings": warned,
    }


def in_flight_buffer(
    rank: int, world: int, device: str, dump_dir: str, numel: int, hold: bool = True
) -> dict[str, Any]:
    """The race the memory plan prevents: ``m`` is handed to an all-gather, and
    a kernel writes ``t``, of ``m``'s size, before the all-gather's wait (where
    ``aten-reorder-collectives`` puts it). coil holds ``m`` until the wait, so
    ``t`` gets storage of its own; with ``hold=False`` the plan forgets that
    (``collective_waits`` finds no collective), ``t`` takes over ``m``'s storage
    and the kernel overwrites what NCCL may still be sending. Returns whether
    the results equal eager's, and the wrappers."""
    import torch.distributed._functional_collectives as funcol

    group = dist.group.WORLD

    gather = getattr(funcol, "all_gather_single", None) or funcol.all_gather_tensor

    def f(x: torch.Tensor, y: torch.Tensor):
        m = x * 2
        g = gather(m, 0, group)
        t = y.sin() + 1  # needs nothing from the all-gather: runs while it is in flight
        return g, t

    x = torch.full((numel,), float(rank + 1), device=device)
    y = torch.randn(numel, device=device)
    dump = Path(dump_dir, f"rank{rank}")
    torch._dynamo.reset()
    forget = mock.patch("coil.transforms.memory_plan.collective_waits", lambda ops: {})
    with contextlib.nullcontext() if hold else forget:
        g, t = torch.compile(f, **coil_options(dump))(x, y)
    g_ref, t_ref = f(x, y)
    return {
        "match": bool(torch.equal(g, g_ref) and torch.allclose(t, t_ref, rtol=1.3e-6, atol=1e-5)),
        "wrappers": wrappers(dump),
    }


PROGRAMS = {
    "functional_collectives": functional_collectives,
    "tensor_parallel": tensor_parallel,
    "data_parallel": data_parallel,
    "fully_shard_blocks": fully_shard_blocks,
    "traced_sharding": traced_sharding,
    "traced_sharding_bucketed": traced_sharding_bucketed,
    "traced_sharding_recompute": traced_sharding_recompute,
}


def all_programs(
    rank: int, world: int, device: str, dump_dir: str, skip: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Every program (but those named in ``skip``) in turn, in one process group
    (one start-up for all), then :func:`in_flight_buffer` with and without the
    plan's hold (small on the CPU)."""
    results = {
        name: run(rank, world, device, Path(dump_dir, name))
        for name, run in PROGRAMS.items()
        if name not in skip
    }
    numel = 1 << 12 if device == "cpu" else 1 << 25
    for hold in (True, False):
        where = Path(dump_dir, f"in_flight_{hold}")
        results[f"in_flight_{hold}"] = in_flight_buffer(rank, world, device, where, numel, hold)
    return results
