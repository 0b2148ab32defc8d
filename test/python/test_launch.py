"""The lean host path: one kernel per distinct body, kernels bound once
(runtime/launch.py), inputs checked by one guard call (runtime/wrapper.py)."""

from __future__ import annotations

import re

import pytest
import torch

from coil.backend import compile_graph
from coil.examples.models import ResidualStack, build
from coil.frontend.capture import aot_backend, capture_graphs
from coil.runtime.wrapper import CoilInputError, current_allocator, empty_strided_on
from coil.testing import assert_close_to_eager


def _compiled(model, inputs):
    (graph,) = capture_graphs(model, inputs)
    return compile_graph(graph.gm, graph.example_inputs)


def _backend(model):
    """torch.compile through coil, keeping each compiled graph (its source)."""
    runs = []

    def compile_fn(gm, example_inputs):
        runs.append(compile_graph(gm, example_inputs))
        return runs[-1]

    torch._dynamo.reset()
    return torch.compile(model, backend=aot_backend(compile_fn)), runs


def _kernels(source: str) -> list[str]:
    return re.findall(r"^def (coil_\w+)\(", source, re.M)


def test_repeated_layers_share_one_kernel_each():
    """Six residual blocks launch the kernels of two: identical bodies are
    emitted once; names say what is fused, numbered per distinct kernel."""
    torch.manual_seed(0)
    x = torch.randn(2, 16, 32)
    counts = {}
    for depth in (2, 6):
        model = ResidualStack(depth).eval()
        compiled, runs = _backend(model)
        with torch.no_grad():
            assert_close_to_eager(compiled(x), model(x))
        (run,) = runs
        kernels = _kernels(run.coil_source)
        counts[depth] = len(kernels)
        launches = re.findall(r"^\s+(coil_\w+)_launch\.run\(", run.coil_source, re.M)
        assert set(launches) == set(kernels)
        assert len(launches) > len(kernels)  # the same kernel launched layer after layer
        assert [int(k.rsplit("_", 1)[1]) for k in kernels] == list(range(len(kernels)))
    assert counts[6] == counts[2]


def test_guarded_inputs_still_fail_with_a_message():
    """After inputs were learned by the guard, a mismatch still goes through the
    Python checks and names what differs; matching inputs keep working."""
    model, (x,) = build("softmax")
    compiled = _compiled(model, (x,))

    def run(t):
        return compiled(t)[0]

    want = model(x)
    assert_close_to_eager(run(x), want)
    assert_close_to_eager(run(x.clone()), want)  # the guard's fast path
    with pytest.raises(CoilInputError, match="dtype"):
        run(x.double())
    with pytest.raises(CoilInputError, match="strides"):
        run(x.t().contiguous().t())
    with pytest.raises(CoilInputError, match="size"):
        run(torch.randn(3, 5))
    assert_close_to_eager(run(x), want)


def test_dynamic_sizes_are_guarded_per_size():
    """One guard entry per set of size-symbol values: a new batch is checked,
    then served, and each size computes its own result."""
    model, (x,) = build("softmax")
    (graph,) = capture_graphs(model, (x,), dynamic=True)
    run = compile_graph(graph.gm, graph.example_inputs)
    hints = [a.node.hint for a in graph.example_inputs if isinstance(a, torch.SymInt)]
    for batch in (3, 5, 3):
        y = torch.randn(batch, 64)
        sizes = [{x.shape[0]: batch, 64: 64}[h] for h in hints]
        assert_close_to_eager(run(*sizes, y)[0], model(y))


gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.gpu
@gpu
def test_kernels_are_bound_at_compile_time():
    """On a GPU every launcher holds Triton's compiled kernel after compile_graph
    (compiled in parallel), so no call goes through JITFunction.run."""
    from coil.runtime import codecache
    from coil.runtime.launch import launchers

    model = ResidualStack(2).cuda().eval()
    x = torch.randn(2, 16, 32, device="cuda")
    compiled, runs = _backend(model)
    with torch.no_grad():
        assert_close_to_eager(compiled(x), model(x))
    key = codecache.source_key(runs[0].coil_source)
    module = codecache._modules[(key, False)]
    bound = launchers(module)
    assert bound and all(lr.run != lr._bind_and_run for lr in bound)


