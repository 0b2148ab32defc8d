"""C++ CPU kernels (convert-loop-to-cpp, -t cpp-kernels, runtime/cpp_kernels.py)
end to end: against eager on fresh signed inputs, outputs poisoned first; the
selection (options cpu_kernels, COIL_CPU_KERNELS), the no-compiler fallback
(COIL_CXX=none: ATen after one warning), an index out of range, the library
cache."""

from __future__ import annotations

import os
import re
import warnings

import pytest
import torch
import torch.nn.functional as F

from coil.runtime import cpp_kernels
from coil.testing import assert_close_to_eager

needs_compiler = pytest.mark.skipif(
    cpp_kernels.find_compiler() is None or os.environ.get("COIL_CPU_KERNELS") == "triton",
    reason="needs a C++ compiler (g++/clang++) and the C++ kernels selected",
)


def _compile(fn, options=None):
    return torch.compile(fn, backend="coil", options=options or {}, dynamic=False)


def _mlp_block(x, w1, b1, w2, b2, g, b):
    h = F.gelu(F.linear(x, w1, b1))
    return F.layer_norm(F.linear(h, w2, b2), (x.shape[-1],), g, b)


CASES = {
    "softmax": (lambda x: torch.softmax(x, -1), [(6, 50)]),
    "log_softmax_dim0": (lambda x: torch.log_softmax(x, 0), [(7, 9)]),
    "layer_norm": (lambda x: F.layer_norm(x, (33,)), [(5, 33)]),
    "var_mean": (lambda x: torch.var_mean(x, dim=1), [(4, 70)]),
    "argmax_amin": (lambda x: (x.argmax(1), x.amin(0)), [(8, 11)]),
    "sum_all": (lambda x: x.sum(), [(3, 1000)]),
    "transpose_add": (lambda x, y: x.t() + y, [(16, 12), (12, 16)]),
    "broadcast_where": (lambda x, y: torch.where(x > 0, x, y.exp()), [(4, 1, 6), (5, 6)]),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh") * 2, [(3, 40)]),
    "mlp_block": (_mlp_block, [(8, 32), (64, 32), (64,), (32, 64), (32,), (32,), (32,)]),
    "cat_pad": (lambda x, y: F.pad(torch.cat([x, y], 1), (1, 2)), [(3, 4), (3, 5)]),
    "cumsum_dim1": (lambda x: torch.cumsum(x * 2, 1) + 1, [(5, 37)]),
    "cummax_dim0": (lambda x: torch.cummax(x, 0), [(9, 4)]),
}


# Both kinds of CPU kernel on the same cases: the C++ kernels (the default) and
# the same nests as Triton kernels under the interpreter (the representative
# subset of the end-to-end tests that runs with both; the files of Triton
# specifics in conftest.TRITON_FILES run the interpreter only).
KINDS = [pytest.param("cpp", marks=needs_compiler), "triton"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(CASES))
def test_against_eager(name, kind, poisoned):
    fn, shapes = CASES[name]
    inputs = [torch.randn(s) for s in shapes]
    expected = fn(*inputs)
    assert_close_to_eager(_compile(fn, {"cpu_kernels": kind})(*inputs), expected)
    assert poisoned, "the wrapper's allocations were not poisoned"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_reduced_precision_computes_in_f32(dtype, kind):
    """bf16/f16 are stored as such and computed in f32, rounded once per store."""

    def fn(x, w):
        return F.layer_norm(x, (x.shape[-1],)) * w + torch.softmax(x, -1)

    x, w = torch.randn(6, 40, dtype=dtype), torch.randn(40, dtype=dtype)
    assert_close_to_eager(_compile(fn, {"cpu_kernels": kind})(x, w), fn(x, w))


