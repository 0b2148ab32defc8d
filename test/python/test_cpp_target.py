"""The C++ wrapper (-t cpp) on a machine without a GPU: the generated C++ compiles
against torch's and CUDA's headers, its kernel arguments have the layout of the
cubin's parameter table, and -- with a fake libcuda.so.1 that records launches
(fake_libcuda.c) -- it launches exactly what Triton's own launcher launches for
the same kernels and arguments, while its ATen calls and input checks run for
real. Skipped where there is no C/C++ compiler."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest
import served_tools
import torch
from torch import nn

import coil
from coil.backend import run_pipeline
from coil.dialects import tt
from coil.ir import print_module
from coil.pipeline import PIPELINES
from coil.runtime import cpp_wrapper
from coil.targets.cpp_launch import kernel_signature

HERE = Path(__file__).parent

pytestmark = pytest.mark.skipif(
    cpp_wrapper.toolchain_problem() is not None or shutil.which("cc") is None,
    reason=f"cannot build C/C++ here: {cpp_wrapper.toolchain_problem() or 'no cc'}",
)


class MatmulAndSoftmax(nn.Module):
    """An extern (mm), a reduction kernel and a pointwise kernel, over dynamic sizes."""

    def forward(self, x, w):
        return x @ w, torch.softmax(x, dim=-1) * 2.0, torch.sigmoid(x) + 1.0


def host_module(model, inputs, dynamic=True):
    module = coil.import_module(model, inputs, dynamic=dynamic)
    run_pipeline(module, PIPELINES["default"])
    return module


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One wrapper built here for sm_90: dynamic sizes, an extern, two kernels."""
    inputs = (torch.randn(6, 40), torch.randn(40, 8))
    module = host_module(MatmulAndSoftmax(), inputs)
    directory = cpp_wrapper.build(module, tmp_path_factory.mktemp("cpp") / "build", arch=90)
    (directory / "host.mlir").write_text(print_module(module))
    return module, directory


@pytest.fixture(scope="module")
def fake_libcuda(tmp_path_factory):
    out = tmp_path_factory.mktemp("fake") / "libcuda.so.1"
    include = cpp_wrapper.cuda_include_dir()
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-O1", f"-I{include}", "-Wl,-soname,libcuda.so.1",
         str(HERE / "fake_libcuda.c"), "-o", str(out)],
        check=True,
    )  # fmt: skip
    return out


