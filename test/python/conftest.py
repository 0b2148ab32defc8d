"""Shared fixtures: deterministic seeds, quiet warnings, a fresh cache directory,
the GPU marker, the CPU kernel kind per test, and ``poisoned`` (outputs that
start as NaN)."""

import os
import tempfile
import warnings

import pytest
import torch

os.environ.setdefault("PYTHONWARNINGS", "ignore")
# One fresh cache per run: no test sees another run's compiled graphs (tests
# that exercise the caches set their own directory).
# The C++ kernel libraries are keyed by their whole source, compiler, flags and
# CPU (a hit is the same machine code), so they stay in the user's cache from
# run to run: a run whose graphs an earlier run compiled starts no compiler.
if "COIL_CPP_CACHE_DIR" not in os.environ:
    from coil import config as _config

    os.environ["COIL_CPP_CACHE_DIR"] = str(_config.cpp_cache_dir())
os.environ.setdefault("COIL_CACHE_DIR", tempfile.mkdtemp(prefix="coil-test-cache-"))
# A graph coil fails to compile must fail its test, not pass through eager
# PyTorch (the backend's default policy); tests of that policy name it.
os.environ["COIL_FALLBACK"] = "extern"
# Dynamo's Python shape guards, not the C++ ones coil turns on by default
# (COIL_SHAPE_GUARDS, config.py): with C++ guards every dynamic frame starts the
# C++ compiler for its guard functions (about ten small builds a frame, not
# shared between frames whose guards differ), and the first dynamic graph of a
# test process turns them on for the rest of it. Measured on the 2-core
# machine, cold Inductor cache: test_size_hints + test_scans 21.5 + 1.7 s of
# CPU with Python guards, 39.1 + 4.3 s with C++ ones (the suite grew from
# ~714 to ~880 s when the default changed). What coil does there (the flag, the
# guards that admit and reject sizes) is test_dynamic.py's
# test_symbolic_sizes_turn_on_dynamos_cpp_shape_guards, which unsets this.
os.environ.setdefault("COIL_SHAPE_GUARDS", "python")

# After every frame it compiles, Dynamo times one evaluation of the new guards
# for its compile metrics (guards.py: profile_guard_manager, after a CPU cache
# flush "which is expensive"): 24-36 ms of CPU a compile on the 2-core machine
# (one process, a small function compiled 20 times with backend="eager": 38-50
# ms a compile with it, 14 without; cProfile: 2.5 of 38 s in
# test_lower_views_data_movement.py, 94 compiles).
# Nothing reads the number here; the guards are still built, and checked
# against the frame that made them, as before.
if hasattr(torch._dynamo.guards, "profile_guard_manager"):
    torch._dynamo.guards.profile_guard_manager = lambda *args: 0.0


@pytest.fixture(autouse=True)
def _seed_and_reset():
    torch.manual_seed(0)
    warnings.filterwarnings("ignore")
    yield
    torch._dynamo.reset()


# Tests of Triton specifics (kernel source, launchers, tiles, autotuning, the
# interpreter, kernel names in wrappers and dumps) run the CPU kernels under
# Triton's interpreter, as on a GPU machine; every other end-to-end test runs
# the default for CPU tensors, the C++ kernels (convert-loop-to-cpp), which is
# also faster. `COIL_CPU_KERNELS=triton pytest ...` runs any of them with the
# interpreter; `@pytest.mark.triton_kernels` marks a single test.
TRITON_FILES = {
    "test_aotcache.py",
    "test_autotune.py",
    "test_backend.py",
    "test_backend_edge_cases.py",
    "test_cli_and_backend.py",
    "test_codecache.py",
    "test_cpp_target.py",
    "test_debug_tools.py",
    "test_graphcache.py",
    "test_launch.py",
    "test_loop_to_tt.py",
    "test_matvec.py",
    "test_online_softmax.py",
    "test_provenance.py",
    "test_python_target.py",
    "test_readme.py",
    "test_split_finish.py",
    "test_split_reduction.py",
    "test_tile2d.py",
    "test_timing.py",
    "test_triton_target.py",
    "test_tt_math.py",
}