class _ScaleShift(torch.nn.Module):
    """x * w + b read by one kernel; ``offset`` starts w's storage that many floats in."""

    def __init__(self, offset: int):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(64 + offset)[offset:])
        self.b = torch.nn.Parameter(torch.randn(1, 64))  # told from w by its shape

    def forward(self, x):
        return torch.relu(x * self.w + self.b)


@pytest.mark.parametrize("offset", [0, 1, 4])
def test_parameters_aligned_when_traced_skip_the_launch_check(offset, tmp_path):
    """Parameters (AOTAutograd's static inputs) aligned when traced are not
    checked at launch, as Inductor assumes; a parameter traced misaligned (a
    view 4 bytes in) and the activation still are. Results match either way."""
    model = _ScaleShift(offset).eval()
    x = torch.randn(8, 64)
    torch._dynamo.reset()
    with torch.no_grad():
        got = torch.compile(model, backend="coil", options={"dump_dir": str(tmp_path)})(x)
        assert_close_to_eager(got, model(x))
    (wrapper,) = tmp_path.glob("*/wrapper.py")
    source = wrapper.read_text()
    (launcher,) = re.findall(r"^\w+ = Launcher\(.*$", source, re.M)
    (call,) = re.findall(r"^    \w+_launch\.run\(\d+, \d+, \d+, stream, (.*)\)$", source, re.M)
    args = [a.strip() for a in call.split(",")]
    checked = re.search(r"checked=\(([\d, ]*)\)", launcher)
    positions = {int(k) for k in checked.group(1).split(",") if k.strip()} if checked else set()
    shapes = dict(re.findall(r'check_input\("(\w+)", \w+, (\([\d, ]*\))', source))
    checked_shapes = {shapes[args[k]] for k in positions}
    # x is (8, 64), w (64,), b (1, 64).
    want = {"(8, 64)"} if offset * 4 % 16 == 0 else {"(8, 64)", "(64,)"}
    assert checked_shapes == want, (launcher, call)


class _Inverse(torch.nn.Module):
    """linalg.inv checks its result's errors through an effectful op: the
    training graph gets an effect token as its first input."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(64, 64) + 8 * torch.eye(64))

    def forward(self, x):
        return torch.linalg.inv(self.w) + x * 2


def test_static_inputs_of_a_training_graph_with_an_effect_token(tmp_path):
    """AOTAutograd moves the static input indices past the effect tokens only
    for inference graphs: in a training forward coil moves them, so the
    parameter, not the user's input, is the one assumed aligned."""
    model = _Inverse()
    x = torch.randn(1, 64, requires_grad=True)
    torch._dynamo.reset()
    got = torch.compile(model, backend="coil", options={"dump_dir": str(tmp_path)})(x)
    assert_close_to_eager(got, model(x))
    forward = sorted(tmp_path.glob("*/000-import.mlir"))[0].read_text()
    start = forward.index("func.func")
    signature = forward[start : forward.index("{\n", start)]
    aligned = re.findall(r"!aten\.tensor<\[([\d, ]*)\], f32> \{[^}]*coil\.aligned", signature)
    assert aligned == ["64, 64"], signature


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.bool])
def test_allocation_helper_makes_the_layout_asked_for(dtype):
    """Wrappers allocate through empty_strided_on (torch's C++ helper): the
    sizes, strides, dtype and device asked for, 0-d and empty ones too."""
    alloc = empty_strided_on("cpu")
    for sizes, strides in [((3, 5), (1, 3)), ((), ()), ((0, 4), (4, 1)), ((2, 3, 4), (12, 1, 3))]:
        t = alloc(sizes, strides, dtype)
        assert (t.shape, t.stride(), t.dtype, t.device.type) == (sizes, strides, dtype, "cpu")


def test_a_call_binds_its_gpu_allocator_once(monkeypatch):
    """current_allocator, what a GPU wrapper calls at its first allocation: torch's
    C++ helper itself while the module's device is current (no Python frame or
    device query per allocation), the checking helper when another device is
    current, and any other helper (the CPU's, a test's poisoned one) unchanged.
    On this CPU build torch's CUDA entry points are stood in for."""
    from torch._C._dynamo import guards

    made = []

    def fast(sizes, strides, dtype):
        made.append(sizes)
        return torch.empty_strided(sizes, strides, dtype=dtype)

    current = [0]
    monkeypatch.setattr(guards, "_empty_strided_cuda", fast, raising=False)
    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: current[0], raising=False)
    alloc = empty_strided_on("cuda:0")
    assert current_allocator(alloc) is fast
    current[0] = 1  # another device current: every allocation goes through the check
    assert current_allocator(alloc) is alloc
    cpu = empty_strided_on("cpu")
    assert current_allocator(cpu) is cpu

    def poisoned(sizes, strides, dtype):
        return torch.full(sizes, float("nan"), dtype=dtype)

    assert current_allocator(poisoned) is poisoned


