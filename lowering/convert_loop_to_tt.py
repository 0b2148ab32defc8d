"""convert-loop-to-tt: each bufferized loop nest becomes a Triton kernel and a launch.

Input: ``func.func``s at the buffer level (after ``bufferize``/``memory-plan``):
top-level ``loop.pointwise``/``loop.reduction``/``loop.fused`` with ``outs``, and
``loop.copy`` of buffers. Output: one ``tt.func public @coil_<hints>_<n>`` per
nest, placed before its function, and the nest replaced in place by
``host.launch @kernel grid [...] (buffers..., seeds...) scalars [sizes...]``.
Kernels whose bodies are identical (the same code up to the name: layer after
layer of a model) are emitted once and launched from every place that needs
them, as Inductor's kernel cache does; kernels are then numbered in order of
first use (``@coil_var_mean_0``, ``@coil_add_1`` ...), one number per distinct
kernel, not per nest.
Guarantees: no loop nest or copy is left at the top level of a function (the
pass fails naming the one it could not lower), and the module verifies (checked by
the driver: fx-opt after each pass, the backend after the pipeline).
The tiling and the ABI are described in ``loop_to_tt/kernel.py``.
"""

from __future__ import annotations

import dataclasses
import io
import logging
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass

import sympy
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import i32
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from coil.dialects import buffer as B
from coil.dialects import host, tt
from coil.dialects import loop as L
from coil.dialects.buffer import BufferType
from coil.lowering.loop_to_tt import gemm, split_finish
from coil.lowering.loop_to_tt import pdl as P
from coil.lowering.loop_to_tt.autotune import (
    candidate_options,
    config_key,
    rereads_its_outputs,
)
from coil.lowering.loop_to_tt.kernel import (
    Kernel,
    KernelLowering,
    Options,
    kernel_name,
    launch_config,
)
from coil.passinfo import check_options
from coil.strategy.gemm import GemmShape, parse_gemm_config
from coil.strategy.gemm import configs as gemm_configs
from coil.strategy.hints import with_size_hints
from coil.strategy.target import Target, module_target
from coil.strategy.variants import row_variants
from coil.transforms.input_level import require_below_aten

log = logging.getLogger("coil")

_KINDS = {
    "loop.pointwise": "pointwise",
    "loop.reduction": "reduction",
    "loop.scan": "scan",
    "loop.scatter": "scatter",
    "loop.fused": "fused",
}


def build_kernel(nest: L.LoopOp, name: str, options: Options, kind: str) -> Kernel:
    """The Triton kernel of ``nest``: the gemm template where the nest is a
    product it fits (``loop_to_tt/gemm.py``), else ``KernelLowering``'s tile."""
    if gemm.find_gemm(nest) is not None:
        try:
            return gemm.GemmLowering(nest, name, options, "gemm").build()
        except gemm.NotATemplate as e:
            log.warning(
                "coil: %s: not a gemm template (%s); lowered as a reduction", name, e.args[0]
            )
    return KernelLowering(nest, name, options, kind).build()


def _copy_as_pointwise(op: L.CopyOp) -> L.PointwiseOp:
    """``loop.copy %v, %dest`` as the nest that writes it: ``dest[i] = v[i]``."""
    shape = op.dest.type.shape_attr.data
    block = L.new_body(len(shape))
    load = L.LoadOp(op.value, L.index_symbols(len(shape)))
    block.add_ops([load, L.YieldOp(load.result)])
    nest = L.PointwiseOp.build(
        operands=[[op.dest]],
        result_types=[[]],
        properties={"ranges": L.ShapeAttr(shape)},
        regions=[Region(block)],
    )
    for inner in nest.walk():  # the kernel names the copy's user line
        inner.location = op.location
    return nest