# Rows long enough for the blocked reductions (four streams of accumulators,
# the remainder after the last block, a float sum's double total every 4096
# elements).
ROW_CASES = {
    "softmax_tail": (lambda x: torch.softmax(x, -1), [(3, 1000)]),
    "layer_norm_tail": (lambda x: F.layer_norm(x, (300,)), [(4, 300)]),
    "sum_chunks": (lambda x: x.sum(1), [(2, 9000)]),
    "var_mean_2d": (lambda x: torch.var_mean(x, dim=(0, 2)), [(3, 5, 70)]),
    "amax_amin": (lambda x: (x.amax(1), x.amin(1)), [(4, 100)]),
    "normalize": (lambda x: x / x.abs().sum(-1, keepdim=True), [(5, 128)]),
    # A product near 1 over 4 streams and a remainder (the `*` reduction clause).
    "prod_streams": (lambda x: (1 + x / 64).prod(1), [(3, 300)]),
    "int_sum_streams": (lambda x: (x * 100).long().sum(1), [(3, 1000)]),
    # A causal softmax (key <= query, 64-bit index compares): one stream, as
    # four were summed wrong by g++ 12 with 256-bit vectors (rows 25-64).
    "causal_softmax": (
        lambda x: torch.softmax(
            torch.where(torch.arange(64) <= torch.arange(64)[:, None], x, float("-inf")), -1
        ),
        [(2, 4, 64, 64)],
    ),
}


@needs_compiler
@pytest.mark.parametrize("name", list(ROW_CASES))
def test_blocked_row_reductions(name, poisoned):
    fn, shapes = ROW_CASES[name]
    inputs = [torch.randn(s) for s in shapes]
    assert_close_to_eager(_compile(fn)(*inputs), fn(*inputs))


def _with_vector_bytes(width: int) -> str:
    from coil.pipeline import PIPELINES

    cpp = f"convert-loop-to-cpp{{vector-bytes={width}}},convert-loop-to-tt"
    return re.sub(r"(?<![\w-])convert-loop-to-tt(?![\w-])", cpp, PIPELINES["default"])


@needs_compiler
@pytest.mark.parametrize("width", [32, 64])
@pytest.mark.parametrize("name", ["softmax_tail", "sum_chunks", "prod_streams", "f64_sum"])
def test_blocked_rows_either_vector_width(name, width):
    """Both accumulator widths (``convert-loop-to-cpp{vector-bytes}``: 64 where
    the kernels compile for 512-bit vectors, else 32) on any host: the 64-byte
    vectors are GCC vector extensions, split on a CPU without AVX-512."""
    fn, shapes = ROW_CASES.get(name) or (lambda x: x.sum(1), [(3, 1000)])
    inputs = [torch.randn(s, dtype=torch.float64 if name == "f64_sum" else None) for s in shapes]
    options = {"pipeline": _with_vector_bytes(width)}
    assert_close_to_eager(_compile(fn, options)(*inputs), fn(*inputs))


@needs_compiler
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_blocked_rows_reduced_precision(dtype):
    """LayerNorm and softmax over 1024-wide rows in bf16/f16: the statistics in
    f32 partials, each output rounded once."""

    def fn(x, w, b):
        return F.layer_norm(x, (1024,), w, b), torch.softmax(x, -1)

    x, w, b = (torch.randn(s, dtype=dtype) for s in [(8, 1024), (1024,), (1024,)])
    assert_close_to_eager(_compile(fn)(x, w, b), fn(x, w, b))


@needs_compiler
def test_blocked_rows_of_symbolic_length():
    """dynamic=True: the row length is a kernel argument, the blocks, the
    4096-element chunks and the remainder are counted at run time; two
    lengths through one compiled graph, in f32, f64 and int64."""

    def fn(x, i):
        return x.sum(1), x.amax(1), torch.var_mean(x, 1), torch.softmax(x, 1), i.sum(1)

    compiled = torch.compile(fn, backend="coil", dynamic=True)
    for n in (100, 5000):
        for dtype in (torch.float32, torch.float64):
            x, i = torch.randn(3, n, dtype=dtype), torch.randint(-9, 9, (3, n))
            assert_close_to_eager(compiled(x, i), fn(x, i))


