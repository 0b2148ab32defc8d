"""Passes that stay inside one dialect. ``get_all_passes`` maps each registered
pass name to a lazy factory, as ``xdsl.transforms.get_all_passes`` does."""

from collections.abc import Callable

from xdsl.passes import ModulePass

SUMMARIES: dict[str, str] = {
    "aten-channels-last": "run 2-D convolutions on NHWC tensors where Inductor's rules say it pays",
    "aten-peel-conv-bias": "a CUDA convolution's bias as an add that fuses into the next kernel",
    "aten-decompose": "rewrite composite aten ops (softmax, norms...) with torch's decompositions",
    "loop-inline": "inline pointwise producers and views into the loads that read them",
    "loop-split-reduction": "split a reduction with few outputs: chunk partials, then a finish",
    "loop-fuse": "group a reduction with its sibling/dependent reductions and epilogues",
    "loop-simplify-indexing": "simplify index expressions with the ranges of their nest",
    "memory-plan": "free buffers at their last use, reuse dead ones, record the peak",
    "buffer-hoist-constants": "compute parameter-only work once per parameter version",
    "aten-reorder-collectives": "issue collectives early and wait late, so they overlap compute",
    "loop-cost-report": "print each top-level nest's bytes read/written, loads and ops (stderr)",
}
"""One line per pass, for ``fx-opt --help`` (which must not import the passes)."""


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    def aten_channels_last() -> type[ModulePass]:
        from coil.transforms.aten_channels_last import AtenChannelsLastPass

        return AtenChannelsLastPass

    def aten_peel_conv_bias() -> type[ModulePass]:
        from coil.transforms.aten_peel_conv_bias import AtenPeelConvBiasPass

        return AtenPeelConvBiasPass

    def aten_decompose() -> type[ModulePass]:
        from coil.transforms.aten_decompose import AtenDecomposePass

        return AtenDecomposePass

    def loop_inline() -> type[ModulePass]:
        from coil.transforms.loop_inline import LoopInlinePass

        return LoopInlinePass

    def loop_split_reduction() -> type[ModulePass]:
        from coil.transforms.loop_split_reduction import LoopSplitReductionPass

        return LoopSplitReductionPass

    def loop_fuse() -> type[ModulePass]:
        from coil.transforms.loop_fuse import LoopFusePass

        return LoopFusePass

    def loop_simplify_indexing() -> type[ModulePass]:
        from coil.transforms.loop_simplify_indexing import LoopSimplifyIndexingPass

        return LoopSimplifyIndexingPass

    def loop_cost_report() -> type[ModulePass]:
        from coil.transforms.loop_cost import LoopCostReportPass

        return LoopCostReportPass

    def aten_reorder_collectives() -> type[ModulePass]:
        from coil.transforms.aten_reorder_collectives import AtenReorderCollectivesPass

        return AtenReorderCollectivesPass

    def buffer_hoist_constants() -> type[ModulePass]:
        from coil.transforms.buffer_hoist_constants import BufferHoistConstantsPass

        return BufferHoistConstantsPass

    def memory_plan() -> type[ModulePass]:
        from coil.transforms.memory_plan import MemoryPlanPass

        return MemoryPlanPass

    return {
        "aten-decompose": aten_decompose,
        "loop-inline": loop_inline,
        "loop-split-reduction": loop_split_reduction,
        "loop-fuse": loop_fuse,
        "loop-simplify-indexing": loop_simplify_indexing,
        "loop-cost-report": loop_cost_report,
        "memory-plan": memory_plan,
        "buffer-hoist-constants": buffer_hoist_constants,
        "aten-reorder-collectives": aten_reorder_collectives,
        "aten-channels-last": aten_channels_last,
        "aten-peel-conv-bias": aten_peel_conv_bias,
    }