class _WindowAttention(torch.nn.Module):
    """The pattern of HF's Swin block (the sweep's host-bound row): LayerNorm,
    q/k/v projections, fused attention with an additive float mask, the output
    projection, a residual add."""

    def __init__(self, dim: int = 32, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.norm = torch.nn.LayerNorm(dim)
        self.q, self.k, self.v, self.o = (torch.nn.Linear(dim, dim) for _ in range(4))
        self.bias = torch.nn.Parameter(torch.randn(1, heads, 49, 49))

    def forward(self, x):
        b, n, c = x.shape
        h = self.norm(x)
        q, k, v = (
            p(h).view(b, n, self.heads, c // self.heads).transpose(1, 2)
            for p in (self.q, self.k, self.v)
        )
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=self.bias)
        return x + self.o(y.transpose(1, 2).reshape(b, n, c))


def test_gpu_wrapper_binds_its_allocator_once_a_call():
    """The GPU wrapper coil emits for a Swin-style attention block (planned for
    cuda:0 on this CPU, coil.testing.cuda_plan; export decomposes the attention
    here, so the fused kernel's output alignment is lit's
    targets/python/attention-aligned.mlir): every allocation goes through the
    allocator bound once a call (before: a Python frame and a device query
    each), and only the graph's input is checked for alignment at launch."""
    from coil.compile_driver import emit_python
    from coil.pipeline import PIPELINES
    from coil.testing import cuda_plan

    module = cuda_plan(
        _WindowAttention().eval(), (torch.randn(4, 49, 32),), pipeline=PIPELINES["default"]
    )
    source = emit_python(module)
    body = source[source.index("def call(args):") :]
    allocations = re.findall(r"= (\w+)\(\(", body)
    assert allocations and set(allocations) == {"alloc_cuda0"}, allocations
    assert body.count("current_allocator(empty_cuda0)") == 1
    assert body.index("current_allocator(") < body.index("alloc_cuda0((")
    # Launchers check only the activation input (x): parameters are aligned
    # (coil.aligned), everything else a fresh allocation or a matmul result.
    names = re.search(r"^    (.+?),? = args$", body, re.M).group(1).split(", ")
    user = {n for n in names if not n.startswith(("p_", "b_", "c_"))}  # export's names
    assert len(user) == 1, names
    checked = re.findall(r"^(\w+) = Launcher\(.*checked=\(([\d, ]+)\)\)$", source, re.M)
    for name, positions in checked:
        for call in re.findall(rf"{name}\.run\(([^)]*)\)", body):
            args = [a.strip() for a in call.split(",")][4:]
            assert {args[int(k)] for k in positions.split(",") if k.strip()} <= user, call


@pytest.mark.gpu
@gpu
def test_allocation_helper_allocates_on_its_device_whatever_is_current():
    """torch's CUDA helper allocates on the current device, so ours checks it:
    with another device current the tensor still lands on the module's."""
    count = torch.cuda.device_count()
    for index in range(count):
        alloc = empty_strided_on(f"cuda:{index}")
        for current in range(count):
            with torch.cuda.device(current):
                t = alloc((4, 3), (1, 4), torch.float16)
            assert t.device == torch.device("cuda", index) and t.stride() == (1, 4)


@pytest.mark.gpu
@gpu
def test_misaligned_input_takes_the_specializing_launch():
    """A kernel bound assuming 16-byte aligned pointers is not launched with an
    input that is not: Triton's own launch specializes for it instead."""

    def f(x, y):
        return torch.sigmoid(x) * y + 1

    base = torch.randn(4097, device="cuda")
    x, y = base[1:], torch.randn(4096, device="cuda")  # x starts 4 bytes in
    assert x.data_ptr() % 16
    torch._dynamo.reset()
    compiled = torch.compile(f, backend="coil")
    assert_close_to_eager(compiled(x, y), f(x, y))
    aligned = torch.randn(4096, device="cuda")
    assert_close_to_eager(compiled(aligned, y), f(aligned, y))


def test_cudagraphs_skip_a_graph_that_writes_a_plain_input(caplog):
    """A graph that writes an input in place that is not static (not a
    parameter, buffer or mark_static_address tensor) is not recorded: a
    replay would write the graph's copy of the input. A module buffer written
    in place (a static KV cache) is static and not blocked so."""

    class Cache(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("cache", torch.zeros(8))

        def forward(self, x, plain):
            self.cache.add_(x)
            plain.add_(x)
            return x * 2

    torch._dynamo.reset()
    module = Cache()
    compiled = torch.compile(module, backend="coil", options={"cudagraphs": True})
    x, plain = torch.randn(8), torch.zeros(8)
    with caplog.at_level("WARNING", logger="coil"):
        for _ in range(2):
            compiled(x, plain)
    assert_close_to_eager(plain, 2 * x)
    assert_close_to_eager(module.cache, 2 * x)
    reasons = [r.getMessage() for r in caplog.records if "no CUDA graph" in r.getMessage()]
    assert len(reasons) == 1 and "writes input" in reasons[0], reasons
    from coil.backend import _mutated_inputs
    from coil.runtime.compiled import with_cudagraphs

    def run(*args):
        return args

    run.coil_source = ""
    assert with_cudagraphs(run, [0], "g", [0]).blocker is None  # a static input
    assert "input 1" in with_cudagraphs(run, [0], "g", [0, 1]).blocker
    gm = torch.fx.symbolic_trace(lambda a, b: torch.ops.aten.copy_.default(b, a))
    assert _mutated_inputs(gm) == [1]


def test_cudagraphs_fall_back_on_the_cpu_with_a_reason(caplog):
    """options={"cudagraphs": True} on CPU tensors runs the plain call and says
    why, once."""
    model, (x,) = build("softmax")
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="coil", options={"cudagraphs": True})
    with caplog.at_level("WARNING", logger="coil"):
        for _ in range(3):
            assert_close_to_eager(compiled(x), model(x))
    reasons = [r.getMessage() for r in caplog.records if "no CUDA graph" in r.getMessage()]
    assert len(reasons) == 1 and "CPU tensor" in reasons[0]


def _fake_graph_runner(monkeypatch):
    """A CudaGraphRunner over ``x * 2`` whose "graph" is a CPU stand-in: a replay
    rewrites one pooled output from one copied input, as a CUDA graph would."""
    import torch.utils._pytree as pytree

    from coil.runtime import cudagraphs as cg

    events: list[str] = []

    def run(x):
        events.append("plain")
        return (x * 2,)

    def record(self, args, key):
        buf, out = torch.empty_like(args[0]), torch.empty_like(args[0])

        class Graph:
            def replay(self):
                events.append("replay")
                torch.mul(buf, 2, out=out)

        leaves, spec = pytree.tree_flatten((out,))
        self.recordings[key] = rec = cg._Recording(
            Graph(), [buf], [0], [], [], leaves, spec, [(0, out, cg._uses(out))]
        )
        return rec

    monkeypatch.setattr(cg.CudaGraphRunner, "_record", record)
    return cg.CudaGraphRunner(run, name="test"), events


def test_cudagraph_outputs_are_uncopied_until_one_is_kept(monkeypatch):
    runner, events = _fake_graph_runner(monkeypatch)
    xs = [torch.randn(8) for _ in range(7)]
    # Results dropped before the next call: every call replays, nothing copied.
    pool = runner(xs[0])[0].data_ptr()
    for x in xs[1:3]:
        (y,) = runner(x)
        torch.testing.assert_close(y, x * 2)
        assert y.data_ptr() == pool
        del y
    assert events == ["replay"] * 3
    # A result (here only a view of it) kept across calls: while it lives, calls
    # run without the graph and leave it alone; then replays return copies.
    kept = runner(xs[3])[0][2:]
    (a,) = runner(xs[4])
    (b,) = runner(xs[5])
    torch.testing.assert_close(kept, xs[3][2:] * 2)
    del kept
    (c,) = runner(xs[6])
    assert events[3:] == ["replay", "plain", "plain", "replay"]
    for y, x in zip((a, b, c), xs[4:]):
        torch.testing.assert_close(y, x * 2)
    assert c.data_ptr() != pool and runner.copied_outputs == {0}


def test_cudagraph_static_input_addresses_are_read_by_position():
    """``pointers`` is indexed like the inputs (as torch's C++ check reads it)."""
    from coil.runtime import cudagraphs as cg

    x, w, b = torch.randn(2), torch.randn(3), torch.randn(4)
    rec = cg._Recording(None, [], [], [1, 2], [None, w.data_ptr(), b.data_ptr()], [], None, [])
    assert cg._same_pointers([x, w, b], rec)
    assert not cg._same_pointers([x, w.clone(), b], rec)


@pytest.mark.gpu
@gpu
def test_cudagraph_results_dropped_each_call_are_not_copied(monkeypatch):
    """An inference loop that drops each result: replays hand out the graph's own
    output memory (no copy kernel), values are fresh each call, and after the
    first call the runner finds its recording without building a key (the
    parameters' addresses checked in one call). The first call returns its
    warm-up run's results (the graph runs once per call), so the replays'
    outputs are the ones that share memory."""
    from coil.runtime.cudagraphs import CudaGraphRunner

    keys = []
    key = CudaGraphRunner._key
    monkeypatch.setattr(
        CudaGraphRunner, "_key", lambda self, args: keys.append(1) or key(self, args)
    )
    torch.manual_seed(0)
    model = ResidualStack(3).cuda().eval()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="coil", options={"cudagraphs": True})
    pointers = set()
    with torch.no_grad():
        for call in range(5):
            x = torch.randn(2, 16, 32, device="cuda")
            out = compiled(x)
            assert_close_to_eager(out, model(x))
            if call:
                pointers.add(out.data_ptr())
            del out
    assert len(pointers) == 1
    assert len(keys) == 1


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("mode", ["options", "reduce-overhead"])
def test_cudagraph_replays_match_eager_on_fresh_inputs(mode):
    torch.manual_seed(0)
    model = ResidualStack(3).cuda().eval()
    torch._dynamo.reset()
    if mode == "options":
        compiled = torch.compile(model, backend="coil", options={"cudagraphs": True})
    else:
        compiled = torch.compile(model, backend="coil", mode="reduce-overhead")
    with torch.no_grad():
        outs = []
        for _ in range(4):  # record once, then replays on new data
            x = torch.randn(2, 16, 32, device="cuda")
            out = compiled(x)
            assert_close_to_eager(out, model(x))
            outs.append((x, out))
        # Results of earlier calls were not overwritten by later replays.
        for x, out in outs:
            assert_close_to_eager(out, model(x))