def _no_compiler() -> bool:
    from coil.runtime.cpp_kernels import find_compiler

    return find_compiler() is None


# Without a C++ compiler (or with COIL_CXX=none) the backend runs CPU graphs as
# ATen ops; the suite then runs the kernels under Triton's interpreter instead,
# so they stay tested (test_cpu_kernels.py tests the no-compiler path itself).
if _no_compiler():
    os.environ.setdefault("COIL_CPU_KERNELS", "triton")


@pytest.fixture(autouse=True)
def _cpu_kernel_kind(request, monkeypatch):
    if request.node.get_closest_marker("triton_kernels") is not None:
        monkeypatch.setenv("COIL_CPU_KERNELS", "triton")
    yield


# The files that take longest, longest first: pytest-xdist sends whole files
# (--dist loadfile --no-loadscope-reorder, pyproject.toml) in collection order
# to whichever worker is free, so these go out first and the many short files
# even out the end (longest-first scheduling). The order is each file's summed
# test time in a default run (`pytest --durations=0`, 2 cores, Nov 28 2026,
# a machine loaded ~5x, so the seconds are inflated but the order holds;
# after that day's cuts): test_distributed's 2-process group ~350 (one
# setup), test_middle_end ~380 (the model set pass by pass, now the only
# middle-end run of it), test_opinfo_backend ~340, test_cpp_target ~315
# (three C++ wrapper builds), test_readme ~260 (its opinfo_sweep and fuzz
# lines start interpreters), test_graphcache ~260 (processes at once),
# test_split_finish, test_split_reduction, test_dynamic, test_backend ~250
# each, test_fuzz ~200 after the cut, test_cli_and_backend ~210,
# test_backend_edge_cases, test_pooling, test_compiled_optimizers ~195,
# test_aotcache ~185 (two processes at once). Every other file follows in
# name order.
LONGEST_FIRST = (
    "test_distributed.py",
    "test_middle_end.py",
    "test_opinfo_backend.py",
    "test_cpp_target.py",
    "test_readme.py",
    "test_graphcache.py",
    "test_split_finish.py",
    "test_split_reduction.py",
    "test_dynamic.py",
    "test_backend.py",
    "test_cli_and_backend.py",
    "test_fuzz.py",
    "test_backend_edge_cases.py",
    "test_pooling.py",
    "test_compiled_optimizers.py",
    "test_aotcache.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    # A stable sort: each file keeps its tests' order.
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
    for item in items:
        if item.path.name in TRITON_FILES:
            item.add_marker(pytest.mark.triton_kernels)
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def poison_value(dtype: torch.dtype):
    """What a poisoned tensor of ``dtype`` holds: NaN, or an integer no kernel
    computes here."""
    if dtype.is_floating_point or dtype.is_complex:
        return float("nan")
    if dtype == torch.bool:
        return True
    return torch.iinfo(dtype).max


@pytest.fixture
def poisoned(monkeypatch):
    """Every tensor a generated wrapper allocates starts poisoned (NaN for floats,
    see :func:`poison_value`), so an element no kernel writes shows as a mismatch
    against eager. Wrappers allocate through ``runtime.wrapper.empty_strided_on``
    (bound when a module is executed), so this patches that helper and empties
    the code cache's per-process memo of loaded modules: every module loaded
    during the test binds the poisoning allocator. Yields the list of poisoned
    tensors' shapes, so a test can check allocations were poisoned at all.
    test_tile2d.py::test_poison_catches_a_kernel_that_skips_an_element proves it
    reaches the kernels."""
    from coil.runtime import codecache, wrapper

    shapes: list[tuple[int, ...]] = []
    real = wrapper.empty_strided_on

    def empty_strided_on(device: str):
        alloc = real(device)

        def poisoned_alloc(sizes, strides, dtype):
            t = alloc(sizes, strides, dtype)
            shapes.append(tuple(t.shape))
            return t.fill_(poison_value(dtype))

        return poisoned_alloc

    monkeypatch.setattr(wrapper, "empty_strided_on", empty_strided_on)
    monkeypatch.setattr(codecache, "_modules", {})
    yield shapes
