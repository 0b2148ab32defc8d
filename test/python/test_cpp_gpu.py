"""The C++ wrapper on a CUDA device (marker gpu): the model set through
torch.compile(backend="coil", options={"wrapper": "cpp"}) against eager, the C++
and Python wrappers against each other, and the standalone form run by
examples/run_cpp.cpp with no Python."""

from __future__ import annotations

import copy
import os
import subprocess
import warnings
from pathlib import Path

import pytest
import torch

from coil.backend import coil as coil_backend
from coil.backend import export_cpp
from coil.examples.models import MODELS, build
from coil.runtime import cpp_wrapper
from coil.testing import assert_close_to_eager

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        cpp_wrapper.toolchain_problem() is not None,
        reason=f"cannot build C++ here: {cpp_wrapper.toolchain_problem()}",
    ),
]

ROOT = Path(__file__).resolve().parents[2]


def compiled_on_cuda(name, dynamic, wrapper, built=None):
    model, inputs = built or build(name)
    model = model.cuda()
    inputs = tuple(x.cuda() for x in inputs)
    eager = copy.deepcopy(model)
    torch._dynamo.reset()
    compiled = torch.compile(
        model, backend=coil_backend, options={"wrapper": wrapper}, dynamic=dynamic, fullgraph=True
    )
    return model, eager, compiled, inputs


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name", [n for n, c in MODELS.items() if not c.random])
def test_cpp_wrapper_matches_eager(name, dynamic):
    model, eager, compiled, inputs = compiled_on_cuda(name, dynamic, "cpp")
    train = MODELS[name].train
    with warnings.catch_warnings(record=True) as caught, torch.no_grad():
        warnings.simplefilter("always")
        out = compiled(*inputs)
        # The loaded library, called again (not in training: it would update
        # the running statistics twice).
        out_again = None if train else compiled(*inputs)
        expected = eager(*inputs)
    fallbacks = [str(c.message) for c in caught if "wrapper='cpp'" in str(c.message)]
    assert not fallbacks, fallbacks
    assert_close_to_eager(out, expected)
    if out_again is not None:
        assert_close_to_eager(out_again, expected)
    for (_, b), (_, e) in zip(model.named_buffers(), eager.named_buffers()):
        assert_close_to_eager(b, e)


@pytest.mark.parametrize("name", ["mlp", "softmax", "layernorm", "attention", "gpt2_block"])
def test_cpp_and_python_wrappers_agree(name):
    model, inputs = build(name)  # one model and input for both
    _, _, cpp, inputs = compiled_on_cuda(name, False, "cpp", (copy.deepcopy(model), inputs))
    with torch.no_grad():
        out_cpp = cpp(*inputs)
    _, _, python, _ = compiled_on_cuda(name, False, "python", (model, inputs))
    with torch.no_grad():
        out_python = python(*inputs)
    torch.testing.assert_close(out_cpp, out_python, rtol=1e-5, atol=1e-5)


def test_standalone_example_runs_without_python(tmp_path):
    model, inputs = build("mlp")
    out = export_cpp(model.cuda().eval(), tuple(x.cuda() for x in inputs), tmp_path / "m")
    assert (out / "wrapper.so").is_file() and (out / "io.txt").is_file()
    torch_dir = Path(torch.__file__).parent
    exe = tmp_path / "run_cpp"
    subprocess.run(
        [cpp_wrapper.find_compiler(), "-std=c++20", "-O2", "-w", str(ROOT / "examples/run_cpp.cpp"),
         "-o", str(exe), f"-I{torch_dir}/include",
         f"-I{torch_dir}/include/torch/csrc/api/include", f"-L{torch_dir}/lib",
         f"-Wl,-rpath,{torch_dir}/lib", "-ltorch", "-ltorch_cpu", "-lc10", "-ldl"],
        check=True,
    )  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    proc = subprocess.run([str(exe), str(out), "50"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1].startswith("ok: 50 calls")
