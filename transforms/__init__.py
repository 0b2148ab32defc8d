"""Passes that stay inside one dialect. ``get_all_passes`` maps each registered
pass name to a lazy factory, as ``xdsl.transforms.get_all_passes`` does."""

from collections.abc import Callable

from xdsl.passes import ModulePass

from coil.passinfo import lazy_factories

SUMMARIES: dict[str, str] = {
    "aten-channels-last": "run 2-D convolutions on NHWC tensors where Inductor's rules say it pays",
    "aten-peel-conv-bias": "a CUDA convolution's bias as an add that fuses into the next kernel",
    "aten-fuse-matvec": "matrix-vector products of one input (q/k/v) as one product, one launch",
    "aten-cpu-packed-linear": "CPU inference products of parameters over a weight packed once",
    "aten-decompose": "rewrite composite aten ops (softmax, norms...) with torch's decompositions",
    "aten-fuse-attention": "hand-written attention (softmax(q @ k^T * s + mask) @ v) as fused SDPA",
    "canonicalize": "xDSL's canonicalizer with the aten patterns (view chains, no-ops, x*1)",
    "loop-inline": "inline pointwise producers and views into the loads that read them",
    "loop-matvec-prologue": "recompute a row's normalization inside the products that read it",
    "loop-split-reduction": "split a reduction with few outputs: chunk partials, then a finish",
    "loop-fuse": "group a reduction with its sibling/dependent reductions and epilogues",
    "loop-simplify-indexing": "simplify index expressions with the ranges of their nest",
    "memory-plan": "free buffers at their last use, reuse dead ones, record the peak",
    "buffer-hoist-constants": "compute parameter-only work once per parameter version",
    "buffer-fold-concat": "write a concatenation's stored inputs straight into their slices",
    "buffer-reorder": "order kernels and extern calls for a lower planned peak (Inductor's)",
    "aten-reorder-collectives": "issue collectives early and wait late, so they overlap compute",
    "aten-bucket-collectives": "all-gathers (reduce-scatters) of one group as one, flat buffer",
    "loop-cost-report": "print each top-level nest's bytes read/written, loads and ops (stderr)",
    "host-combine-launches": "run consecutive independent elementwise kernels as one launch",
}
"""One line per pass, for ``fx-opt --help`` (which must not import the passes)."""


PASSES: dict[str, str] = {
    "canonicalize": "coil.transforms.aten_canonicalize:CanonicalizePass",
    "aten-decompose": "coil.transforms.aten_decompose:AtenDecomposePass",
    "aten-fuse-attention": "coil.transforms.aten_fuse_attention:AtenFuseAttentionPass",
    "loop-inline": "coil.transforms.loop_inline:LoopInlinePass",
    "loop-matvec-prologue": "coil.transforms.loop_matvec_prologue:LoopMatvecProloguePass",
    "loop-split-reduction": "coil.transforms.loop_split_reduction:LoopSplitReductionPass",
    "loop-fuse": "coil.transforms.loop_fuse:LoopFusePass",
    "loop-simplify-indexing": "coil.transforms.loop_simplify_indexing:LoopSimplifyIndexingPass",
    "loop-cost-report": "coil.transforms.loop_cost:LoopCostReportPass",
    "memory-plan": "coil.transforms.memory_plan:MemoryPlanPass",
    "aten-reorder-collectives": (
        "coil.transforms.aten_reorder_collectives:AtenReorderCollectivesPass"
    ),
    "aten-bucket-collectives": (
        "coil.transforms.aten_bucket_collectives:AtenBucketCollectivesPass"
    ),
    "aten-channels-last": "coil.transforms.aten_channels_last:AtenChannelsLastPass",
    "aten-peel-conv-bias": "coil.transforms.aten_peel_conv_bias:AtenPeelConvBiasPass",
    "aten-fuse-matvec": "coil.transforms.aten_fuse_matvec:AtenFuseMatvecPass",
    "aten-cpu-packed-linear": "coil.transforms.aten_cpu_packed_linear:AtenCpuPackedLinearPass",
    "buffer-hoist-constants": ("coil.transforms.buffer_hoist_constants:BufferHoistConstantsPass"),
    "buffer-fold-concat": "coil.transforms.buffer_fold_concat:BufferFoldConcatPass",
    "buffer-reorder": "coil.transforms.buffer_reorder:BufferReorderPass",
    "host-combine-launches": "coil.transforms.host_combine_launches:HostCombineLaunchesPass",
}
"""Each registered pass's class as ``"module:Class"`` (imported only when used;
``coil.passinfo`` reads its options from the source for ``fx-opt --help``)."""


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    return lazy_factories(PASSES)
