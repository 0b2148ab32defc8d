"""Memory-bound workloads against the copy roofline: eager, Inductor and coil in
one process.

Each workload's outputs are checked against eager first (a mismatch is a
failure, printed and counted in the exit status), then eager,
``torch.compile(backend="inductor")`` and ``torch.compile(backend="coil")``
are timed with ``triton.testing.do_bench`` (medians, ms; the best of
``--rounds`` rounds over the backends in turn, default 2). The bandwidth
column is coil's share of the copy bandwidth measured in the same run
(``y.copy_(x)`` of 1 GiB): the minimum bytes a workload must move (each input
read once, each output written once) over coil's time, against the bytes per
millisecond of that copy.

    python benchmarks/roofline.py                 # every workload
    python benchmarks/roofline.py softmax sum_    # those whose name contains one
    python benchmarks/roofline.py --smoke         # tiny sizes, also on the CPU
    python benchmarks/roofline.py --kernels sum_  # + Inductor's and coil's kernel time

``--kernels`` adds each compiled backend's GPU kernel time per call (the sum
of kernel durations under torch.profiler over 20 calls, no cache flush) and
its launches per call: where do_bench's ratio and the kernels' disagree, the
difference is host time or the gaps between launches, not the kernels.

The table goes to stdout and, where OUT is set, to ``$OUT/roofline.md``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

BF16, F32 = torch.bfloat16, torch.float32


@dataclass
class Workload:
    name: str
    fn: Callable[..., torch.Tensor | tuple[torch.Tensor, ...]]
    make: Callable[[], tuple]
    atol: float = 1e-2
    rtol: float = 1e-2


# ---- the functions -------------------------------------------------------


def pointwise_chain(x, bias):
    a = x * torch.sigmoid(x) + bias
    b = torch.where(a > 0, torch.tanh(a), a.abs().sqrt())
    return b * 0.5


def transpose_add_relu(x, y):
    return (x.t() + y).relu().t().contiguous()


def permute_nchw_to_nhwc(x):
    return x.permute(0, 2, 3, 1).contiguous()


def permute_nhwc_to_nchw(x):
    return (x * 2).permute(0, 3, 1, 2).contiguous()


def row_softmax(x):
    return torch.softmax(x, dim=-1)


def row_log_softmax(x):
    return torch.log_softmax(x, dim=-1)


def col_softmax(x):
    return torch.softmax(x, dim=0)


def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def rms_norm(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w


def sum_dim0(x):
    return x.sum(0)


def sum_dim1(x):
    return x.sum(1)


def amax_dim1(x):
    return x.amax(1)


def var_dim1(x):
    return x.var(1)


def var_dim0(x):
    return x.var(0)


def mean_all(x):
    return x.mean()


def amax_all(x):
    return x.amax()


def argmax_dim0(x):
    return x.argmax(0)


def mixed_reductions(x):
    return x.sum(0), x.amax(1), x.var(1), x.mean()


def cross_entropy(logits, target):
    return F.cross_entropy(logits, target)


def embedding_gelu(table, idx, pos):
    return F.gelu(F.embedding(idx, table) + pos)


def rel_pos_softmax(scores, c2p, p2c):
    """DeBERTa-v2's disentangled attention probabilities (transformers'
    ``modeling_deberta_v2``: log-bucketed relative positions, content-to-position
    and position-to-content scores gathered by them, the second transposed,
    scaled, added, softmax): a softmax whose row reads two gathers, one of them
    across rows. ``scores`` is q @ k^T [bh, s, s]; ``c2p``, ``p2c`` [bh, s, 2*span]."""
    s, span = scores.shape[-1], c2p.shape[-1] // 2
    ids = torch.arange(s, device=scores.device)
    rel = ids[:, None] - ids[None, :]
    mid, max_position = span // 2, 512
    abs_pos = torch.where((rel < mid) & (rel > -mid), torch.tensor(mid - 1).type_as(rel), rel.abs())
    log_pos = (
        torch.ceil(
            torch.log(abs_pos / mid) / torch.log(torch.tensor((max_position - 1) / mid)) * (mid - 1)
        )
        + mid
    )
    rel = torch.where(abs_pos <= mid, rel.type_as(log_pos), log_pos * torch.sign(rel)).long()
    scale = math.sqrt(scores.shape[-1] // 8 * 3)
    c2p_pos = torch.clamp(rel + span, 0, 2 * span - 1).expand(scores.shape)
    p2c_pos = torch.clamp(-rel + span, 0, 2 * span - 1).expand(scores.shape)
    bias = torch.gather(c2p, -1, c2p_pos) / scale
    bias = bias + torch.gather(p2c, -1, p2c_pos).transpose(-1, -2) / scale
    return torch.softmax(scores / scale + bias, dim=-1)


# ---- the suite -----------------------------------------------------------


def linear(x, w, b):
    return F.linear(x, w, b)


def linear_gelu(x, w, b):
    return F.gelu(F.linear(x, w, b))


def addmm_rowmajor(x, w, b):
    # GPT-2's Conv1D: the weight is [K, N], read down its columns.
    return torch.addmm(b, x, w)


def matvec(a, v):
    return a @ v


def strided_linear(x, w):
    # a batch-1 row read with stride 2, no bias
    return x[:, ::2] @ w.t()


def matvec_workloads(device: str, smoke: bool) -> list[Workload]:
    """Matrix-vector products (batch-1 ``Linear``s, ``aten_to_loop/matvec.py``):
    memory-bound, each reads its matrix once. Sizes of Llama-7B's and GPT-2's
    decode steps, an odd-sized one and small ones; values scaled so outputs are
    near 1 (bf16's rounding of the output is then the tolerance)."""

    def rand(*shape, dtype=F32, scale=1.0):
        return torch.randn(*shape, device=device, dtype=F32).mul_(scale).to(dtype)

    def lin(k, n, dtype):
        return lambda: (
            rand(1, k, dtype=dtype),
            rand(n, k, dtype=dtype, scale=k**-0.5),
            rand(n, dtype=dtype),
        )

    big, mid = (96, 80) if smoke else (4096, 11008)
    out = []
    for dtype in (BF16, F32):
        t = "bf16" if dtype is BF16 else "f32"
        out += [
            Workload(f"linear_b1 {t} {big}->{big}", linear, lin(big, big, dtype)),
            Workload(f"linear_gelu_b1 {t} {big}->{mid}", linear_gelu, lin(big, mid, dtype)),
            Workload(f"linear_b1 {t} {mid}->{big}", linear, lin(mid, big, dtype)),
        ]
    k, n = (40, 50) if smoke else (768, 50257)
    ck, cn = (40, 64) if smoke else (768, 3072)  # GPT-2's MLP Conv1D
    out += [
        Workload(f"linear_b1 bf16 {k}->{n}", linear, lin(k, n, BF16)),
        Workload("linear_b1 f32 1000->777", linear, lin(1000, 777, F32)),
        Workload("linear_gelu_b1 bf16 256->256", linear_gelu, lin(256, 256, BF16)),
        Workload(
            f"addmm_rowmajor_b1 bf16 {ck}x{cn}",
            addmm_rowmajor,
            lambda: (
                rand(1, ck, dtype=BF16),
                rand(ck, cn, dtype=BF16, scale=ck**-0.5),
                rand(cn, dtype=BF16),
            ),
        ),
        Workload(
            f"matvec f32 {big}x{big}@{big}x1",
            matvec,
            lambda: (rand(big, big, scale=big**-0.5), rand(big, 1)),
            atol=1e-3,
            rtol=1e-3,
        ),
        Workload(
            f"strided_linear_b1 bf16 {big}->{big}",
            strided_linear,
            lambda: (rand(1, 2 * big, dtype=BF16), rand(big, big, dtype=BF16, scale=big**-0.5)),
        ),
    ]
    return out


def workloads(device: str, smoke: bool) -> list[Workload]:
    # Rows: enough to fill an H100 (132 SMs) many times over; --smoke: tiny.
    rows = 64 if smoke else 32768
    wide = 96 if smoke else 4096
    half = 48 if smoke else 2048
    # DeBERTa-v2 base at batch 8: 96 heads of 512 positions (span 256: c2p and
    # p2c are 512 wide too).
    bh, seq = (3, 64) if smoke else (96, 512)
    vocab = 200 if smoke else 32000
    ce_rows = 32 if smoke else 16384

    def rand(*shape, dtype=F32):
        return torch.randn(*shape, device=device, dtype=dtype)

    out: list[Workload] = []
    for dtype in (BF16, F32):
        t = "bf16" if dtype is BF16 else "f32"
        out += [
            Workload(
                f"pointwise_chain {t} {rows}x{wide}",
                pointwise_chain,
                lambda d=dtype: (rand(rows, wide, dtype=d), rand(wide, dtype=d)),
            ),
            Workload(
                f"transpose_add_relu {t} {half}x{half * 2}",
                transpose_add_relu,
                lambda d=dtype: (rand(half, half * 2, dtype=d), rand(half * 2, half, dtype=d)),
            ),
            Workload(
                f"nchw_to_nhwc {t} 64x256x28x28" if not smoke else f"nchw_to_nhwc {t}",
                permute_nchw_to_nhwc,
                lambda d=dtype: (rand(*((2, 8, 5, 7) if smoke else (64, 256, 28, 28)), dtype=d),),
            ),
            Workload(
                f"nhwc_to_nchw {t} 64x28x28x256" if not smoke else f"nhwc_to_nchw {t}",
                permute_nhwc_to_nchw,
                lambda d=dtype: (rand(*((2, 5, 7, 8) if smoke else (64, 28, 28, 256)), dtype=d),),
            ),
            Workload(
                f"row_softmax {t} {rows}x{wide}",
                row_softmax,
                lambda d=dtype: (rand(rows, wide, dtype=d),),
            ),
            Workload(
                f"row_log_softmax {t} {rows}x{wide}",
                row_log_softmax,
                lambda d=dtype: (rand(rows, wide, dtype=d),),
            ),
            Workload(
                f"col_softmax {t} {rows // 4}x{wide}",
                col_softmax,
                lambda d=dtype: (rand(rows // 4, wide, dtype=d),),
            ),
            Workload(
                f"layer_norm {t} {rows}x{wide}",
                layer_norm,
                lambda d=dtype: (
                    rand(rows, wide, dtype=d),
                    rand(wide, dtype=d),
                    rand(wide, dtype=d),
                ),
            ),
            Workload(
                f"rms_norm {t} {rows}x{wide}",
                rms_norm,
                lambda d=dtype: (rand(rows, wide, dtype=d), rand(wide, dtype=d)),
            ),
        ]
    for dtype in (F32, BF16):
        t = "bf16" if dtype is BF16 else "f32"
        for name, fn in (
            ("sum_dim0", sum_dim0),
            ("sum_dim1", sum_dim1),
            ("amax_dim1", amax_dim1),
            ("var_dim0", var_dim0),
            ("var_dim1", var_dim1),
            ("mean_all", mean_all),
            ("amax_all", amax_all),
            ("argmax_dim0", argmax_dim0),
        ):
            out.append(
                Workload(
                    f"{name} {t} {rows}x{half}",
                    fn,
                    lambda d=dtype: (rand(rows, half, dtype=d),),
                    atol=5e-2 if dtype is BF16 else 1e-3,
                )
            )
    out += [
        Workload(
            f"sum0+amax1+var1+mean f32 {rows}x{half}",
            mixed_reductions,
            lambda: (rand(rows, half),),
            atol=1e-3,
        ),
        Workload(
            f"cross_entropy f32 {ce_rows}x{vocab}",
            cross_entropy,
            lambda: (
                rand(ce_rows, vocab),
                torch.randint(0, vocab, (ce_rows,), device=device),
            ),
            atol=1e-4,
            rtol=1e-4,
        ),
        Workload(
            f"cross_entropy bf16 {ce_rows}x{vocab}",
            cross_entropy,
            lambda: (
                rand(ce_rows, vocab, dtype=BF16),
                torch.randint(0, vocab, (ce_rows,), device=device),
            ),
        ),
        Workload(
            f"embedding+pos+gelu bf16 {rows // 4}x1024",
            embedding_gelu,
            lambda: (
                rand(vocab, 1024 if not smoke else 64, dtype=BF16),
                torch.randint(0, vocab, (rows // 4,), device=device),
                rand(rows // 4, 1024 if not smoke else 64, dtype=BF16),
            ),
        ),
        Workload(
            f"rel_pos_softmax bf16 {bh}x{seq}x{seq}",
            rel_pos_softmax,
            lambda: tuple(rand(bh, seq, seq, dtype=BF16) for _ in range(3)),
        ),
    ]
    return out + matvec_workloads(device, smoke)


def selected(names: list[str], device: str = "cuda", smoke: bool = False) -> list[Workload]:
    """The workloads whose name contains one of ``names`` (all of them for none)."""
    return [w for w in workloads(device, smoke) if not names or any(n in w.name for n in names)]


# ---- measuring -----------------------------------------------------------


def _tensors(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, tuple | list):
        return [t for v in value for t in _tensors(v)]
    return []


def min_bytes(args: tuple, outputs) -> int:
    """Each distinct input read once, each output written once. An embedding
    table counts only the rows gathered (the idea of 'read once' for a gather)."""
    total = 0
    for a in _tensors(args):
        total += a.numel() * a.element_size()
    for o in _tensors(outputs):
        total += o.numel() * o.element_size()
    return total


def embedding_bytes(args: tuple, outputs) -> int:
    table, idx, pos = args
    gathered = idx.numel() * table.shape[1] * table.element_size()
    return gathered + idx.numel() * idx.element_size() + min_bytes((pos,), outputs)


def copy_bandwidth(device: str, bench: Callable) -> float:
    """Bytes per ms of ``y.copy_(x)`` on 1 GiB (read + write)."""
    x = torch.empty(1 << 28, device=device, dtype=F32).normal_()
    y = torch.empty_like(x)
    ms = bench(lambda: y.copy_(x))
    return 2 * x.numel() * x.element_size() / ms


def kernel_time(fn: Callable, inputs: tuple, calls: int = 20) -> tuple[float, float]:
    """(GPU kernel ms, kernel launches) per call of ``fn`` under torch.profiler."""
    fn(*inputs)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn(*inputs)
        torch.cuda.synchronize()
    events = [
        e
        for e in prof.events()
        if e.device_type == torch.autograd.DeviceType.CUDA and "Memcpy" not in e.name
    ]
    return sum(e.device_time_total for e in events) / calls / 1e3, len(events) / calls


def _close(got, want, w: Workload) -> str | None:
    for g, e in zip(_tensors(got), _tensors(want)):
        if g.shape != e.shape or g.dtype != e.dtype:
            return f"shape/dtype {tuple(g.shape)} {g.dtype} vs {tuple(e.shape)} {e.dtype}"
        # bf16: a chain computed in f32 (Inductor) and one rounded after every op
        # (eager) differ by a few bf16 ulps.
        atol, rtol = (max(w.atol, 0.1), max(w.rtol, 0.05)) if g.dtype == BF16 else (w.atol, w.rtol)
        if not torch.allclose(g.float(), e.float(), atol=atol, rtol=rtol, equal_nan=True):
            return f"max abs error {(g.float() - e.float()).abs().max().item():.3e}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="run the workloads whose name contains one")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (also on the CPU)")
    parser.add_argument("--no-inductor", action="store_true", help="eager and coil only")
    parser.add_argument(
        "--kernels", action="store_true", help="also the compiled backends' kernel time per call"
    )
    parser.add_argument(
        "--rounds", type=int, default=2, help="do_bench rounds per backend, the best kept"
    )
    args = parser.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu" and not args.smoke:
        print("roofline: no GPU; use --smoke for a CPU check", file=sys.stderr)
        return 1
    if device == "cuda":
        import triton.testing

        def bench(f):
            return triton.testing.do_bench(f, return_mode="median")
    else:
        import time

        def bench(f):
            f()
            start = time.perf_counter()
            f()
            return (time.perf_counter() - start) * 1e3

    torch.manual_seed(0)
    copy = copy_bandwidth(device, bench) if device == "cuda" else float("nan")
    backends = ["eager", "coil"] if args.no_inductor else ["eager", "inductor", "coil"]
    rows, failures = [], 0
    for w in selected(args.names, device, args.smoke):
        inputs = w.make()
        torch._dynamo.reset()
        fns = {"eager": w.fn}
        for b in backends[1:]:
            fns[b] = torch.compile(w.fn, backend=b)
        times: dict[str, float] = {}
        with torch.no_grad():
            want = w.fn(*inputs)
            problem = None
            for b in backends[1:]:
                try:
                    got = fns[b](*inputs)
                except Exception as e:  # a backend that fails is a row, not a crash
                    problem = f"{b} failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
                    break
                if (err := _close(got, want, w)) is not None:
                    problem = f"{b} differs from eager: {err}"
                    break
            if problem is not None:
                print(f"roofline: {w.name}: {problem}", flush=True)
                failures += 1
                rows.append((w.name, None, problem))
                continue
            # Rounds over the backends in turn, each backend's best median kept:
            # a disturbance of the machine (one backend's time doubled in a
            # round while its kernels took what they always take) is not a result.
            for _ in range(args.rounds):
                for b in backends:
                    t = bench(lambda f=fns[b]: f(*inputs))
                    times[b] = min(times.get(b, t), t)
            if args.kernels and device == "cuda":
                for b in backends[1:]:
                    times[f"{b} kernels"], times[f"{b} launches"] = kernel_time(fns[b], inputs)
        moved = (embedding_bytes if w.fn is embedding_gelu else min_bytes)(inputs, want)
        rows.append((w.name, times, moved))
        print(f"roofline: {w.name}: " + ", ".join(f"{b} {t:.4f} ms" for b, t in times.items()))
    lines = []
    if device == "cuda":
        lines.append(
            f"device: {torch.cuda.get_device_name()}, copy bandwidth {copy / 1e6:.0f} GB/s "
            f"(1 GiB y.copy_(x)); torch {torch.__version__}"
        )
        lines.append("")
    kernels = args.kernels and device == "cuda" and "inductor" in backends
    head = "| workload | eager ms | inductor ms | coil ms | coil / inductor | coil % copy bw |"
    rule = "|---|---|---|---|---|---|"
    if kernels:
        head += " kernel ms inductor / coil | launches inductor / coil |"
        rule += "---|---|"
    lines.append(head)
    lines.append(rule)
    ratios = []
    for name, times, moved in rows:
        if times is None:
            lines.append(f"| {name} | | | FAILED | {moved} | |")
            continue
        ind = times.get("inductor", float("nan"))
        ratio = ind / times["coil"]  # > 1: coil faster
        if not math.isnan(ratio):
            ratios.append(ratio)
        pct = 100 * (moved / times["coil"]) / copy
        line = (
            f"| {name} | {times['eager']:.4f} | {ind:.4f} | {times['coil']:.4f} | "
            f"{ratio:.2f}x | {pct:.0f} |"
        )
        if kernels:
            line += (
                f" {times['inductor kernels']:.4f} / {times['coil kernels']:.4f} |"
                f" {times['inductor launches']:.0f} / {times['coil launches']:.0f} |"
            )
        lines.append(line)
    if ratios:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        lines.append("")
        lines.append(
            f"coil speed vs Inductor (inductor ms / coil ms): geomean {geo:.2f}x, "
            f"min {min(ratios):.2f}x over {len(ratios)} workloads"
        )
    table = "\n".join(lines)
    print(table)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "roofline.md"), "w") as f:
            f.write(table + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