@dataclass(frozen=True)
class ConvertLoopToTtPass(ModulePass):
    """Lower every top-level bufferized loop nest to a ``tt.func`` + ``host.launch``.

    Options (0 = heuristic): ``xblock``, ``rblock`` (tile sizes, powers of two),
    ``num-warps``, ``num-stages`` (launch config), ``persistent-threshold`` (the
    longest static reduction row kept whole in registers; longer or dynamic
    rows loop over ``RBLOCK`` chunks); ``online-softmax`` (default on: a looped
    softmax denominator accumulates next to its max, see ``online_softmax_pairs``).

    ``tile2d=auto`` (the default) tiles a pointwise nest whose loads and store
    disagree on their contiguous loop index (transposes, permutes) ``[YBLOCK,
    XBLOCK]`` so that each is contiguous along one tile axis; ``tile2d=off``
    keeps every pointwise nest 1-D. ``yblock`` (0 = heuristic) sets YBLOCK;
    ``xblock`` sets XBLOCK of both tilings. ``outer-reduction`` (default true)
    gives reductions whose loads are contiguous along the output index
    (``x.sum(0)``) a wide XBLOCK and a short looped RBLOCK. See
    ``loop_to_tt/tiling.py``.

    ``autotune=N`` (0 = off) builds up to ``N`` kernels per nest
    (``@coil_softmax_0_c0``, ``_c1``...: the heuristic config first, then
    distinct tiles, warps, persistent or looped rows; see ``loop_to_tt/autotune.py``)
    and launches them from one ``host.autotune "coil_softmax_0" {...}``: the
    runtime runs the fastest. A nest that reads what it writes (or one with a
    single distinct config) keeps its plain launch.
    """

    name = "convert-loop-to-tt"

    xblock: int = 0
    """XBLOCK, the tile's extent along the output (0: the heuristic)."""
    rblock: int = 0
    """RBLOCK, the tile's extent along a looped reduction row (0: the heuristic)."""
    num_warps: int = 0
    """Warps per program (0: the heuristic)."""
    num_stages: int = 0
    """Software-pipelining stages Triton compiles loops with (0: the heuristic)."""
    persistent_threshold: int = 4096
    """The longest static reduction row kept whole in registers; longer or dynamic
    rows loop over RBLOCK chunks (-1: rows always loop)."""
    autotune: int = 0
    """Up to N candidate configs per nest, timed once per size and GPU (0: off)."""
    dedupe: bool = True
    """Emit kernels with identical bodies once (launched from each place)."""
    bounds_check: bool = True
    """Assert on the device that indirect indices (gather, embedding, index) are in
    range: eager raises on an out-of-range index where an unchecked load reads
    whatever lies there. Kernels with the check compile in Triton's debug mode."""
    online_softmax: bool = True
    """A looped row's sum of exp(x - max) shares the max's loop, rescaled as the max
    grows (the online softmax): one read of the row instead of two."""
    tile2d: str = "auto"
    """"auto": 2-D ``[YBLOCK, XBLOCK]`` tiles for pointwise nests whose accesses
    disagree on the contiguous loop index; "off": 1-D tiles only."""
    yblock: int = 0
    """YBLOCK of 2-D pointwise tiles (0: the heuristic)."""
    outer_reduction: bool = True
    """Outer reductions (loads contiguous along the output index) get a wide
    XBLOCK and a short looped RBLOCK."""
    split_finish: bool = True
    """A split reduction's stage 2 runs in stage 1's kernel, by the last program of
    each tile to finish (an atomic counter in ``host.semaphores``): one launch
    instead of two (``loop_to_tt/split_finish.py``)."""
    one_program_finish: bool = True
    """A reduction built as one program right after the kernel that writes what
    it reads (a vector's normalization after a matrix-vector product) runs in
    that kernel's last program: one launch instead of two
    (``split_finish.one_program_pair``; ``split-finish=false`` turns it off too)."""
    eviction: str = "auto"
    """L2 eviction hints of loads (``loop_to_tt/eviction.py``): "auto" (Inductor's
    rules: broadcast and strided reads evict_last, a looped reduction's last
    read of a buffer evict_first; and a persistent reduction's, where it writes
    one value per row), "stream" (every kernel's last reads evict_first), "off"."""

    tf32: bool = False
    """f32 gemm templates multiply in TF32, as cuBLAS may (the backend sets it from
    ``torch.backends.cuda.matmul.allow_tf32``); otherwise ``inputPrecision = ieee``."""

    gemm_autotune: int = 0
    """Candidate configs per gemm template (0 = off): up to N of
    ``strategy/gemm.py``'s configs for its shape class, launched from one
    ``host.autotune`` that the runtime times once per size and GPU (the choice
    cached on disk, as ``autotune``'s); the backend sets it under
    ``mode="max-autotune"``."""

    gemm_config: str = ""
    """Force every gemm template's config: ``"BMxBNxBK"`` with optional
    ``wWARPS``, ``sSTAGES``, ``gGROUP_M`` (``"64x64x32w4s3g8"``); empty: the
    heuristic of ``strategy/gemm.py``. With ``autotune=N`` a gemm template gets
    up to N of the strategy's candidate configs."""

    variants: bool = True
    """A reduction over a symbolic row also gets persistent kernels for rows up to
    the bounds the cost model picks, launched from one ``host.variants`` that
    compares the actual size (``strategy/variants.py``); false: the looped kernel
    alone."""

    print_plans: bool = False
    """Print each kernel's plan and estimate on stderr (``fx-opt
    --print-kernel-plans``); every ``tt.func`` carries it as ``coil.plan``."""

    pdl: bool = False
    """Programmatic dependent launch (CUDA targets of compute capability 9.0 and
    later; elsewhere nothing changes): each kernel waits for the previous one
    (``tt.grid_dependency_wait``) only before its first access of memory other
    than a static input, loads those inputs (a matrix-vector product's weight
    rows, a looped row's first tile) before the wait, and is launched with
    ``launch_pdl`` after the function's first full launch
    (``loop_to_tt/pdl.py``)."""

    def __post_init__(self) -> None:
        check_options(self)

    @with_size_hints
    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        require_below_aten(op, "convert-loop-to-tt")
        options = Options(
            self.xblock,
            self.rblock,
            self.num_warps,
            self.num_stages,
            self.persistent_threshold,
            self.bounds_check,
            self.online_softmax,
            self.tile2d,
            self.yblock,
            self.outer_reduction,
            self.eviction,
            module_target(op),
            parse_gemm_config(self.gemm_config) if self.gemm_config else None,
            self.tf32,
        )
        counter = 0
        pdl = self.pdl and options.target.pdl
        for f in list(op.body.block.ops):
            if not isinstance(f, func.FuncOp) or not f.body.blocks:
                continue
            static = P.static_arguments(f) if pdl else set()
            earlier = {k for k in op.ops if isinstance(k, tt.FuncOp)}
            ops = list(f.body.block.ops)
            finished: set[Operation] = set()  # stage-2 nests run by their stage 1
            for k, nest in enumerate(ops):
                if nest in finished:
                    continue
                if isinstance(nest, L.CopyOp):
                    self._lower_copy(nest, f, options, counter)
                    counter += 1
                elif isinstance(nest, L.LoopOp) and nest.outs:
                    second = self._finishing_stage(ops, k) if self.split_finish else None
                    if second is not None and self._lower_split(nest, second, f, options, counter):
                        finished.add(second)
                    elif (
                        (second := self._one_program_consumer(ops, k)) is not None
                    ) and self._lower_one(nest, second, f, options, counter):
                        finished.add(second)
                    else:
                        self._lower(nest, f, options, counter)
                    counter += 1
            if pdl:
                made = [k for k in op.ops if isinstance(k, tt.FuncOp) and k not in earlier]
                P.launch_dependent(f, made, static)
            for left in f.body.block.ops:
                if isinstance(left, L.LoopOp | L.CopyOp | L.ViewOp):
                    what = "a value-semantic nest (no outs)" if isinstance(left, L.LoopOp) else ""
                    raise DiagnosticException(
                        f"convert-loop-to-tt: {left.name} is left in @{f.sym_name.data}"
                        f"{' — ' + what if what else ''}; run bufferize first"
                    )
        if self.dedupe:
            _dedupe_kernels(op)
        if self.print_plans:
            print_plans(op, options.target)
        # No module.verify() here: fx-opt verifies after every pass and the
        # backend after the pipeline, and on a large graph (thousands of kernel
        # ops) a second whole-module verify was a tenth of the compile.

    def _lower(self, nest: L.LoopOp, f: func.FuncOp, options: Options, counter: int) -> None:
        name = kernel_name(nest, counter)
        try:
            kernels = self._kernels(nest, name, options, _KINDS[nest.name])
            variants = self._variants(nest, name, options, kernels)
        except DiagnosticException as e:
            raise DiagnosticException(f"{e} (in {nest.name} of @{f.sym_name.data})") from e
        if variants:
            self._replace_variants(nest, variants, kernels[0], f, name)
        else:
            self._replace(nest, kernels, f, name)

    def _variants(
        self, nest: L.LoopOp, name: str, options: Options, kernels: list[Kernel]
    ) -> list[tuple[int, Kernel]]:
        """Persistent kernels ``(bound, kernel)`` for rows of a symbolic reduced
        size up to each bound the strategy keeps (``strategy/variants.py``), where
        the nest's one kernel loops; empty where none pays or the user fixed the
        tile."""
        if not self.variants or len(kernels) != 1 or isinstance(nest, L.ScanOp | L.ScatterOp):
            return []
        (kernel,) = kernels
        if kernel.shape is None or kernel.persistent or options.rblock or options.xblock:
            return []
        found = row_variants(
            kernel.shape,
            options.target,
            persistent_threshold=options.persistent_threshold,
            outer_tiles=options.outer_reduction,
        )
        out = []
        for v in found:
            built = build_kernel(
                nest,
                f"{name}_r{v.bound}",
                dataclasses.replace(options, rbound=v.bound),
                _KINDS[nest.name],
            )
            if built.persistent:
                out.append((v.bound, built))
        if out:
            note = "; ".join(v.summary() for v in found)
            kernel.func.attributes["coil.plan"] = builtin.StringAttr(
                f"{kernel.plan}; variants: {note}"
            )
        return out

    def _replace_variants(
        self,
        nest: L.LoopOp,
        variants: list[tuple[int, Kernel]],
        looped: Kernel,
        f: func.FuncOp,
        key: str,
    ) -> None:
        """``nest`` -> ``host.variants``: the persistent kernels by bound, then the looped one."""
        launches = self._launches([k for _, k in variants] + [looped], nest, f)
        size = sympy.expand(sympy.Mul(*nest.reduction_ranges.data))
        new = host.VariantsOp(key, size, [b for b, _ in variants], launches)
        new.location = nest.location
        Rewriter.replace_op(nest, new, [])

    def _finishing_stage(self, ops: list[Operation], k: int) -> L.LoopOp | None:
        """The nest after ``ops[k]`` when it finishes the split reduction ``ops[k]``."""
        if self.autotune > 1:  # tuned candidates of each stage stay separate launches
            return None
        j = k + 1
        while j < len(ops) and isinstance(ops[j], split_finish.BETWEEN):
            j += 1
        if j == len(ops) or not split_finish.stage_pair(ops[k], ops[j], ops[k + 1 : j]):
            return None
        return ops[j]  # type: ignore[return-value]

    def _one_program_consumer(self, ops: list[Operation], k: int) -> L.LoopOp | None:
        """The nest after ``ops[k]`` when it may run in ``ops[k]``'s last program
        (``split_finish.one_program_pair``; whether it is one program is known
        once built)."""
        if not (self.one_program_finish and self.split_finish) or self.autotune > 1:
            return None
        j = k + 1
        while j < len(ops) and isinstance(ops[j], (*split_finish.BETWEEN, B.ReuseOp)):
            j += 1
        if j == len(ops) or not split_finish.one_program_pair(ops[k], ops[j], ops[k + 1 : j]):
            return None
        return ops[j]  # type: ignore[return-value]

    def _lower_one(
        self, first: L.LoopOp, second: L.LoopOp, f: func.FuncOp, options: Options, counter: int
    ) -> bool:
        """Lower ``first`` with the one-program ``second`` run by its last program
        (``split_finish.merge_one``); False (nothing changed) where ``second`` is
        more programs or ``first`` not 1-D."""
        try:
            probe = build_kernel(second, "probe", options, _KINDS[second.name])
            head = build_kernel(first, "probe", options, _KINDS[first.name])
        except DiagnosticException:
            return False
        if [sympy.sympify(g) for g in probe.grid] != [1, 1, 1] or head.grid[1:] != [1, 1]:
            return False
        if head.yblock:
            return False
        split_finish.fresh_outputs(first, second)
        return self._lower_split(first, second, f, options, counter, one=True)

    def _lower_split(
        self,
        first: L.LoopOp,
        second: L.LoopOp,
        f: func.FuncOp,
        options: Options,
        counter: int,
        one: bool = False,
    ) -> bool:
        """Lower ``first`` with ``second`` run by its last programs (split_finish.py;
        ``one``: ``second`` is one program run by the last of all); False (nothing
        changed) where their tiles do not line up."""
        kind = _KINDS[first.name]
        name = kernel_name(second, counter)
        made: list[host.SemaphoresOp] = []

        def semaphores(n: int) -> SSAValue:
            device = first.outs[0].type.device_attr.data
            made.append(host.SemaphoresOp(BufferType([n], i32, device=device)))
            made[-1].result.name_hint = "sem"
            return made[-1].result

        try:
            if one:
                merged = split_finish.merge_one(
                    build_kernel(first, kernel_name(first, counter), options, kind),
                    build_kernel(second, name, options, _KINDS[second.name]),
                    kernel_name(first, counter),
                    semaphores,
                )
            else:
                merged = split_finish.merge(
                    build_kernel(first, kernel_name(first, counter), options, kind),
                    lambda o: build_kernel(second, name, o, _KINDS[second.name]),
                    options,
                    int(sympy.Mul(*second.ranges.data)),
                    name,
                    semaphores,
                )
        except DiagnosticException:
            merged = None  # each nest on its own says what it cannot lower
        if merged is None:
            return False
        Rewriter.insert_op(made[-1], InsertPoint.before(first))
        # Stage 2's outputs are written in stage 1's launch: allocate them first
        # (after stage 1's inputs are freed, their storage could be handed out).
        for out in second.outs:
            if isinstance(out.owner, B.AllocOp) and out.owner.parent is first.parent:
                alloc = out.owner
                if not alloc.is_before_in_block(first):
                    alloc.detach()
                    Rewriter.insert_op(alloc, InsertPoint.before(first))
        self._replace(first, [merged], f, name)
        second.detach()
        second.erase()
        return True

    def _lower_copy(self, op: L.CopyOp, f: func.FuncOp, options: Options, counter: int) -> None:
        for v in (op.value, op.dest):
            if not isinstance(v.type, BufferType):
                raise DiagnosticException(
                    f"convert-loop-to-tt: loop.copy of {v.type}: expected buffers; run "
                    "bufferize first"
                )
        nest = _copy_as_pointwise(op)
        holder = Block([nest])  # so the temporary nest has a parent while it is lowered
        try:
            hint = op.dest.name_hint
            name = f"coil_copy_{kernel_name(nest, counter)[5:]}" if not hint else None
            name = name or kernel_name(nest, counter, prefix="copy_")
            kernels = self._kernels(nest, name, options, "pointwise")
        finally:
            nest.detach()
            nest.erase()
            del holder
        self._replace(op, kernels, f, name)

    def _kernels(self, nest: L.LoopOp, name: str, options: Options, kind: str) -> list[Kernel]:
        """The heuristic kernel, then (``autotune``) distinct candidates, named ``_c<k>``."""
        kernel = build_kernel(nest, name, options, kind)
        if kernel.func.attributes.get("coil.kind") == builtin.StringAttr("gemm"):
            return self._gemm_candidates(nest, name, options, kernel)
        # No candidates for scans and scatters yet (a scatter's atomics must not rerun).
        if self.autotune <= 1 or isinstance(nest, L.ScanOp | L.ScatterOp):
            return [kernel]
        if rereads_its_outputs(list(nest.outs), kernel):
            return [kernel]
        kernels, seen = [kernel], {config_key(kernel)}
        for candidate in candidate_options(nest, options, kernel):
            if len(kernels) >= self.autotune:
                break
            k = build_kernel(nest, f"{name}_c{len(kernels)}", candidate, kind)
            if config_key(k) not in seen:
                seen.add(config_key(k))
                kernels.append(k)
        if len(kernels) > 1:
            kernel.func.sym_name = builtin.StringAttr(f"{name}_c0")
        return kernels

    def _gemm_candidates(
        self, nest: L.LoopOp, name: str, options: Options, kernel: Kernel
    ) -> list[Kernel]:
        """The template with the heuristic's config, and under ``gemm-autotune=N``
        up to N-1 other configs of its shape class (``strategy/gemm.py``)."""
        n = self.gemm_autotune or (self.autotune if not self.gemm_config else 0)
        tuned = "tuned at compile time" in kernel.plan  # a config max-autotune measured
        if n <= 1 or self.gemm_config or tuned or rereads_its_outputs(list(nest.outs), kernel):
            return [kernel]
        kernels, seen = [kernel], {config_key(kernel)}
        for cfg in gemm_configs_for(kernel, options.target):
            if len(kernels) >= n:
                break
            k = build_kernel(
                nest,
                f"{name}_c{len(kernels)}",
                dataclasses.replace(options, gemm_config=cfg),
                "gemm",
            )
            if config_key(k) not in seen:
                seen.add(config_key(k))
                kernels.append(k)
        if len(kernels) > 1:
            kernel.func.sym_name = builtin.StringAttr(f"{name}_c0")
        return kernels

    @staticmethod
    def _launches(kernels: list[Kernel], nest: Operation, f: func.FuncOp) -> list[host.LaunchOp]:
        """Each kernel's function placed before ``f``, and a launch of it at ``nest``'s location."""
        launches = []
        for kernel in kernels:
            Rewriter.insert_op(kernel.func, InsertPoint.before(f))
            launch = host.LaunchOp(
                kernel.func.sym_name.data,
                kernel.grid,
                kernel.args,
                kernel.scalars,
                launch_config(kernel),
            )
            launch.location = nest.location
            launches.append(launch)
        return launches

    def _replace(self, nest: Operation, kernels: list[Kernel], f: func.FuncOp, key: str) -> None:
        launches = self._launches(kernels, nest, f)
        new = launches[0] if len(launches) == 1 else host.AutotuneOp(key, launches)
        new.location = nest.location
        Rewriter.replace_op(nest, new, [])


