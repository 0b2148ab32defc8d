"""Precompiled headers for the C++ wrapper's build (runtime/cpp_pch.py): the key
covers what a PCH depends on, a PCH is built once and GCC uses it, a stale one
is rebuilt, concurrent builders end with one complete PCH, and a PCH that
breaks a compile (a truncated .gch) falls back to a plain build with one
message. Small headers stand in for coil_runtime.h, so each case takes well
under a second of g++; the real header is built by test_cpp_target.py's
wrappers."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from coil.runtime import cpp_pch, cpp_wrapper

GXX = cpp_wrapper.find_compiler()

needs_gcc = pytest.mark.skipif(
    GXX is None or not cpp_pch.is_gcc(GXX), reason="precompiled headers are built with GCC"
)

FLAGS = ["-fPIC", "-O1", "-std=c++17", "-w"]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private PCH cache, and no PCH remembered from another test."""
    monkeypatch.setenv("COIL_CPP_CACHE_DIR", str(tmp_path / "cpp-cache"))
    monkeypatch.setattr(cpp_pch, "_valid", {})
    monkeypatch.setattr(cpp_pch, "_failed", set())
    monkeypatch.setattr(cpp_pch, "_pending", {})
    monkeypatch.setattr(cpp_pch, "_said", set())
    return tmp_path


def header(directory: Path, text: str = "", name: str = "tiny.h") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f"#pragma once\n#include <vector>\n#include <string>\n{text}\n")
    return path


def test_key_changes_with_compiler_flags_header_and_torch(tmp_path, monkeypatch):
    h = header(tmp_path)
    base = cpp_pch.pch_key("/usr/bin/g++", h, FLAGS, "torch 2.13")
    assert base == cpp_pch.pch_key("/usr/bin/g++", h, list(FLAGS), "torch 2.13")
    assert base != cpp_pch.pch_key("/usr/bin/g++-13", h, FLAGS, "torch 2.13")
    assert base != cpp_pch.pch_key("/usr/bin/g++", h, [*FLAGS[:1], "-O2", *FLAGS[2:]], "torch 2.13")
    assert base != cpp_pch.pch_key("/usr/bin/g++", h, FLAGS, "torch 2.14")
    monkeypatch.setattr(cpp_pch, "compiler_version", lambda c: "g++ (GCC) 99.0")
    assert base != cpp_pch.pch_key("/usr/bin/g++", h, FLAGS, "torch 2.13")
    monkeypatch.undo()
    h.write_text(h.read_text() + "inline int g() { return 2; }\n")
    assert base != cpp_pch.pch_key("/usr/bin/g++", h, FLAGS, "torch 2.13")


def test_off_for_clang_and_for_coil_cpp_pch_0(cache, monkeypatch):
    h = header(cache / "src")
    monkeypatch.setattr(cpp_pch, "is_gcc", lambda c: False)  # clang, say
    assert cpp_pch.include_dir("clang++", h, FLAGS) is None
    monkeypatch.undo()
    monkeypatch.setenv("COIL_CPP_PCH", "0")
    assert cpp_pch.include_dir(GXX or "g++", h, FLAGS) is None
    assert not (cache / "cpp-cache" / "pch").exists()


