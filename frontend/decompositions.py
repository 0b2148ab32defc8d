"""The decomposition table coil traces with.

torch's own core-ATen table (``torch._decomp.core_aten_decompositions``), as
Inductor starts from: what reaches coil is the core ATen opset plus the few
composite ops that table keeps (views, ``_to_copy``, norms ...). Later stages
that want an op kept whole remove it here, in one place; :data:`EXTRA` lists
ops outside that table coil decomposes too, :data:`TRAINING` the few it keeps
that coil decomposes before AOTAutograd partitions a graph; the multi-tensor
``_foreach_*`` ops become one aten op per tensor (:mod:`coil.frontend.foreach`);
``as_strided_scatter`` over a dense row-major window becomes a cat
(:func:`_as_strided_scatter`); a training graph's max pooling saves int8
window offsets instead of int64 indices (:func:`_max_pool_with_offsets`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping

import torch
from torch._decomp import core_aten_decompositions

KEEP: tuple[torch._ops.OpOverload, ...] = (
    # The core table decomposes the CPU flash-attention forward into the math
    # form (for export), but its autograd formula is the fused backward, which
    # reads the forward's logsumexp: decomposed, the two disagree and training
    # gradients are wrong (HF GPT-2 on the CPU: rel. error ~5 in ln_1's grads).
    # Inductor excludes it for the same reason (decomps_to_exclude).
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
    # The core table's baddbmm runs in f32 for bf16/f16 operands
    # (pw_cast_for_opmath): Bloom's ALiBi scores became an f32 cuBLAS GEMM,
    # 1.39 ms a call where ATen's bf16 baddbmm takes 0.48 (a sweep row's
    # profile, H200). Kept whole, it is an extern call of ATen's baddbmm, as
    # Inductor keeps it (decomps_to_exclude: "upcasts to fp32, perf issue").
    torch.ops.aten.baddbmm.default,
    # nn.Unfold / nn.Fold: lowered whole as gathers (aten_to_loop/pooling.py),
    # each the other's derivative. Decomposed, im2col is an index with
    # computed index tensors and col2im (im2col's backward) an index_put
    # with accumulate: a scatter-add, as in Inductor.
    torch.ops.aten.im2col.default,
    torch.ops.aten.col2im.default,
)
"""Ops the core table decomposes that coil keeps whole (lowered or called as ATen)."""

EXTRA: tuple[torch._ops.OpOverload, ...] = (
    # Kept whole by the core table, it reached coil as an ATen call (F.normalize
    # in Swin-V2's cosine attention, ConvNeXt-V2's GRN, XCiT: 0.85 ms of
    # cuBLAS-less reduce kernels a call in a sweep row); decomposed it is a
    # sum of powers and a root that fuse with their neighbours. Inductor's
    # table decomposes it too (torch/_inductor/decomposition.py).
    torch.ops.aten.linalg_vector_norm.default,
    # Index math over the input (floor, where, index): one fused gather kernel
    # instead of ATen's, as in Inductor's table. Autograd still differentiates
    # the whole op: its backward stays ATen's grid_sampler_2d_backward, a
    # scatter-add (Inductor calls ATen for it too).
    torch.ops.aten.grid_sampler_2d.default,
)
"""Ops the core table keeps whole that coil decomposes (torch's decompositions)."""

TRAINING: tuple[torch._ops.OpOverload, ...] = (
    # Decomposed before AOTAutograd partitions a training graph (as in
    # Inductor's table): whole, a softmax's output is one value the partitioner
    # must save for the backward (GPT-2's log-softmax over a 50257-word
    # vocabulary: an 823 MB f32 tensor written by the forward and read by the
    # backward); decomposed, it saves the input and the [rows, 1] max and log
    # of the sum, and the backward's kernel recomputes the rest. Inference
    # graphs keep them whole, one readable op in the imported IR:
    # aten-decompose applies the same decompositions there.
    torch.ops.aten._softmax.default,
    torch.ops.aten._log_softmax.default,
)
"""Ops the core table keeps whole that coil decomposes while tracing a graph
that needs autograd."""


def _max_pool_with_offsets(n: int):
    """``max_pool{n}d_with_indices`` as Inductor's decomposition writes it: the
    max and each window's int8 position of its maximum
    (``prims._low_memory_max_pool_with_offsets``), the int64 indices a
    pointwise map of those (``..._offsets_to_indices``). The partitioner then
    saves the offsets for the backward, which recomputes the indices inside its
    kernel: ResNet-50's stem pooling at batch 32 held 51 MB of int64 indices
    from the forward to the backward (a bf16 training step's peak 1309 MB
    against Inductor's 1261, H200), 6.4 MB as offsets. Windows of more than 127
    points, and sizes that are not ints, stay the ATen op."""

    def listed(value, default) -> list:
        if isinstance(value, int):
            value = [value]
        value = list(value) if value else list(default)
        return value * n if len(value) == 1 else value

    def decompose(x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        import torch._inductor.inductor_prims  # registers the two prims

        kernel = listed(kernel_size, ())
        stride, padding = listed(stride, kernel), listed(padding, [0])
        dilation = listed(dilation, [1])
        sizes = list(x.shape[-n:])
        args = (*kernel, *stride, *padding, *dilation, *sizes)
        if not all(isinstance(v, int) for v in args) or math.prod(kernel) > 127:
            return NotImplemented
        values, offsets = torch.ops.prims._low_memory_max_pool_with_offsets(
            x, kernel, stride, padding, dilation, ceil_mode
        )
        indices = torch.ops.prims._low_memory_max_pool_offsets_to_indices(
            offsets, kernel, sizes, stride, padding, dilation
        )
        return values, indices

    return decompose


def _as_strided_scatter(input, src, size, stride, storage_offset=None):
    """``aten.as_strided_scatter`` where the strided window is a dense row-major
    block of a contiguous input: ``src``'s elements in place of that block,
    as a cat of the input's flat pieces around it. AOTAutograd writes it for the
    gradient of an output view it replays with ``as_strided`` (timm ConvNeXt's
    pooled features, a training sweep row's only ATen call). Anything else
    stays the ATen op (NotImplemented: no decomposition)."""
    offset = 0 if storage_offset is None else storage_offset
    ints = all(isinstance(v, int) for v in (*size, *stride, offset, *input.shape))
    if not ints or not input.is_contiguous() or input.storage_offset() != 0:
        return NotImplemented
    dense = [s for s, n in zip(stride, size) if n != 1]
    expected = [math.prod(size[i + 1 :]) for i, n in enumerate(size) if n != 1]
    n = math.prod(size)
    if dense != expected or offset + n > input.numel():
        return NotImplemented
    flat = input.reshape(-1)
    pieces = [flat[:offset], src.reshape(-1), flat[offset + n :]]
    return torch.cat([p for p in pieces if p.numel()]).view(input.shape).clone()


@functools.cache
def decomposition_table(training: bool = False) -> dict[torch._ops.OpOverload, object]:
    """The table; ``training`` adds :data:`TRAINING` (for graphs AOTAutograd
    will partition into a forward and a backward)."""
    from torch._decomp import decomposition_table as torch_table

    table = dict(core_aten_decompositions())

    for op in KEEP:
        table.pop(op, None)
    for op in EXTRA + (TRAINING if training else ()):
        table[op] = torch_table[op]
    if training:
        table[torch.ops.aten.max_pool2d_with_indices.default] = _max_pool_with_offsets(2)
        table[torch.ops.aten.max_pool3d_with_indices.default] = _max_pool_with_offsets(3)
    from coil.frontend.foreach import foreach_decompositions

    table.update(foreach_decompositions())
    table[torch.ops.aten.as_strided_scatter.default] = _as_strided_scatter
    return table


class LazyTable(Mapping):
    """:func:`decomposition_table` (``training`` as there), built at first use.

    AOTAutograd reads its table only when it traces: a graph that hits the
    AOTAutograd cache never does, and building the table costs a warm start
    about 0.17 s on a CPU (torch materializes its composite ops)."""

    def __init__(self, training: bool = False) -> None:
        self.training = training

    @functools.cached_property
    def _table(self) -> dict[torch._ops.OpOverload, object]:
        return decomposition_table(self.training)

    def __getitem__(self, op: torch._ops.OpOverload) -> object:
        return self._table[op]

    def __iter__(self) -> Iterator[torch._ops.OpOverload]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)