def gemm_configs_for(kernel: Kernel, target: Target) -> list:
    """The strategy's candidate configs for a built gemm template's shape class."""
    shape = kernel.func.attributes.get("coil.gemm_shape")
    if not isinstance(shape, builtin.ArrayAttr):
        return []
    m, n, k, batch, in_bytes = (a.value.data for a in shape.data)
    return gemm_configs(GemmShape(m, n, k, batch, in_bytes, in_bytes), target)


def print_plans(module: builtin.ModuleOp, target: Target) -> None:
    """Each kernel's plan, one line each, on stderr."""
    print(f"convert-loop-to-tt: plans for {target.summary()}", file=sys.stderr)
    for kernel in module.ops:
        if isinstance(kernel, tt.FuncOp):
            plan = kernel.attributes.get("coil.plan")
            text = plan.data if isinstance(plan, builtin.StringAttr) else "(no plan)"
            print(f"  @{kernel.sym_name.data}: {text}", file=sys.stderr)


_COUNTER = re.compile(r"_\d+$")


def _body_key(kernel: tt.FuncOp) -> str:
    """A kernel's code without its name and attributes (provenance, cost)."""
    out = io.StringIO()
    printer = Printer(stream=out)
    printer.print_attribute(kernel.function_type)
    printer.print_region(kernel.body)
    return out.getvalue()