def compile_with(pch: Path | None, source: Path, out: Path, h: Path) -> str:
    """Compile ``source`` (which includes ``h``'s name) with -H; its include trace."""
    first = [f"-I{pch}"] if pch else []
    proc = subprocess.run(
        [GXX, *first, *FLAGS, f"-I{h.parent}", "-H", "-c", str(source), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stderr


@needs_gcc
def test_built_once_then_reused_and_gcc_uses_it(cache, monkeypatch):
    h = header(cache / "src", "inline int f() { return 41; }")
    builds = []
    real_build = cpp_pch._build
    monkeypatch.setattr(cpp_pch, "_build", lambda *a: builds.append(a) or real_build(*a))
    pch = cpp_pch.include_dir(GXX, h, FLAGS)
    assert pch is not None and (pch / "tiny.h.gch").is_file()
    assert cpp_pch.include_dir(GXX, h, FLAGS) == pch
    monkeypatch.setattr(cpp_pch, "_valid", {})  # a new process: checks the files, reuses
    assert cpp_pch.include_dir(GXX, h, FLAGS) == pch
    assert len(builds) == 1
    src = cache / "use.cpp"
    src.write_text('// a comment first is fine\n#include "tiny.h"\nint main() { return f(); }\n')
    trace = compile_with(pch, src, cache / "use.o", h)
    assert f"! {pch}/tiny.h.gch" in trace  # "!": GCC loaded the PCH
    # Other flags are another key: a PCH of their own.
    other = cpp_pch.include_dir(GXX, h, [*FLAGS, "-DCOIL_OTHER=1"])
    assert other is not None and other != pch and len(builds) == 2


@needs_gcc
def test_stale_when_an_included_file_changes(cache, monkeypatch):
    dep = cache / "src" / "dep.h"
    h = header(cache / "src", '#include "dep.h"')
    dep.write_text("inline int d() { return 1; }\n")
    pch = cpp_pch.include_dir(GXX, h, FLAGS)
    assert pch is not None and cpp_pch.is_current(pch)
    assert str(dep) in (pch / cpp_pch.DEPS_FILE).read_text()
    dep.write_text("inline int d() { return 22; }\n")  # same key, new contents
    assert not cpp_pch.is_current(pch)
    monkeypatch.setattr(cpp_pch, "_valid", {})
    rebuilt = cpp_pch.include_dir(GXX, h, FLAGS)
    assert rebuilt == pch and cpp_pch.is_current(rebuilt)


@needs_gcc
def test_a_header_that_does_not_compile_is_said_once_and_skipped(cache):
    h = header(cache / "src", "this is not C++;")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cpp_pch.include_dir(GXX, h, FLAGS) is None
        assert cpp_pch.include_dir(GXX, h, FLAGS) is None
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "could not precompile tiny.h" in messages[0]
    assert not list((cache / "cpp-cache" / "pch").glob("*/tiny.h.gch"))


CONCURRENT = """
import sys
from pathlib import Path
from coil.runtime import cpp_pch
built = []
real = cpp_pch._build
cpp_pch._build = lambda *a: built.append(1) or real(*a)
d = cpp_pch.include_dir(sys.argv[1], Path(sys.argv[2]), sys.argv[3:])
print(d, len(built))
"""


@needs_gcc
def test_two_processes_build_one_pch(cache):
    h = header(cache / "src", "inline int f() { return 3; }")
    script = cache / "child.py"
    script.write_text(CONCURRENT)
    cmd = [sys.executable, str(script), GXX, str(h), *FLAGS]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    results = [p.communicate()[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert results[0][0] == results[1][0]
    assert sorted(int(r[1]) for r in results) == [0, 1]  # one built, the other waited
    assert cpp_pch.is_current(Path(results[0][0]))


@needs_gcc
def test_a_corrupt_pch_falls_back_to_a_plain_build_with_one_message(cache, monkeypatch):
    """A truncated .gch is a hard error in GCC: the wrapper's build retries without
    it, says so once, and removes it (the next build makes a new one)."""
    h = header(cache / "runtime", "inline int coil_answer() { return 42; }", "coil_runtime.h")
    pch = cpp_pch.include_dir(GXX, h, [*FLAGS, f"-I{h.parent}"])
    assert pch is not None
    gch = pch / "coil_runtime.h.gch"
    gch.write_bytes(gch.read_bytes()[:4096])
    monkeypatch.setattr(
        cpp_wrapper, "compile_flags", lambda python=False: [*FLAGS, f"-I{h.parent}"]
    )
    monkeypatch.setattr(cpp_wrapper, "link_flags", lambda python=False: ["-shared"])
    monkeypatch.setattr(cpp_wrapper, "wrapper_pch_dir", lambda wait=True: pch)
    src = cache / "wrapper.cpp"
    src.write_text('#include "coil_runtime.h"\nextern "C" int answer() { return coil_answer(); }\n')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cpp_wrapper.compile_library(src, cache / "wrapper.so")
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages
    assert "precompiled header" in messages[0] and "built without it" in messages[0]
    assert (cache / "wrapper.so").is_file() and not pch.exists()
    # A genuine error in the source is the source's: raised, the PCH left alone.
    good = cpp_pch.include_dir(GXX, h, [*FLAGS, f"-I{h.parent}"])
    monkeypatch.setattr(cpp_wrapper, "wrapper_pch_dir", lambda wait=True: good)
    src.write_text('#include "coil_runtime.h"\nint broken( {\n')
    with pytest.raises(cpp_wrapper.CppBuildError, match="compiling wrapper.cpp failed"):
        cpp_wrapper.compile_library(src, cache / "broken.so")
    assert cpp_pch.is_current(good)


# ---- the CPU kernels' prelude ------------------------------------------------------

KERNELS = """// Generated by coil (-t cpp-kernels): a stand-in.
#include <cstdint>
#include <cmath>
#include <algorithm>

extern "C" int coil_cpp_k(int64_t in, int64_t out, int64_t n) {
  auto *x = reinterpret_cast<const float *>(in);
  auto *y = reinterpret_cast<float *>(out);
  for (int64_t i = 0; i < n; ++i) y[i] = std::max(std::exp(x[i]), 0.5f) + %s;
  return 0;
}
"""


def test_leading_includes_stop_at_the_first_other_line():
    from coil.runtime.cpp_kernels import leading_includes

    source = "// c\n\n#include <cstdint>\n#include <cmath>\n#define X 1\n#include <vector>\n"
    assert leading_includes(source) == ["#include <cstdint>", "#include <cmath>"]
    assert leading_includes("#define N 3\n#include <cmath>\n") == []
    assert leading_includes('#include "local.h"\n#include <cmath>\n') == []


def run_kernel(lib) -> torch.Tensor:
    x = torch.randn(37)
    y = torch.empty(37)
    assert lib.kernel("coil_cpp_k", 3)(x.data_ptr(), y.data_ptr(), 37) == 0
    return x, y


@needs_gcc
def test_cpu_kernels_use_the_prelude_pch_and_survive_a_corrupt_one(cache, monkeypatch):
    from coil.runtime import cpp_kernels

    monkeypatch.setattr(cpp_kernels, "_loaded", {})
    compiler = cpp_kernels.find_compiler()
    first = KERNELS % "0.0f"
    pch = cpp_kernels.prelude_pch(first, compiler)
    assert pch is not None and pch.with_name(pch.name + ".gch").is_file()
    x, y = run_kernel(cpp_kernels.load_cpp_kernels(first))
    torch.testing.assert_close(y, x.exp().clamp(min=0.5))
    # GCC loads it for the kernels' compile ("!" in the include trace).
    src = cache / "k.cpp"
    src.write_text(first)
    proc = subprocess.run(
        [
            compiler.path,
            *compiler.flags,
            "-include",
            str(pch),
            "-H",
            str(src),
            "-o",
            str(cache / "k.so"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and f"! {pch}.gch" in proc.stderr
    # A truncated .gch: the next library is built without it, one message.
    gch = pch.with_name(pch.name + ".gch")
    gch.write_bytes(gch.read_bytes()[:4096])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib = cpp_kernels.load_cpp_kernels(KERNELS % "1.0f")
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "built without it" in messages[0], messages
    x, y = run_kernel(lib)
    torch.testing.assert_close(y, x.exp().clamp(min=0.5) + 1)
    assert not pch.parent.exists()


@needs_gcc
def test_a_killed_builders_directory_is_removed_by_the_next_build(cache):
    import os

    root = cpp_pch.pch_root()
    old = root / ".0123456789abcdef.killed"
    old.mkdir(parents=True)
    (old / "tiny.h.gch").write_bytes(b"half")
    young = root / ".fedcba9876543210.running"
    young.mkdir()
    past = old.stat().st_mtime - cpp_pch.ABANDONED_S - 60
    os.utime(old, (past, past))
    assert cpp_pch.include_dir(GXX, header(cache / "src"), FLAGS) is not None
    assert not old.exists() and young.exists()  # another builder's may be running


@needs_gcc
def test_old_pchs_beyond_the_kept_number_are_removed(cache):
    import os

    root = cpp_pch.pch_root()
    root.mkdir(parents=True)
    past = 1_000_000_000
    for k in range(cpp_pch.KEPT + 2):
        d = root / f"{k:032x}"
        d.mkdir()
        (d / cpp_pch.DEPS_FILE).write_text("")
        os.utime(d, (past + k, past + k))  # all long unused, the later k the more recent
    recent = root / ("f" * 32)
    recent.mkdir()  # used just now: kept
    (recent / cpp_pch.DEPS_FILE).write_text("")
    headers = root / "headers"  # not a PCH: never pruned
    headers.mkdir()
    os.utime(headers, (past, past))
    pch = cpp_pch.include_dir(GXX, header(cache / "src"), FLAGS)
    left = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    # The new PCH, the recent one, and the KEPT - 2 most recent old ones.
    old_kept = [f"{k:032x}" for k in range(cpp_pch.KEPT + 2)][-(cpp_pch.KEPT - 2) :]
    assert left == sorted([pch.name, recent.name, "headers", *old_kept])


@needs_gcc
def test_without_waiting_the_pch_builds_in_the_background(cache, monkeypatch):
    """wait=False (many CPUs): a cold cache's first compile goes on without the PCH
    while it builds; the next caller waits for that build instead of starting one."""
    h = header(cache / "src", "inline int f() { return 5; }")
    builds = []
    real_build = cpp_pch._build
    monkeypatch.setattr(cpp_pch, "_build", lambda *a: builds.append(a) or real_build(*a))
    assert cpp_pch.include_dir(GXX, h, FLAGS, wait=False) is None
    pch = cpp_pch.include_dir(GXX, h, FLAGS, wait=False)  # pending: waits for it
    assert pch is not None and cpp_pch.is_current(pch)
    assert cpp_pch.include_dir(GXX, h, FLAGS) == pch and len(builds) == 1
