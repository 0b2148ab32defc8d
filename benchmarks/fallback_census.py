"""Which ATen ops fall back (``buffer.extern``, "no loop lowering") on small
CPU programs that use the pooling, resampling, padding and normalization ops
of timm/torchvision-style models.

Each case is a small module compiled with ``torch.compile(backend="coil")``
on the CPU (kernels under Triton's interpreter), twice: an inference call
under ``torch.no_grad()``, and a training step (the input and the module's
parameters require grad; ``backward`` of a random-weighted sum), so the
backward ops show too. For each, the script records the overloads
``convert-aten-to-loop`` sent to ATen (its "no loop lowering" warnings; the
once-per-process memory of reported ops is cleared before every compile) and
checks the outputs and gradients against eager.

Run: ``python benchmarks/fallback_census.py [-k SUBSTRING] [--inference-only]``
(``--list`` prints the case names). The table lists each case's fallbacks;
the last lines, the distinct ops that fell back and the cases that hit
each. Sizes are tiny: the census is about what lowers, not how fast.
"""

from __future__ import annotations

import argparse
import copy
import logging
import os
import re
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

os.environ.setdefault("COIL_DISABLE_CACHE", "1")

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class Case:
    name: str
    build: Callable[[], nn.Module]
    shape: tuple[int, ...]
    channels_last: bool = False
    train: bool = True


class Fn(nn.Module):
    """A module around a function of one tensor."""

    def __init__(self, fn: Callable[[torch.Tensor], torch.Tensor]):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def fn(f):
    return lambda: Fn(f)


class PoolMixer(nn.Module):
    """PoolFormer's token mixer: pool(x) - x."""

    def __init__(self):
        super().__init__()
        self.pool = nn.AvgPool2d(3, 1, 1, count_include_pad=False)

    def forward(self, x):
        return self.pool(x) - x


class SqueezeExcite(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.fc1, self.fc2 = nn.Conv2d(c, 4, 1), nn.Conv2d(4, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * torch.sigmoid(self.fc2(F.relu(self.fc1(s))))


class Stem(nn.Module):
    """ResNet's stem: conv, batch norm, relu, 3x3/2 max pool."""

    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 8, 3, 2, 1), nn.BatchNorm2d(8)

    def forward(self, x):
        return F.max_pool2d(F.relu(self.bn(self.conv(x))), 3, 2, 1)


class Transition(nn.Module):
    """DenseNet's transition: bn, relu, 1x1 conv, 2x2 average pool."""

    def __init__(self):
        super().__init__()
        self.bn, self.conv = nn.BatchNorm2d(8), nn.Conv2d(8, 4, 1)

    def forward(self, x):
        return F.avg_pool2d(self.conv(F.relu(self.bn(x))), 2)


class Fpn(nn.Module):
    """An FPN top-down step: upsample the coarse map, add the lateral one."""

    def __init__(self, mode="nearest", align_corners=None):
        super().__init__()
        self.lateral = nn.Conv2d(8, 8, 1)
        self.mode, self.align_corners = mode, align_corners

    def forward(self, x):
        coarse = F.max_pool2d(x, 2)
        up = F.interpolate(
            coarse, size=x.shape[-2:], mode=self.mode, align_corners=self.align_corners
        )
        return self.lateral(x) + up


class GroupNormConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.gn = nn.Conv2d(8, 8, 3, padding=1), nn.GroupNorm(2, 8)

    def forward(self, x):
        return F.silu(self.gn(self.conv(x)))


class LayerNormMlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln, self.fc = nn.LayerNorm(8), nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(self.ln(x))


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 8)

    def forward(self, x):
        idx = (x.detach().abs() * 5).long() % 16
        return self.emb(idx[..., 0]) * x[..., :8]


class GridSample(nn.Module):
    def __init__(self, align_corners=False, mode="bilinear", padding_mode="zeros"):
        super().__init__()
        self.kw = dict(align_corners=align_corners, mode=mode, padding_mode=padding_mode)
        self.theta = nn.Parameter(torch.tensor([[[0.9, 0.1, 0.05], [-0.1, 0.8, 0.1]]]))

    def forward(self, x):
        grid = F.affine_grid(
            self.theta.expand(x.shape[0], 2, 3), list(x.shape), align_corners=False
        )
        return F.grid_sample(x, grid, **self.kw)


