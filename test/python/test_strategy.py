"""The kernel strategy (``coil/strategy``): the target read from the device or
named, carried by the module and keyed by the caches; the one inner/outer
classification of a reduction; the cost model's plans differing where the
targets differ; and a grep that no device constant is left outside the
target description."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
import sympy

from coil.ir import parse_module, print_module
from coil.strategy import access as A
from coil.strategy import plan as P
from coil.strategy.target import (
    ATTR,
    TARGETS,
    Target,
    from_properties,
    module_target,
    resolve,
    set_module_target,
)

ROOT = Path(__file__).resolve().parents[2]


# -- the target ------------------------------------------------------------------


def _props(**kw):
    base = dict(
        name="NVIDIA H100 80GB HBM3",
        major=9,
        minor=0,
        multi_processor_count=132,
        L2_cache_size=50 << 20,
        shared_memory_per_multiprocessor=233472,
        shared_memory_per_block_optin=232448,
        max_threads_per_multi_processor=2048,
        regs_per_multiprocessor=65536,
        warp_size=32,
        memory_clock_rate=2619000,  # kHz
        memory_bus_width=5120,
        clock_rate=1980000,  # kHz
    )
    base.update(kw)
    return SimpleNamespace(**base)


def test_target_read_from_device_properties():
    t = from_properties(_props())
    assert t.num_sms == 132 and t.l2_bytes == 50 << 20 and t.max_blocks_per_sm == 32
    assert t.dram_bytes_per_s == pytest.approx(3.35e12, rel=0.01)  # 2 * 5120 / 8 * 2.619 GHz
    assert t.clock_hz == pytest.approx(1.98e9)
    a100 = from_properties(
        _props(
            name="NVIDIA A100-SXM4-80GB",
            major=8,
            multi_processor_count=108,
            L2_cache_size=40 << 20,
            memory_clock_rate=1593000,
        )
    )
    assert a100.num_sms == 108 and a100.dram_latency_s == 550e-9
    # A torch build that does not report a field keeps the default GPU's.
    bare = from_properties(SimpleNamespace(multi_processor_count=20))
    assert bare.num_sms == 20 and bare.dram_bytes_per_s == TARGETS["h100"].dram_bytes_per_s


def test_target_attribute_round_trips_and_defaults():
    text = 'func.func @f(%x: !buffer.buffer<[4], f32, device "cuda:0">) {\n  func.return\n}'
    module = parse_module(text)
    assert module_target(module).name == "h100"  # CUDA tensors, no attribute
    set_module_target(module, TARGETS["a100"])
    again = parse_module(print_module(module))
    assert module_target(again) == TARGETS["a100"]
    cpu = parse_module(text.replace(', device "cuda:0"', ""))
    assert module_target(cpu).name == "cpu-interpreter" and module_target(cpu).serial
    assert resolve("h200", "cuda:0") == TARGETS["h200"]
    assert resolve("auto", "cpu") == TARGETS["cpu-interpreter"]
    with pytest.raises(ValueError, match="unknown target 'b200'"):
        resolve("b200", "cpu")
    partial = type(module.attributes[ATTR])({"name": module.attributes[ATTR].data["name"]})
    with pytest.raises(ValueError, match="lacks the property"):
        Target.from_attr(partial)


def test_graph_cache_key_depends_on_the_target():
    from coil.runtime.graphcache import graph_key

    text = 'func.func @f(%x: !buffer.buffer<[4], f32, device "cuda:0">) {\n  func.return\n}'
    keys = set()
    for name in ("h100", "h200", "a100"):
        module = parse_module(text)
        set_module_target(module, TARGETS[name])
        keys.add(graph_key(module, "p", {}).digest)
    assert len(keys) == 3


def test_aot_cache_tag_depends_on_the_target():
    torch = pytest.importorskip("torch")
    from coil.runtime.aotcache import target_tag

    gm = torch.fx.symbolic_trace(torch.nn.ReLU())
    x = torch.randn(2)
    tags = {target_tag(gm, [x], {"target": t}) for t in ("h100", "a100", "auto")}
    assert len(tags) == 3  # "auto" on the CPU: cpu-interpreter


def test_backend_rejects_an_unknown_target():
    torch = pytest.importorskip("torch")
    import coil.backend

    gm = torch.fx.symbolic_trace(torch.nn.ReLU())
    with pytest.raises(ValueError, match="option target must be one of auto, h100"):
        coil.backend.coil(gm, [torch.randn(2)], options={"target": "b200"})


def test_no_device_constant_outside_the_target_description():
    # The SM count, the programs that fill a GPU, device properties: read in
    # strategy/target.py and nowhere else in the compiler.
    pattern = re.compile(
        r"num_sms\s*[:=]\s*[1-9]|FILL_PROGRAMS|get_device_properties|"
        r"multi_processor_count|\b(?:132|108)\b"
    )
    offenders = []
    folders = ("dialects", "frontend", "strategy", "transforms", "lowering", "targets", "runtime")
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.relative_to(ROOT).as_posix() == "strategy/target.py":
                continue
            for k, line in enumerate(path.read_text().splitlines(), 1):
                code = line.split("#", 1)[0]
                if pattern.search(code) and "``" not in code:
                    offenders.append(f"{path.relative_to(ROOT)}:{k}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


# -- the one inner/outer vote -------------------------------------------------------


def _nest(text: str):
    from coil.dialects import loop as L

    module = parse_module(text)
    return next(op for op in module.walk() if isinstance(op, L.ReductionOp | L.FusedOp))


REDUCTION = """func.func @f(%x: !buffer.buffer<{shape}, bf16{strides}>) {{
  %s = buffer.alloc : !buffer.buffer<{out}, f32>
  loop.reduction sum {ranges} {rranges} outs(%s : !buffer.buffer<{out}, f32>) {{
  ^bb0({args}):
    %0 = loop.load %x[{index}] : !buffer.buffer<{shape}, bf16{strides}>
    %1 = arith.extf %0 : bf16 to f32
    loop.yield %1 : f32
  }}
  func.return
}}"""


def _reduction(shape, strides, out, ranges, rranges, index):
    n, m = ranges.count(",") + 1, rranges.count(",") + 1
    args = ", ".join([f"%i{k}: index" for k in range(n)] + [f"%r{k}: index" for k in range(m)])
    return REDUCTION.format(
        shape=shape,
        strides=f", strides {strides}" if strides else "",
        out=out,
        ranges=ranges,
        rranges=rranges,
        args=args,
        index=index,
    )


def test_classify_rows_columns_and_channels_last():
    rows = _nest(_reduction("[64, 1000]", "", "[64]", "[64]", "[1000]", "i0, r0"))
    acc = A.classify_reduction(rows)
    assert acc.axis == "inner" and acc.rows_contiguous and acc.inner_bytes == 2
    cols = _nest(_reduction("[1000, 64]", "", "[64]", "[64]", "[1000]", "r0, i0"))
    acc = A.classify_reduction(cols)
    assert acc.axis == "outer" and acc.sector == 2 and not acc.rows_contiguous
    # A spatial mean of a channels-last [N, C, H, W]: contiguous along C, an output.
    nhwc = "[8, 64, 7, 9]", "[4032, 1, 576, 64]"
    mean = _nest(_reduction(*nhwc, "[8, 64]", "[8, 64]", "[7, 9]", "i0, i1, r0, r1"))
    assert A.classify_reduction(mean).axis == "outer"
    # A group norm's statistics over (C, H, W) of the same tensor: the rows are
    # walked H, W, C (C innermost), so the loads are contiguous along the row.
    gn = _nest(_reduction(*nhwc, "[8]", "[8]", "[64, 7, 9]", "i0, r0, r1, r2"))
    acc = A.classify_reduction(gn)
    assert acc.rorder == (1, 2, 0) and acc.axis == "inner" and acc.rows_contiguous
    # Logical order where asked (an arg reduction counts its index in it).
    assert A.classify_reduction(gn, keep_rorder=True).axis == "strided"


LN_WEIGHT_GRAD = (
    (
        "func.func @f(%dy: !buffer.buffer<[6304, 384], {dt}>,"
        " %x: !buffer.buffer<[6304, 384], {dt}>,"
        " %mean: !buffer.buffer<[6304], f32>, %rstd: !buffer.buffer<[6304], f32>) {{\n"
    )
    + """  %s = buffer.alloc : !buffer.buffer<[384], f32>
  loop.reduction sum [384] [6304] outs(%s : !buffer.buffer<[384], f32>) {{
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %dy[r0, i0] : !buffer.buffer<[6304, 384], {dt}>
    %1 = loop.load %x[r0, i0] : !buffer.buffer<[6304, 384], {dt}>
    %2 = loop.load %mean[r0] : !buffer.buffer<[6304], f32>
    %3 = loop.load %rstd[r0] : !buffer.buffer<[6304], f32>
    %4 = {ext0}
    %5 = {ext1}
    %6 = arith.subf %5, %2 : f32
    %7 = arith.mulf %6, %3 : f32
    %8 = arith.mulf %4, %7 : f32
    loop.yield %8 : f32
  }}
  func.return
}}"""
)


@pytest.mark.parametrize("dt", ["f32", "bf16"])
def test_a_layer_norm_weight_gradient_is_a_column_sum(dt):
    # sum over rows of dy * (x - mean) * rstd: the per-row mean and rstd are
    # contiguous along the rows but fetched once per row for every column; the
    # vote is the [rows, C] reads', down the columns (ViT-S f32 training: the
    # inner tiling of 2 columns by 2048 rows took 23 us where Inductor's 5.7)
    if dt == "f32":  # (an add stands in for the extension: only the loads are classified)
        ext = ["arith.addf %0, %0 : f32", "arith.addf %1, %1 : f32"]
    else:
        ext = [f"arith.extf %0 : {dt} to f32", f"arith.extf %1 : {dt} to f32"]
    nest = _nest(LN_WEIGHT_GRAD.format(dt=dt, ext0=ext[0], ext1=ext[1]))
    acc = A.classify_reduction(nest)
    assert acc.axis == "outer", acc


# -- plans ---------------------------------------------------------------------------


def _shape(x, r, axis, nbytes=4, rorder=(0,)):
    acc = A.ReductionAccess(
        axis,
        rorder,
        nbytes if axis == "inner" else 0,
        nbytes if axis == "outer" else 0,
        0,
        0,
        nbytes,
        axis == "inner",
        1,
    )
    return P.ReductionShape(sympy.Integer(x), sympy.Integer(r), acc)


def test_split_follows_the_model():
    h100 = TARGETS["h100"]
    # Few long rows: split; many rows: the GPU is full, left alone.
    assert P.split_plan(_shape(8, 100000, "inner"), [sympy.Integer(100000)], h100) is not None
    assert P.split_plan(_shape(32768, 2048, "inner"), [sympy.Integer(2048)], h100) is None
    # A column sum: split in chunks of rows; its estimate beats the one kernel.
    why: list[str] = []
    plan = P.split_plan(_shape(2048, 32768, "outer"), [sympy.Integer(32768)], h100, explain=why)
    assert plan is not None and plan.estimate.seconds < 0.9 * plan.unsplit.seconds
    assert "in two stages against" in why[0]
    # The interpreter target keeps the GPU's splits (the CPU tests run them).
    cpu = TARGETS["cpu-interpreter"]
    assert P.split_plan(_shape(2048, 32768, "outer"), [sympy.Integer(32768)], cpu) == plan


def test_plans_differ_where_the_targets_do():
    # 32 rows of 65536 f32 (32 programs, latency-bound): both split in 16 (the
    # streamed first stage runs in one round on either; before the streamed
    # tiles the A100 took 8, loop-split-reduction-targets.mlir), each estimated
    # at its own device's speed: the A100's slower.
    rows = [sympy.Integer(65536)]
    h100 = P.split_plan(_shape(32, 65536, "inner"), rows, TARGETS["h100"])
    a100 = P.split_plan(_shape(32, 65536, "inner"), rows, TARGETS["a100"])
    assert h100 is not None and h100.nsplit == 16
    assert a100 is not None and a100.nsplit == 16
    assert a100.estimate.seconds > h100.estimate.seconds
    # 256 rows of 64: one a program on a GPU, 64 under the interpreter (which
    # never spreads rows over more programs).
    short = _shape(256, 64, "inner")
    assert P.reduction_tile(short, TARGETS["h100"]).xblock == 1
    assert P.reduction_tile(short, TARGETS["cpu-interpreter"]).xblock == 64
    # The same tile is estimated faster where the bandwidth is higher.
    big = _shape(32768, 2048, "inner", nbytes=2)
    t_h100 = P.reduction_tile(big, TARGETS["h100"]).estimate.seconds
    t_h200 = P.reduction_tile(big, TARGETS["h200"]).estimate.seconds
    t_a100 = P.reduction_tile(big, TARGETS["a100"]).estimate.seconds
    assert t_h200 < t_h100 < t_a100


def test_a_heavy_body_takes_fewer_rows_a_program():
    """BODY_OPS_PER_THREAD: DeBERTa's disentangled-attention softmax (49152 rows
    of 512, 82 ops a point, two phases and a per-point output) ran 0.365 ms at
    [8, 512] and 0.223 at [1, 512] on an H200; the same rows through a plain
    softmax's few ops keep 8 rows a program. A user's XBLOCK is kept."""
    h200 = TARGETS["h200"]

    def softmax(ops):
        shape = _shape(49152, 512, "inner", nbytes=2)
        return replace(shape, access=replace(shape.access, ops=ops), phases=2, point_out_bytes=2)

    assert P.reduction_tile(softmax(4), h200).xblock == 8
    heavy = P.reduction_tile(softmax(82), h200)
    assert (heavy.xblock, heavy.rblock, heavy.warps) == (1, 512, 4)
    assert "8 -> 1 rows a program: a heavy body (82 ops a point)" in heavy.summary()
    assert P.reduction_tile(softmax(82), h200, xblock=8).xblock == 8
    # Rows a program shrink only as far as the body needs: 40 ops fit 8 points
    # a thread ([2, 512] at 4 warps).
    assert P.reduction_tile(softmax(40), h200).xblock == 2
    # Not where a load runs along the rows (a transposed read): rows a program
    # share its sectors.
    transposed = softmax(82)
    transposed = replace(transposed, access=replace(transposed.access, outer_bytes=2))
    assert P.reduction_tile(transposed, h200).xblock == 8


def test_outer_rows_of_two_phases_may_stay_whole():
    """A looped outer row of two phases (a norm: statistics, then outputs) reads
    the row twice; held whole, once. The model weighs both (6304 rows of 384,
    ViT's first layer norm over its transposed patch embedding): whole. One
    phase (a column sum) reads the row once either way and keeps the looped
    tile, as does a row too long to hold."""
    h100 = TARGETS["h100"]
    base = _shape(6304, 384, "outer")
    norm = P.reduction_tile(replace(base, phases=2, point_out_bytes=4), h100)
    assert norm.outer and norm.persistent and norm.rblock == 512, norm.summary()
    assert not P.reduction_tile(base, h100).persistent
    long = replace(_shape(6304, 8192, "outer"), phases=2, point_out_bytes=4)
    assert not P.reduction_tile(long, h100).persistent


# fx-opt --device and --print-kernel-plans: test/lowering/convert-loop-to-tt/plans.mlir
# and test/transforms/loop-split-reduction-targets.mlir (lit).


def test_outer_split_considers_whole_slices():
    # A channels-last mean over 65 x 65 planes (f32, 96 channels x 32 images),
    # cut along H in slices of 65 points: the power-of-two chunk targets round
    # to 65, 33, 13, 9, 5 or 3 chunks; every whole number of slices is also a
    # candidate, and the H200 takes 22 chunks of 3 (devlogs/30: 21.9 us, 27.6
    # in the 5 chunks the targets alone gave).
    rranges = [sympy.Integer(65), sympy.Integer(65)]
    shape = _shape(32 * 96, 65 * 65, "outer", rorder=(0, 1))
    points = P._chunk_points(rranges, [0, 1], P.OUTER_CHUNKS, 4096)
    assert set(P.OUTER_CHUNKS) < set(points) and 3 * 65 in points
    plan = P.split_plan(shape, rranges, TARGETS["h200"])
    assert plan is not None and (plan.nsplit, plan.chunk, plan.unit) == (22, 3, 65)
    # A flat dimension (a column sum) keeps the power-of-two targets.
    flat = [sympy.Integer(32768)]
    assert P._chunk_points(flat, [0], P.OUTER_CHUNKS, 4096) == P.OUTER_CHUNKS


def test_split_estimate_prices_the_finish_the_back_end_builds():
    """The finish of a split runs in stage 1's kernel only where stage 1's output
    tiles line up (``finish_tiles``, also ``split_finish.merge``'s rule); a
    column sum of 100003 x 17 f32 in [8, 64] tiles (three tiles over 17
    outputs) gets two launches, and was priced as one with 98 chunks' counter
    atomics (18.5 us, 98 chunks; measured 15.4 us on an H200 at b869e38)."""
    assert P.finish_tiles(2048, 64, 32) == (32, 1)
    assert P.finish_tiles(17, 32, 1) == (1, 1)
    assert P.finish_tiles(17, 8, 3) is None
    assert P.finish_tiles(17, 32, P.MAX_SERIAL + 1) is None
    h100 = TARGETS["h100"]
    skinny = _shape(17, 100003, "outer")
    rows = [sympy.Integer(100003)]
    plan = P.split_plan(skinny, rows, h100)
    assert plan is not None
    stage1, t1 = P.stage1_tile(skinny, plan, h100)
    assert P.finish_tiles(17, t1.xblock, 3) is None
    # Two launches: the estimate is both stages and a launch, no atomics.
    assert plan.estimate.launches == 2, plan.summary()
    # With the atomics gone, more chunks pay: 391 of 256 rows, not 98 of 1021.
    assert plan.nsplit == 391, plan.summary()
    # A column sum whose 2048 outputs tile stage 1 keeps the one launch.
    wide = P.split_plan(_shape(2048, 32768, "outer"), [sympy.Integer(32768)], h100)
    assert wide is not None and wide.estimate.launches == 1, wide.summary()


def test_window_tile_spreads_few_outputs():
    # A window of 25 partials over 3000 outputs (a split mean's separate
    # finish): 64 outputs a program, 47 programs, not 3 of 1024 (devlogs/30:
    # 11.6 us against 14.0 in all).
    h200 = TARGETS["h200"]
    xblock, warps, est, note = P.window_tile(sympy.Integer(3000), 104, 2, h200)
    assert (xblock, warps, est.programs) == (64, 4, 47) and "1024 -> 64" in note
    # Many outputs fill the GPU at 1024 (a channels-last 3 x 3 max pool).
    assert P.window_tile(sympy.Integer(32 * 64 * 56 * 56), 20, 9, h200)[0] == 1024
    # The interpreter never spreads outputs over more programs.
    assert P.window_tile(sympy.Integer(3000), 104, 2, TARGETS["cpu-interpreter"])[0] == 1024