@needs_compiler
def test_blocked_max_keeps_nan():
    """A NaN in a block or in the remainder makes the row's max/min NaN."""

    def fn(x):
        return x.amax(1), x.amin(1)

    x = torch.randn(4, 100)
    x[0, 5] = float("nan")  # in the first stream
    x[1, 98] = float("nan")  # in the remainder
    x[3, 90] = float("nan")  # in the last stream (elements 72-95)
    got, want = _compile(fn)(x), fn(x)
    assert_close_to_eager(got, want)
    assert got[0][[0, 1, 3]].isnan().all() and not got[0][2].isnan()


@needs_compiler
def test_integers_and_bools():
    def fn(a, b):
        return (a // 3 + b * 2) % 7, (a > b).all(1), (a - b).abs().max()

    a = torch.randint(-50, 50, (5, 9))
    b = torch.randint(-50, 50, (5, 9))
    assert_close_to_eager(_compile(fn)(a, b), fn(a, b))


@needs_compiler
def test_embedding_index_out_of_range_raises():
    w = torch.randn(10, 4)

    def fn(i):
        return F.embedding(i, w) * 2

    compiled = _compile(fn)
    good = torch.tensor([0, 9, 3])
    assert_close_to_eager(compiled(good), fn(good))
    with pytest.raises(IndexError):
        compiled(torch.tensor([0, 10, 3]))


@needs_compiler
def test_cpp_kernels_are_what_runs(tmp_path):
    """By default (the C++ kernels) the wrapper calls C++ kernels, no Triton
    kernel is left (and the option cpu_kernels='triton' keeps the interpreter's)."""
    x = torch.randn(4, 30)
    options = {"dump_dir": str(tmp_path / "c")}
    torch.compile(lambda x: torch.softmax(x, -1) * 2, backend="coil", options=options)(x)
    (wrapper,) = (tmp_path / "c").glob("*/wrapper.py")
    text = wrapper.read_text()
    assert "load_cpp_kernels" in text and "@triton.jit" not in text
    torch._dynamo.reset()
    options = {"dump_dir": str(tmp_path / "t"), "cpu_kernels": "triton"}
    torch.compile(lambda x: torch.softmax(x, -1) * 2, backend="coil", options=options)(x)
    (wrapper,) = (tmp_path / "t").glob("*/wrapper.py")
    text = wrapper.read_text()
    assert "load_cpp_kernels" not in text and "@triton.jit" in text


SCANS = {
    "cumsum": lambda x: torch.cumsum(x, -1),
    "cumprod": lambda x: torch.cumprod(x * 0.25 + 1, 0),
    "cummax": lambda x: torch.cummax(x, 1),
    "cummin": lambda x: torch.cummin(x, 0),
    "logcumsumexp": lambda x: torch.logcumsumexp(x, 1),
}


@needs_compiler
@pytest.mark.parametrize("name", list(SCANS))
def test_scans_are_cpp_kernels_with_eagers_nan_and_inf(name):
    # The running value of a row holding NaN, +inf and a row of -inf: NaN
    # propagates (cummax/cummin keep the last NaN's position), two infinities of
    # one sign stay (logcumsumexp), ties take the last position.
    fn = SCANS[name]
    x = torch.randn(6, 37)
    x[1, 5], x[2, 3], x[3, :] = float("nan"), float("inf"), float("-inf")
    x[4, 10:14] = 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no nest left to Triton's interpreter
        out = _compile(fn)(x)
    assert_close_to_eager(out, fn(x))


@needs_compiler
@pytest.mark.parametrize(
    "dtype", [torch.bfloat16, torch.int64, torch.bool], ids=["bf16", "int64", "bool"]
)
def test_scan_dtypes_and_symbolic_length(dtype):
    x = (torch.randn(4, 50) * 4).to(dtype)
    fn = torch.compile(lambda x: torch.cumsum(x, 1), backend="coil", dynamic=True)
    for n in (50, 17):
        assert_close_to_eager(fn(x[:, :n]), torch.cumsum(x[:, :n], 1))


SCATTERS = {
    "index_add": (lambda x, i: torch.zeros(10).index_add(0, i, x) + 1, [(6,)], [0, 3, 3, 9, 1, 0]),
    "index_put_acc_neg": (
        lambda v, i: torch.zeros(8, 3).index_put((i,), v, accumulate=True),
        [(5, 3)],
        [-1, 1, -8, 0, 1],
    ),
    "index_copy": (lambda v, i: torch.zeros(2, 16, 4).index_copy(1, i, v), [(2, 3, 4)], [5, 7, 6]),
    "scatter_reduce_amax": (
        lambda s, i: torch.full((7, 5), -1.0).scatter_reduce(0, i.view(1, 5), s, "amax"),
        [(1, 5)],
        [6, 0, 6, 2, 3],
    ),
}


@needs_compiler
@pytest.mark.parametrize("name", list(SCATTERS))
def test_scatters_are_cpp_kernels(name):
    fn, shapes, index = SCATTERS[name]
    args = [torch.randn(*s) for s in shapes] + [torch.tensor(index)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no nest left to Triton's interpreter
        out = _compile(fn)(*args)
    assert_close_to_eager(out, fn(*args))


@needs_compiler
def test_embedding_backward_and_a_scatter_index_out_of_range():
    emb = torch.nn.Embedding(50, 8)
    ids = torch.randint(0, 50, (4, 12))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _compile(lambda i: emb(i).pow(2).sum())(ids).backward()
    got, emb.weight.grad = emb.weight.grad, None
    emb(ids).pow(2).sum().backward()
    torch.testing.assert_close(got, emb.weight.grad)
    fn = _compile(lambda x, i: torch.zeros(10).index_add(0, i, x))
    with pytest.raises(IndexError, match="out of bounds"):
        fn(torch.randn(3), torch.tensor([0, 10, 2]))


@needs_compiler
def test_random_numbers_are_cpp_kernels_drawing_tritons_numbers():
    # coil_rand/coil_randn are Triton's tl.rand/tl.randn (Philox 4x32-10): with
    # the same torch seed the C++ kernels draw the interpreter's numbers
    # (uniforms and dropout masks exactly; normals to float rounding of log/cos).
    def fn(x):
        return F.dropout(x, 0.3, training=True), torch.rand_like(x), torch.randn_like(x)

    x = torch.ones(64, 50)
    outs = {}
    for kind in ("cpp", "triton"):
        torch._dynamo.reset()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            f = _compile(fn, {"cpu_kernels": kind})
            torch.manual_seed(7)
            outs[kind] = f(x)
    (d, u, n), (dt, ut, nt) = outs["cpp"], outs["triton"]
    assert torch.equal(d, dt) and torch.equal(u, ut)
    torch.testing.assert_close(n, nt, rtol=1e-5, atol=1e-5)
    assert 0.65 < (d != 0).float().mean() < 0.75 and abs(u.mean() - 0.5) < 0.02
    assert abs(n.mean()) < 0.05 and abs(n.std() - 1) < 0.05


@pytest.mark.parametrize("wrapper", ["python", "cpp"])
def test_no_compiler_runs_aten_after_one_warning(monkeypatch, tmp_path, wrapper):
    """The fallback path (CI runs it with the compiler hidden too): with the
    default kind and no compiler, coil says so once and compiles nothing (no
    dump: the graph runs as ATen ops, not in Triton's interpreter), with
    either wrapper (the C++ one calls the same C++ kernels)."""
    monkeypatch.setenv("COIL_CXX", "none")
    monkeypatch.delenv("COIL_CPU_KERNELS", raising=False)
    cpp_kernels.find_compiler.cache_clear()
    monkeypatch.setattr(cpp_kernels, "_said", set())
    try:
        x = torch.randn(5, 7)
        options = {"dump_dir": str(tmp_path), "wrapper": wrapper}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = _compile(lambda x: torch.softmax(x, -1), options)(x)
            torch._dynamo.reset()
            _compile(lambda x: x.exp() + 1, options)(x)
        assert_close_to_eager(out, torch.softmax(x, -1))
        said = [w for w in caught if "no C++ compiler" in str(w.message)]
        assert len(said) == 1
        assert not list(tmp_path.glob("graph_*"))
    finally:
        monkeypatch.undo()
        cpp_kernels.find_compiler.cache_clear()


@needs_compiler
def test_library_cache_key_and_reuse(tmp_path, monkeypatch):
    """One library per source; the key changes with the source and the flags."""
    monkeypatch.setenv("COIL_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("COIL_CPP_CACHE_DIR", raising=False)
    source = '#include <cstdint>\nextern "C" int coil_cpp_k_0(int64_t a) { return a == 7; }\n'
    lib = cpp_kernels.load_cpp_kernels(source)
    assert lib.kernel("coil_cpp_k_0", 1)(7) == 1
    assert list(tmp_path.glob("cpp/*/*.so"))
    compiler = cpp_kernels.find_compiler()
    key = cpp_kernels.library_key(source, compiler)
    assert key != cpp_kernels.library_key(source + "\n", compiler)
    other = cpp_kernels.Compiler(compiler.path, compiler.version, not compiler.openmp)
    assert key != cpp_kernels.library_key(source, other)
    assert cpp_kernels.load_cpp_kernels(source) is lib


def test_unknown_cpu_kernels_option():
    with pytest.raises(Exception, match="cpu_kernels must be one of"):
        torch.compile(lambda x: x + 1, backend="coil", options={"cpu_kernels": "fast"})(
            torch.randn(2)
        )


@needs_compiler
@pytest.mark.parametrize("shape", [(6, 40), (3, 4, 2, 8)])
def test_bf16_row_reads_at_the_row_index_widened_once(shape, tmp_path):
    """A bf16 LayerNorm's gamma and beta, read by its output pass at the row index
    alone, are widened to f32 once per call (arrays before the parallel loop),
    over one and over two normalized dimensions; the results equal eager's."""
    norm = shape[-1:] if len(shape) == 2 else shape[-2:]
    x = torch.randn(*shape, dtype=torch.bfloat16)
    w = torch.randn(norm, dtype=torch.bfloat16)
    b = torch.randn(norm, dtype=torch.bfloat16)

    def fn(x, w, b):
        return F.layer_norm(x, norm, w, b)

    out = _compile(fn, {"dump_dir": str(tmp_path)})(x, w, b)
    assert_close_to_eager(out, fn(x, w, b))
    source = "".join(p.read_text() for p in tmp_path.glob("graph_*/kernels.cpp"))
    assert "float wide0_" in source and "float wide1_" in source


@needs_compiler
@pytest.mark.parametrize(
    "name,shape",
    [("layer_norm", (8, 1024)), ("layer_norm", (5, 300)), ("layer_norm", (2, 3, 2, 64))]
    + [("rms_norm", (6, 512)), ("softmax", (4, 1000))],
)
def test_bf16_rows_read_by_several_passes_widened_once(name, shape, tmp_path):
    """A bf16 input that several passes over a row read (a LayerNorm's x: the
    mean, the variance, the output) is widened once per row by the first pass,
    into the row cache, and the later passes read the floats: over one and two
    normalized dimensions, a row with a remainder after the streams, RMSNorm;
    not softmax's x (its exp is kept instead); the results equal eager's."""
    norm = shape[-2:] if len(shape) == 4 else shape[-1:]
    x = torch.randn(*shape, dtype=torch.bfloat16)
    w, b = torch.randn(norm, dtype=torch.bfloat16), torch.randn(norm, dtype=torch.bfloat16)
    fns = {
        "layer_norm": lambda x, w, b: F.layer_norm(x, norm, w, b),
        "rms_norm": lambda x, w, b: F.rms_norm(x, norm, w),
        "softmax": lambda x, w, b: torch.softmax(x, -1),
    }
    fn = fns[name]
    out = _compile(fn, {"dump_dir": str(tmp_path)})(x, w, b)
    assert_close_to_eager(out, fn(x, w, b))
    source = "".join(p.read_text() for p in tmp_path.glob("graph_*/kernels.cpp"))
    kept = re.search(
        r"const float (v\d+) = bf16_load\(buf\d+\[[^;]*;\n\s*row\d+\[[^\]]*\] = \1;", source
    )
    assert (kept is not None) == (name != "softmax"), source