@pytest.mark.gpu
@gpu
def test_cudagraphs_record_per_input_size_and_skip_host_random(caplog):
    torch._dynamo.reset()
    model, _ = build("softmax")
    compiled = torch.compile(model, backend="coil", dynamic=True, options={"cudagraphs": True})
    for batch in (3, 7, 3):
        x = torch.randn(batch, 64, device="cuda")
        assert_close_to_eager(compiled(x), model(x))
    torch._dynamo.reset()
    model, (x,) = build("dropout_train")
    compiled = torch.compile(model, backend="coil", options={"cudagraphs": True})
    x = x.cuda()
    with caplog.at_level("WARNING", logger="coil"):
        a, b = compiled(x), compiled(x)
    assert not torch.equal(a, b)  # fresh random numbers on every call
    assert any("random" in r.getMessage() for r in caplog.records)


def test_a_cpu_scalar_may_stand_for_a_cuda_one():
    """torch mixes 0-d CPU tensors with CUDA ones, and cuDNN attention returns its
    philox seed/offset on the CPU where its meta function says CUDA: the input
    check accepts them (the wrapper moves them); anything larger must match."""
    from coil.runtime.wrapper import check_input

    check_input("seed", torch.tensor(3), (), (), torch.int64, "cuda:0")
    with pytest.raises(CoilInputError, match="device"):
        check_input("x", torch.zeros(2), (2,), (1,), torch.float32, "cuda:0")


def test_compile_all_hashes_triton_once_before_its_threads(monkeypatch):
    """Triton's key of its own build (a hash of libtriton) is computed before the
    compile threads start, not by each of them at once."""
    from triton.runtime import cache
    from triton.runtime.jit import JITFunction

    from coil.runtime import launch

    def kernel(x):
        pass

    seen = []

    class Bound:
        scope, name = {"kernel": JITFunction(kernel)}, "kernel"

        def bind(self):
            seen.append(cache.triton_key.cache_info().currsize)

    monkeypatch.setattr(launch, "launchers", lambda module: [Bound(), Bound(), Bound()])
    cache.triton_key.cache_clear()
    launch.compile_all(None, workers=3)
    assert seen == [1, 1, 1]