def _dedupe_kernels(module: builtin.ModuleOp) -> None:
    """Merge kernels with identical bodies into the first, and renumber the
    kernels ``coil_<what>_<k>`` in order of first definition."""
    tuned = {
        launch.kernel_name
        for op in module.walk()
        if isinstance(op, host.AutotuneOp | host.VariantsOp)
        for launch in op.launches
    }
    kernels = [op for op in module.ops if isinstance(op, tt.FuncOp)]
    dedupe_kernels(module, kernels, _body_key, keep=tuned)


def dedupe_kernels(
    module: builtin.ModuleOp,
    kernels: list[Operation],
    body_key: Callable[[Operation], str],
    keep: set[str] = frozenset(),
) -> None:
    """Merge ``kernels`` whose ``body_key`` is equal into the first, renumber
    them ``<what>_<k>`` in order of first definition and relaunch the host's
    launches; kernels named in ``keep`` (an autotuned launch's candidates)
    stay as they are. The tt and the C++ kernels (convert_loop_to_cpp) share it."""
    first: dict[str, Operation] = {}
    merged: dict[str, Operation] = {}  # a removed kernel's name -> the twin kept
    kept: list[Operation] = []
    staying = {k.sym_name.data for k in kernels if k.sym_name.data in keep}
    for kernel in kernels:
        name = kernel.sym_name.data
        if name in keep:
            continue
        twin = first.setdefault(body_key(kernel), kernel)
        if twin is kernel:
            kept.append(kernel)
        else:
            merged[name] = twin
            kernel.detach()
            kernel.erase()
    # Old names map to new ones in one step: renaming in place chained a
    # kernel renamed to another's old name (``_2 -> _1`` after ``_1 -> _2``)
    # on to that one's new name, so two kernels' launches met at one.
    # The names in ``keep`` stay, so a number is skipped where it would give
    # a renumbered kernel one of them (a dynamic argmin's looped variant kept
    # ``coil_argmin_3`` while a later argmin, fourth of the renumbered, became
    # ``coil_argmin_3`` too: "Redefinition of symbol", found by coil.tools.fuzz).
    rename: dict[str, str] = {}
    k = 0
    for kernel in kept:
        old = kernel.sym_name.data
        base = _COUNTER.sub("", old)
        while f"{base}_{k}" in staying:
            k += 1
        new = f"{base}_{k}"
        k += 1
        rename[old] = new
        kernel.sym_name = builtin.StringAttr(new)
    for name, twin in merged.items():
        rename[name] = twin.sym_name.data
    for op in module.walk():
        if isinstance(op, host.LaunchOp) and op.kernel_name in rename:
            op.kernel = builtin.SymbolRefAttr(rename[op.kernel_name])