class WindowShift(nn.Module):
    """Swin's shifted windows: roll, window partition (views), reverse roll."""

    def forward(self, x):
        n, c, h, w = x.shape
        x = torch.roll(x, (-2, -2), (2, 3))
        win = x.view(n, c, h // 4, 4, w // 4, 4).permute(0, 2, 4, 3, 5, 1).softmax(-1)
        x = win.permute(0, 5, 1, 3, 2, 4).reshape(n, c, h, w)
        return torch.roll(x, (2, 2), (2, 3))


CASES: list[Case] = [
    # average pooling
    Case("avg_pool1d", fn(lambda x: F.avg_pool1d(x, 3, 2, 1)), (2, 3, 11)),
    Case("avg_pool2d", fn(lambda x: F.avg_pool2d(x, 3, 2, 1)), (2, 3, 9, 11)),
    Case("avg_pool2d_cl", fn(lambda x: F.avg_pool2d(x, 3, 2, 1)), (2, 3, 9, 11), True),
    Case("avg_pool2d_ceil", fn(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True)), (2, 3, 10, 9)),
    Case(
        "avg_pool2d_no_pad_count",
        fn(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)),
        (2, 3, 10, 9),
    ),
    Case("avg_pool2d_divisor", fn(lambda x: F.avg_pool2d(x, 2, divisor_override=3)), (2, 3, 8, 7)),
    Case("avg_pool3d", fn(lambda x: F.avg_pool3d(x, 2, 2, 1)), (1, 2, 5, 6, 7)),
    Case("poolformer_mixer", PoolMixer, (2, 8, 7, 7)),
    Case("densenet_transition", Transition, (2, 8, 8, 8)),
    # max pooling
    Case("max_pool1d", fn(lambda x: F.max_pool1d(x, 3, 2, 1)), (2, 3, 11)),
    Case("max_pool2d", fn(lambda x: F.max_pool2d(x, 3, 2, 1)), (2, 3, 9, 11)),
    Case("max_pool2d_cl", fn(lambda x: F.max_pool2d(x, 3, 2, 1)), (2, 3, 9, 11), True),
    Case(
        "max_pool2d_dil_ceil",
        fn(lambda x: F.max_pool2d(x, 3, 2, 1, dilation=2, ceil_mode=True)),
        (1, 2, 10, 9),
    ),
    Case("max_pool3d", fn(lambda x: F.max_pool3d(x, 2, 2, 1)), (1, 2, 5, 6, 7)),
    Case("resnet_stem", Stem, (2, 3, 16, 16)),
    # adaptive pooling
    Case("adaptive_avg_pool2d_1", fn(lambda x: F.adaptive_avg_pool2d(x, 1)), (2, 3, 7, 5)),
    Case("adaptive_avg_pool2d_3x2", fn(lambda x: F.adaptive_avg_pool2d(x, (3, 2))), (2, 3, 7, 5)),
    Case("adaptive_avg_pool1d", fn(lambda x: F.adaptive_avg_pool1d(x, 4)), (2, 3, 11)),
    Case("adaptive_avg_pool3d", fn(lambda x: F.adaptive_avg_pool3d(x, 2)), (1, 2, 5, 4, 3)),
    Case("adaptive_max_pool2d", fn(lambda x: F.adaptive_max_pool2d(x, (3, 2))), (2, 3, 7, 5)),
    Case("adaptive_max_pool1d", fn(lambda x: F.adaptive_max_pool1d(x, 4)), (2, 3, 11)),
    Case("squeeze_excite", SqueezeExcite, (2, 8, 5, 5)),
    # resampling
    Case("upsample_nearest2d", fn(lambda x: F.interpolate(x, scale_factor=2)), (2, 3, 5, 4)),
    Case("upsample_nearest2d_size", fn(lambda x: F.interpolate(x, size=(7, 9))), (2, 3, 5, 4)),
    Case(
        "upsample_nearest_exact",
        fn(lambda x: F.interpolate(x, size=(7, 9), mode="nearest-exact")),
        (2, 3, 5, 4),
    ),
    Case("upsample_nearest1d", fn(lambda x: F.interpolate(x, scale_factor=2)), (2, 3, 5)),
    Case("upsample_nearest3d", fn(lambda x: F.interpolate(x, scale_factor=2)), (1, 2, 3, 4, 3)),
    Case(
        "upsample_bilinear2d",
        fn(lambda x: F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=False)),
        (2, 3, 5, 4),
    ),
    Case(
        "upsample_bilinear2d_ac",
        fn(lambda x: F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=True)),
        (2, 3, 5, 4),
    ),
    Case(
        "upsample_bilinear2d_cl",
        fn(lambda x: F.interpolate(x, scale_factor=2, mode="bilinear")),
        (2, 3, 5, 4),
        True,
    ),
    Case("upsample_linear1d", fn(lambda x: F.interpolate(x, size=9, mode="linear")), (2, 3, 5)),
    Case(
        "upsample_trilinear3d",
        fn(lambda x: F.interpolate(x, scale_factor=2, mode="trilinear")),
        (1, 2, 3, 4, 3),
    ),
    Case(
        "upsample_bicubic2d",
        fn(lambda x: F.interpolate(x, size=(7, 9), mode="bicubic", align_corners=False)),
        (2, 3, 5, 4),
    ),
    Case(
        "upsample_bicubic2d_ac",
        fn(lambda x: F.interpolate(x, size=(7, 9), mode="bicubic", align_corners=True)),
        (2, 3, 5, 4),
    ),
    Case("fpn_nearest", Fpn, (2, 8, 8, 8)),
    Case("fpn_bilinear", lambda: Fpn("bilinear", False), (2, 8, 8, 8)),
    # padding
    Case("reflection_pad1d", fn(lambda x: F.pad(x, (2, 1), mode="reflect")), (2, 3, 7)),
    Case("reflection_pad2d", fn(lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect")), (2, 3, 5, 6)),
    Case(
        "reflection_pad3d",
        fn(lambda x: F.pad(x, (1, 1, 1, 1, 1, 1), mode="reflect")),
        (1, 2, 3, 4, 5),
    ),
    Case("replication_pad1d", fn(lambda x: F.pad(x, (2, 1), mode="replicate")), (2, 3, 7)),
    Case("replication_pad2d", fn(lambda x: F.pad(x, (2, 1, 1, 2), mode="replicate")), (2, 3, 5, 6)),
    Case(
        "replication_pad3d",
        fn(lambda x: F.pad(x, (1, 1, 1, 1, 1, 1), mode="replicate")),
        (1, 2, 3, 4, 5),
    ),
    Case("circular_pad2d", fn(lambda x: F.pad(x, (2, 1, 1, 2), mode="circular")), (2, 3, 5, 6)),
    Case("constant_pad2d", fn(lambda x: F.pad(x, (2, 1, 1, 2), value=0.5)), (2, 3, 5, 6)),
    # patches and pixel shuffles
    Case(
        "unfold_im2col", fn(lambda x: F.unfold(x, 3, dilation=1, padding=1, stride=2)), (2, 3, 7, 6)
    ),
    Case(
        "fold_col2im",
        fn(lambda x: F.fold(x, (7, 6), 3, padding=1, stride=2)),
        (2, 27, 12),
    ),
    Case("tensor_unfold", fn(lambda x: x.unfold(2, 3, 2)), (2, 3, 9)),
    Case("pixel_shuffle", fn(lambda x: F.pixel_shuffle(x, 2)), (2, 8, 3, 5)),
    Case("pixel_unshuffle", fn(lambda x: F.pixel_unshuffle(x, 2)), (2, 2, 6, 4)),
    Case("channel_shuffle", fn(lambda x: F.channel_shuffle(x, 2)), (2, 8, 3, 5)),
    Case("swin_window_shift", WindowShift, (2, 4, 8, 8)),
    # sampling
    Case("grid_sample_bilinear", GridSample, (2, 3, 5, 6)),
    Case("grid_sample_nearest", lambda: GridSample(True, "nearest", "border"), (2, 3, 5, 6)),
    Case("grid_sample_bicubic", lambda: GridSample(False, "bicubic", "reflection"), (2, 3, 5, 6)),
    # normalizations and embeddings
    Case("group_norm", GroupNormConv, (2, 8, 5, 5)),
    Case("layer_norm", LayerNormMlp, (2, 5, 8)),
    Case("instance_norm", fn(lambda x: F.instance_norm(x)), (2, 3, 5, 5)),
    Case("local_response_norm", fn(lambda x: F.local_response_norm(x, 3)), (2, 5, 4, 4)),
    Case("embedding", Embed, (2, 5, 8)),
    # reductions and scans of such models (scans: another worker's; listed)
    Case("cumsum", fn(lambda x: x.cumsum(-1)), (2, 3, 7)),
    Case("global_max", fn(lambda x: F.adaptive_max_pool2d(x, 1).flatten(1)), (2, 3, 5, 4)),
    Case("lp_pool2d", fn(lambda x: F.lp_pool2d(x, 2, 2)), (2, 3, 6, 6)),
]


# ---- running ------------------------------------------------------------------------

_FALLBACK = re.compile(r"no loop lowering for (\S+)")


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.ops: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        m = _FALLBACK.search(record.getMessage())
        if m and m.group(1) not in self.ops:
            self.ops.append(m.group(1))


def _fresh_input(case: Case, dtype: torch.dtype) -> torch.Tensor:
    x = torch.randn(case.shape, dtype=dtype)
    if case.channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    return x


def _call(m: nn.Module, x: torch.Tensor, training: bool):
    """One inference call (outputs) or training step (outputs and gradients of
    the input and parameters, from a random-weighted sum of the outputs)."""
    if not training:
        m.eval()
        with torch.no_grad():
            return m(x)
    m.train()
    xi = x.detach().clone().requires_grad_(True)
    params = list(m.parameters())
    for p in params:
        p.grad = None
    out = m(xi)
    weight = torch.randn(out.shape, generator=torch.Generator().manual_seed(1)).to(out.dtype)
    (out * weight).sum().backward()
    return out.detach(), [xi.grad] + [p.grad for p in params]


def run_case(case: Case, training: bool, dtype: torch.dtype = torch.float32) -> dict:
    """Compile ``case`` once (inference or one training step); return its
    fallbacks and whether the results matched eager (forgiving a result closer
    than eager's to the same computation in float64, coil.testing.difference)."""
    from coil.lowering import convert_aten_to_loop
    from coil.testing import difference

    torch.manual_seed(0)
    model = case.build().to(dtype)
    reference = copy.deepcopy(model).double()
    x = _fresh_input(case, dtype)
    convert_aten_to_loop._reported.clear()
    torch._dynamo.reset()
    handler = _Collect()
    logger = logging.getLogger("coil")
    logger.addHandler(handler)
    start = time.perf_counter()
    row = {"case": case.name, "mode": "train" if training else "infer", "error": None}
    try:
        compiled = torch.compile(
            model, backend="coil", options={"fallback": "extern", "cache": False}
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = _call(compiled, x, training)
            want = _call(model, x, training)
            exact = _call(reference, x.double(), training)
            row["mismatch"] = difference(got, want, exact)
    except Exception as e:  # a case that fails is a row, not the end of the census
        lines = str(e).strip().splitlines()
        row["error"] = f"{type(e).__name__}: {lines[0][:160] if lines else ''}"
    finally:
        logger.removeHandler(handler)
    row["fallbacks"] = handler.ops
    row["seconds"] = time.perf_counter() - start
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", default="", help="only cases whose name contains this")
    parser.add_argument("--inference-only", action="store_true")
    parser.add_argument("--bf16", action="store_true", help="run the cases in bfloat16")
    parser.add_argument("--list", action="store_true", help="print the case names")
    args = parser.parse_args(argv)
    cases = [c for c in CASES if args.k in c.name]
    if args.list:
        print("\n".join(c.name for c in cases))
        return 0
    os.environ.setdefault("TRITON_INTERPRET", "1")
    dtype = torch.bfloat16 if args.bf16 else torch.float32
    rows = []
    for case in cases:
        modes = [False] if args.inference_only or not case.train else [False, True]
        for training in modes:
            row = run_case(case, training, dtype)
            rows.append(row)
            status = row["error"] or (f"MISMATCH {row['mismatch']}" if row["mismatch"] else "ok")
            falls = ", ".join(row["fallbacks"]) or "-"
            print(
                f"{row['case']:28} {row['mode']:5} {row['seconds']:5.1f}s  {status:8}  {falls}",
                flush=True,
            )
    by_op: dict[str, list[str]] = {}
    for row in rows:
        for op in row["fallbacks"]:
            by_op.setdefault(op, []).append(f"{row['case']}/{row['mode']}")
    print(f"\n{len(by_op)} distinct ops fell back:")
    for op, where in sorted(by_op.items()):
        print(f"  {op}: {', '.join(where)}")
    bad = [r for r in rows if r["error"] or r.get("mismatch")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