def test_wrapper_library_and_kernels_are_built(built):
    module, directory = built
    names = sorted(op.sym_name.data for op in module.ops if isinstance(op, tt.FuncOp))
    # two kernels; the softmax over a symbolic row also has its rows <= B variant
    assert len({re.sub(r"_r[0-9]+$", "", n) for n in names}) == 2
    for name in names:
        assert (directory / "kernels" / f"{name}.cubin").read_bytes()[:4] == b"\x7fELF"
        meta = (directory / "kernels" / f"{name}.meta").read_text()
        assert f"name {name}\n" in meta and "num_warps " in meta
    exported = subprocess.run(
        ["nm", "-D", "--defined-only", str(directory / "wrapper.so")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for symbol in ("coil_run", "coil_set_kernel_dir", "coil_num_inputs"):
        assert f" T {symbol}\n" in exported


_C_SIZES = {"i64": 8, "u64": 8, "i32": 4, "u32": 4, "i16": 2, "i8": 1, "i1": 1, "fp32": 4}


def test_argument_layout_is_the_cubins_parameter_table(built):
    """What coil::Kernel passes -- each signature argument by value, then one pointer
    per scratch line of the .meta -- is what the compiled kernel declares."""
    from cpp_launch_check import cubin_params

    module, directory = built
    for op in module.ops:
        if not isinstance(op, tt.FuncOp):
            continue
        name = op.sym_name.data
        sizes = [8 if t.startswith("*") else _C_SIZES[t] for t in kernel_signature(op).values()]
        meta = (directory / "kernels" / f"{name}.meta").read_text()
        sizes += [8] * meta.count("\nscratch ")
        expected, offset = [], 0
        for ordinal, size in enumerate(sizes):
            offset = (offset + size - 1) // size * size
            expected.append((ordinal, offset, size))
            offset += size
        assert cubin_params((directory / "kernels" / f"{name}.cubin").read_bytes(), name) == (
            expected
        )


@pytest.mark.skipif(
    torch.cuda.is_available(), reason="the fake driver stands in for a GPU; here there is one"
)
def test_launches_match_tritons_launcher(built, fake_libcuda, tmp_path):
    """Through a fake driver: the wrapper's launches (grid, threads, shared memory,
    every argument's bytes, the scratch pointers) equal what Triton's launcher
    passes for the same kernels and values; the extern ran for real."""
    module, directory = built
    x, w = torch.randn(5, 40), torch.randn(40, 8)  # not the sizes it was built with
    # The inputs of the dynamic graph: its size symbols, then the tensors.
    torch.save([5, 40, x, 8, w], tmp_path / "inputs.pt")
    proc = subprocess.run(
        served_tools.python(HERE / "cpp_launch_check.py", fake_libcuda, directory,
                            tmp_path / "inputs.pt"),
        capture_output=True, text=True, cwd=HERE, env=served_tools.env(),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    ours, theirs = result["ours"], result["theirs"]
    assert len(ours) == 2
    assert ours == theirs
    for line in ours:
        words = line.split()
        params = words[words.index("params") + 1 :]
        # The kernel's own arguments, then null scratch pointers.
        scratch = 2 if hasattr_profile_scratch() else 1
        assert params[-scratch:] == ["00" * 8] * scratch
        assert params[0] == result["x_ptr"]  # both kernels read the input x
    # A dynamic size reaches the kernel as its i64 value.
    assert any((5).to_bytes(8, "little").hex() in line.split() for line in ours)
    assert result["extern_max_error"] < 1e-5
    assert result["input_error"] == ("CoilInputError: input arg2: expected dtype Float, got Double")


@pytest.mark.skipif(
    torch.cuda.is_available(), reason="the fake driver stands in for a GPU; here there is one"
)
def test_2d_tiles_launch_over_grid_y_as_tritons_launcher(fake_libcuda, tmp_path):
    """A transpose's 2-D tile (convert-loop-to-tt tile2d): the static wrapper launches
    it over grid x and y, the dynamic one over a flat grid x, each exactly as
    Triton's launcher does."""

    class Transpose(nn.Module):
        def forward(self, x, y):
            return (x.t() + y).relu().t().contiguous()

    x, y = torch.randn(70, 45), torch.randn(45, 70)
    checks = []  # (build directory, inputs file) for each wrapper, checked in one process
    for dynamic in (False, True):
        module = host_module(Transpose(), (x, y), dynamic=dynamic)
        directory = cpp_wrapper.build(module, tmp_path / f"build{int(dynamic)}", arch=90)
        (directory / "host.mlir").write_text(print_module(module))
        inputs = [70, 45, x, y] if dynamic else [x, y]
        torch.save(inputs, tmp_path / f"inputs{int(dynamic)}.pt")
        checks += [str(directory), str(tmp_path / f"inputs{int(dynamic)}.pt")]
    proc = subprocess.run(
        served_tools.python(HERE / "cpp_launch_check.py", fake_libcuda, *checks, "--kernels-only"),
        capture_output=True, text=True, cwd=HERE, env=served_tools.env(),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [json.loads(line) for line in proc.stdout.strip().splitlines()[-2:]]
    assert len(results) == 2, proc.stdout[-3000:]
    for dynamic, result in zip((False, True), results):
        ours, theirs = result["ours"], result["theirs"]
        assert len(ours) == 1 and ours == theirs  # the relu, stored column-major
        grids = [tuple(int(w) for w in line.split()[2:5]) for line in ours]
        if dynamic:
            assert all(g[1] == 1 and g[0] > 1 for g in grids), grids
        else:
            assert all(g[0] > 1 and g[1] > 1 for g in grids), grids


def hasattr_profile_scratch() -> bool:
    import triton

    return tuple(int(p) for p in triton.__version__.split(".")[:2]) >= (3, 5)


def test_cpu_graph_with_triton_kernels_falls_back_to_the_python_wrapper_with_one_warning():
    # cpu_kernels='triton': the kernels run under Triton's interpreter, from Python.
    class Model(nn.Module):
        def forward(self, x):
            return torch.relu(x) * 3

    x = torch.randn(4, 8)
    options = {"wrapper": "cpp", "cpu_kernels": "triton"}
    compiled = torch.compile(Model(), backend="coil", options=options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = compiled(x)
    torch.testing.assert_close(out, torch.relu(x) * 3)
    messages = [str(c.message) for c in caught if "wrapper" in str(c.message)]
    assert len(messages) == 1
    assert "runs Triton kernels on the CPU" in messages[0] and "Python wrapper" in messages[0]


def test_cpu_graph_calls_its_cpp_kernels_from_the_cpp_wrapper(tmp_path):
    """Issue 40 item 3: a CPU graph's C++ wrapper calls the C++ kernels (the library
    the Python wrapper would load, copied beside it); dynamic sizes reach them as
    int64_t, an out-of-range gather index raises IndexError as eager does."""
    from coil.runtime.cpp_kernels import find_compiler
    from coil.testing import assert_close_to_eager

    if find_compiler() is None:
        pytest.skip("no C++ compiler for the CPU kernels")

    def f(x, i):
        return torch.softmax(x, -1) * 2, x[i]

    # This file runs the interpreter by default (conftest.TRITON_FILES).
    options = {"wrapper": "cpp", "cpu_kernels": "cpp", "dump_dir": str(tmp_path)}
    compiled = torch.compile(f, backend="coil", dynamic=True, options=options)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for rows, cols in ((5, 8), (7, 3)):
            x = torch.randn(rows, cols)
            i = torch.randint(-rows, rows, (2,))
            out = compiled(x, i)
            assert_close_to_eager(out, f(x, i))
    assert not [str(c.message) for c in caught if "wrapper" in str(c.message)]
    (source,) = [p.read_text() for p in tmp_path.glob("graph_*/wrapper.cpp")]
    assert "coil::CpuKernel<int(void*, void*, void*, void*, int64_t" in source
    with pytest.raises(IndexError, match="out of bounds in CPU kernel"):
        compiled(torch.randn(5, 8), torch.tensor([0, 5]))


def test_unknown_wrapper_option_is_a_sentence():
    with pytest.raises(Exception, match="option wrapper must be 'python' or 'cpp'"):
        torch.compile(nn.ReLU(), backend="coil", options={"wrapper": "rust"})(torch.randn(2))
