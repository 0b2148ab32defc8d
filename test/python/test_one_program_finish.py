"""A one-program reduction right after the kernel that writes what it reads runs
in that kernel's last program (split_finish.merge_one): a decode layer's
o-projection finishes with the MLP's RMSNorm, one launch instead of two. Against
eager on the CPU, the kernels under Triton's interpreter (whose programs run one
after another, so the last to arrive is the last program)."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import torch

from coil.backend import coil as coil_backend
from coil.pipeline import PIPELINES
from coil.testing import assert_close_to_eager, kernel_launches

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import decode  # noqa: E402


def _pipeline(finish: bool) -> str:
    # matrix-vector products as on CUDA; the norms stay their own nests (no
    # prologue), which is what a product too large for the prologue sees
    return (
        PIPELINES["default"]
        .replace("convert-aten-to-loop", "convert-aten-to-loop{matvec=on}")
        .replace("aten-fuse-matvec", "aten-fuse-matvec{all-devices=true}")
        .replace("loop-matvec-prologue", "loop-matvec-prologue{max-read-bytes=1}")
        .replace(
            "convert-decode-attention-to-tt",
            "convert-decode-attention-to-tt{all-devices=true}",
        )
        .replace(
            "convert-loop-to-tt", f"convert-loop-to-tt{{one-program-finish={str(finish).lower()}}}"
        )
    )


class _Layer(torch.nn.Module):
    """Residual add after a product, then RMSNorm, then the next product."""

    def __init__(self):
        super().__init__()
        self.o = torch.nn.Linear(64, 64, bias=False)
        self.up = torch.nn.Linear(64, 96, bias=False)
        self.w = torch.nn.Parameter(torch.randn(64))

    def forward(self, x, a):
        h = x + self.o(a)
        n = torch.nn.functional.rms_norm(h, (64,), self.w, 1e-6)
        return self.up(n), h


def _run(model, inputs, finish: bool, tmp_path):
    torch._dynamo.reset()
    step = torch.compile(
        model,
        backend=coil_backend,
        options={
            "pipeline": _pipeline(finish),
            "fallback": "error",
            "cpu_kernels": "triton",
            "dump_dir": str(tmp_path),
        },
    )
    with torch.no_grad():
        out = step(*inputs)
    (wrapper,) = tmp_path.glob("*/wrapper.py")
    (kernels,) = tmp_path.glob("*/kernels.py")
    return out, kernel_launches(wrapper.read_text()), kernels.read_text()


def test_norm_runs_in_the_products_last_program(tmp_path):
    torch.manual_seed(0)
    model = _Layer().eval()
    x, a = torch.randn(1, 64), torch.randn(1, 64)
    with torch.no_grad():
        want = model(x, a)
    got, launches, kernels = _run(model, (x, a), True, tmp_path / "one")
    _, separate, _ = _run(model, (x, a), False, tmp_path / "two")
    for g, w in zip(got, want):
        assert_close_to_eager(g, w)
    assert "finished by the last program of each of 1 tiles" in kernels
    assert "tl.atomic_add" in kernels
    assert launches == separate - 1, (launches, separate)


def test_decode_steps_with_finished_norms_match_eager():
    """gpt-fast's decode step, every norm its own nest: three steps as eager,
    the cache updated in place. One layer: its two norms and the final one are
    each finished in one program as a second layer's would be (two layers took
    ~1.5x the time under the interpreter)."""
    torch.manual_seed(0)
    c = decode.GFConfig(
        vocab_size=64, n_layer=1, n_head=4, n_local_heads=2, dim=32, intermediate_size=48
    )
    eager = decode.GFTransformer(c).eval()
    decode._init(eager)
    with torch.no_grad():
        for p in eager.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    eager.setup_caches(1, 16)
    compiled = copy.deepcopy(eager)
    prompt = torch.randint(0, 64, (1, 5), generator=torch.Generator().manual_seed(1))
    torch._dynamo.reset()
    step = torch.compile(
        compiled,
        backend=coil_backend,
        fullgraph=True,
        options={"pipeline": _pipeline(True), "fallback": "extern", "cpu_kernels": "triton"},
    )
    with torch.no_grad():
        for m in (eager, compiled):
            m(prompt, torch.arange(5))
        tok = prompt[:, -1:]
        for p in range(5, 8):
            pos = torch.tensor([p])
            got, want = step(tok, pos), eager(tok, pos)
            assert_close_to_eager(got, want)
            tok = want[:, -1:].argmax(-1)
    caches = [b for n, b in compiled.named_buffers() if n.endswith(("k_cache", "v_cache"))]
    refs = [b for n, b in eager.named_buffers() if n.endswith(("k_cache", "v_cache"))]
    for got, want in zip(caches, refs):
        assert_close_to_eager(got, want)


def _layer(x, a, wo, wup, w):
    h = x + torch.nn.functional.linear(a, wo)
    n = torch.nn.functional.rms_norm(h, (64,), w, 1e-6)
    return torch.nn.functional.linear(n, wup), h


def test_finished_kernel_compiles_for_sm90():
    """The layer planned for an H200 (bf16, the norm too large for the
    prologue): the o-projection's kernel runs the norm in its last program, and
    ptxas takes it (the finish's loads read past L1, .cg)."""
    import coil
    from coil.backend import run_pipeline
    from coil.runtime import cpp_wrapper
    from coil.strategy.target import named, set_module_target
    from coil.targets import triton as T
    from coil.testing import on_device

    def bf16(*shape):
        return torch.randn(*shape).to(torch.bfloat16)

    args = (bf16(1, 64), bf16(1, 64), bf16(64, 64), bf16(96, 64), bf16(64))
    module = on_device(coil.import_module(_layer, args))
    set_module_target(module, named("h200"))
    run_pipeline(
        module,
        PIPELINES["default"].replace(
            "loop-matvec-prologue", "loop-matvec-prologue{max-read-bytes=1}"
        ),
    )
    source = T.header(module) + "\n\n" + T.emit_kernels(module)
    assert "finished by the last program" in source and 'cache_modifier=".cg"' in source
    compiled = cpp_wrapper.compile_kernels(module, source, 90)
    assert compiled and all(k.asm["cubin"][:4] == b"\x7fELF" for k in compiled.values())
