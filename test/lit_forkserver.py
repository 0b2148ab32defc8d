"""A fork server for lit: ``fx-opt`` and ``coil`` without the interpreter start.

Every RUN line that calls ``fx-opt`` or ``coil`` used to start Python and import
xDSL, sympy, the generated aten dialect and often torch before doing any work:
about 1.5 s of CPU for a run that then takes a few hundred milliseconds. lit's
suite makes some three hundred such calls. lit.cfg.py starts this server once
per lit run; it imports all of that once, and puts shims named ``fx-opt`` and
``coil`` first on the tests' PATH (and ``filecheck``, served the same way by a
second server that imports only filecheck: see :data:`LIGHT_COMMANDS`). A
shim (Python started with ``-S``, this module only) hands the server its argv,
working directory, environment and stdin/stdout/stderr; the server forks a
child that becomes that command, runs the real entry point
(``coil.cli.fx_opt_main`` / ``coil_main``) on the client's own file
descriptors, and the shim exits with the child's status. A
fork shares no state with other runs (only the imports happened before it), so
each RUN line sees what a fresh process sees.

Whenever the server cannot give exactly that, the shim runs the real program
instead (``os.execv``): no server, or an environment that differs from the
server's in anything other than ``COIL_*`` variables (coil reads those when
called; ``PYTHONWARNINGS``, ``TORCH_*`` and the like are read at interpreter
start or import). ``COIL_LIT_FORKSERVER=0 lit test`` runs every command the
ordinary way.

Usage (lit.cfg.py does this): ``python lit_forkserver.py SOCKET`` serves until
its parent exits; :func:`write_shims` writes the shims.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys
import time

# The commands served, and their entry points (pyproject's [project.scripts]);
# "python" runs a script file (``%served_python script.py ARGS``) or a module
# (``python -m MODULE ARGS``, test/python/served_tools.py) as ``python`` would,
# for the lit tests that are Python scripts and the README's ``python -m`` lines.
ENTRY_POINTS = {
    "fx-opt": "coil.cli:fx_opt_main",
    "coil": "coil.cli:coil_main",
    "filecheck": "filecheck.main:main",
    "python": "",
}
# The shims' file names ("python" is not shadowed on the tests' PATH).
SHIMS = {"fx-opt": "fx-opt", "coil": "coil", "filecheck": "filecheck", "python": "served-python"}
# Commands served by a second, light server (forked before the heavy imports,
# on the socket path + LIGHT): lit's suite starts filecheck ~370 times, ~0.13 s
# of CPU each, most of it importing (importlib.metadata, its matcher); a fork
# of the 400 MB server would cost about as much as that start.
LIGHT = ".light"
LIGHT_COMMANDS = {"filecheck": "filecheck.main"}
_FALLBACK = -1000  # status the server sends for "run the real program yourself"


# --------------------------------------------------------------------------
# client (runs in the shim: standard library only, started with -S)
# --------------------------------------------------------------------------


def client(sock_path: str, real_program: str, command: str) -> int:
    """Run ``real_program sys.argv[1:]`` (one of :data:`ENTRY_POINTS`) through
    the server at ``sock_path``; exec the real program when the server is
    absent or declines."""
    argv = [real_program, *sys.argv[1:]]
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(sock_path)
        request = {"command": command, "argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}
        payload = json.dumps(request)
        data = payload.encode()
        socket.send_fds(sock, [struct.pack("!I", len(data)) + data], [0, 1, 2])
        reply = _recv_exact(sock, 4)
    except OSError:
        reply = b""
    if len(reply) != 4 or struct.unpack("!i", reply)[0] == _FALLBACK:
        sys.stdout.flush()
        os.execv(real_program, argv)
    return struct.unpack("!i", reply)[0]


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


def write_shims(bin_dir: str, sock_path: str, python: str, scripts_dir: str) -> None:
    """Write executable shims named :data:`SHIMS` in ``bin_dir`` that run
    ``scripts_dir``'s commands and ``python`` through the server at
    ``sock_path``."""
    os.makedirs(bin_dir, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ENTRY_POINTS:
        real = python if name == "python" else os.path.join(scripts_dir, name)
        path = os.path.join(bin_dir, SHIMS[name])
        sock = sock_path + LIGHT if name in LIGHT_COMMANDS else sock_path
        with open(path, "w") as f:
            f.write(
                f"#!{python} -IS\n"
                "import sys\n"
                f"sys.path.insert(0, {here!r})\n"
                "import lit_forkserver\n"
                f"sys.exit(lit_forkserver.client({sock!r}, {real!r}, {name!r}))\n"
            )
        os.chmod(path, 0o755)


def start(python: str, scripts_dir: str, env: dict[str, str], prefix: str, wait_s: float) -> str:
    """Start a server for the calling process (lit.cfg.py, or a pytest worker
    through test/python/served_tools.py): a temporary folder with its socket and
    the shims, the server run with ``env`` and the shims first on its ``PATH``
    (the clients' ``PATH`` must read the same, or the server declines them).
    It is killed and its folder removed when the caller exits. Waits up to
    ``wait_s`` for it to listen: until then a shim runs the real program, so
    waiting only saves the work. Returns the shims' folder."""
    import atexit
    import shutil
    import subprocess
    import tempfile

    run_dir = tempfile.mkdtemp(prefix=prefix)
    sock, shims = os.path.join(run_dir, "sock"), os.path.join(run_dir, "bin")
    write_shims(shims, sock, python, scripts_dir)
    server = subprocess.Popen(
        [python, os.path.abspath(__file__), sock],
        env={**env, "PATH": os.pathsep.join([shims, env.get("PATH", "")])},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )

    def stop() -> None:
        server.kill()
        server.wait()
        shutil.rmtree(run_dir, ignore_errors=True)

    atexit.register(stop)
    deadline = time.monotonic() + wait_s
    while not os.path.exists(sock) and server.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return shims


# --------------------------------------------------------------------------
# server
# --------------------------------------------------------------------------


def _preload() -> None:
    """Import what the commands import, so each fork starts with it loaded."""
    import torch  # noqa: F401  (pt2 input, decompositions, coil import)

    import coil.cli  # noqa: F401
    from coil.dialects import get_all_dialects
    from coil.lowering import get_all_passes as lowering_passes
    from coil.targets import get_all_targets
    from coil.transforms import get_all_passes as transform_passes

    registries = [get_all_dialects(), transform_passes(), lowering_passes(), get_all_targets()]
    for registry in registries:
        for factory in registry.values():
            try:
                factory()
            except Exception:  # one that cannot load fails in its own run
                pass
    # What torch.compile through coil's backend, a .pt2 input and the Triton
    # kernels import on first use (torch imports them lazily): ~2.4 s of CPU
    # once here instead of in every such command (a served `fx-opt model.pt2`
    # took 2.9 s of CPU, 0.8 s with these; `coil bisect` 4.2 s, 2.1 s). None
    # starts a thread (a fork keeps only the forking one).
    import importlib

    for module in (
        "torch._dynamo",
        "torch._export.serde.serialize",
        "torch._functorch.aot_autograd",
        "torch._inductor.decomposition",
        "torch.export",
        "triton.language",
        "coil.backend",
        "coil.frontend.export",
    ):
        importlib.import_module(module)


def _entry(command: str):
    """The function that runs ``command`` on ``sys.argv``."""
    if command == "python":
        return _run_script
    module, _, func = ENTRY_POINTS[command].partition(":")
    return getattr(__import__(module, fromlist=[func]), func)


def _run_script() -> None:
    """``python SCRIPT ARGS``: the script as ``__main__``, its folder first on
    the path, ``sys.argv`` from the script on. ``python -m MODULE ARGS``: the
    module as ``__main__``, the working directory first on the path,
    ``sys.argv[0]`` its file (as runpy's ``alter_sys`` sets it)."""
    import runpy

    if sys.argv[1] == "-m":
        module = sys.argv[2]
        sys.argv = [module, *sys.argv[3:]]
        sys.path[0] = os.getcwd()
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
    runpy.run_path(sys.argv[0], run_name="__main__")


# lit names the test and gives each run its own temporary directory (the child
# re-reads it); the shell's bookkeeping (a non-interactive bash drops an
# exported PS1) says nothing about the interpreter, nor does pytest's name of
# the test running (test/python/served_tools.py serves pytest's commands).
_FREE = {
    *("LIT_CURRENT_TESTCASE", "PYTEST_CURRENT_TEST", "TMP", "TMPDIR", "TEMP", "TEMPDIR"),
    *("_", "PWD", "OLDPWD", "SHLVL", "PS1", "PS2"),
}


# The server's environment when it started, and what its imports added to it
# (set by serve()).
_START_ENV: dict[str, str] = {}
_IMPORT_ENV: dict[str, str] = {}


def _start_differences(env: dict[str, str]) -> list[str]:
    """The variables by which a process started with ``env`` could have imported
    differently from the server: any but ``COIL_*`` (read by coil when called)
    and :data:`_FREE`, against the server's environment before its imports (a
    variable those imports set, at the value they set it to, is no difference:
    a command run by a served one inherits it)."""
    keys = (set(env) | set(_START_ENV)) - _FREE
    return sorted(
        k
        for k in keys
        if not k.startswith("COIL_")
        and env.get(k) != _START_ENV.get(k)
        and not (k in _IMPORT_ENV and env.get(k) == _IMPORT_ENV[k])
    )


def _log(line: str) -> None:
    """One line per request to ``$COIL_LIT_FORKSERVER_LOG`` (the server's), if set."""
    if path := os.environ.get("COIL_LIT_FORKSERVER_LOG"):
        with open(path, "a") as f:
            f.write(line + "\n")


def _run_child(request: dict, fds: list[int]) -> None:
    """In the forked child: become the client's command and exit with its status."""
    import atexit
    import tempfile
    import traceback

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    if request["command"] in LIGHT_COMMANDS:
        _fresh_output_streams()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for key, value in _IMPORT_ENV.items():  # as the imports would have set them
        os.environ.setdefault(key, value)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    sys.argv = list(request["argv"])
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code = _entry(request["command"])()
    except SystemExit as e:
        code = e.code
    except KeyboardInterrupt:
        code = 130
    except BaseException:
        traceback.print_exc()
        code = 1
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    os._exit(code & 0xFF)


def _fresh_output_streams() -> None:
    """``sys.stdout``/``sys.stderr`` made anew on the client's descriptors, as a
    fresh interpreter makes them: the server's were made for /dev/null, whose
    seekable file a ``reconfigure`` (filecheck's, to UTF-8) tries to seek on
    the client's pipe ("Illegal seek")."""
    import io

    for fd, name in ((1, "stdout"), (2, "stderr")):
        old = getattr(sys, name)
        stream = io.TextIOWrapper(
            io.BufferedWriter(io.FileIO(fd, "w", closefd=False)),
            encoding=old.encoding,
            errors=old.errors,
            line_buffering=old.line_buffering or os.isatty(fd),
            write_through=old.write_through,
        )
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _served_python(argv: list[str]) -> bool:
    """``python SCRIPT ...`` or ``python -m MODULE ...`` (no other option)."""
    if len(argv) >= 3 and argv[1] == "-m":
        return not argv[2].startswith("-")
    return len(argv) >= 2 and not argv[1].startswith("-")


def _serve_one(conn: socket.socket) -> None:
    """In a forked session process: read one request, run it in a grandchild,
    send back its exit status."""
    header, fds, _, _ = socket.recv_fds(conn, 4096, 3)
    if len(header) < 4 or len(fds) != 3:
        os._exit(1)
    (size,) = struct.unpack("!I", header[:4])
    data = header[4:] + _recv_exact(conn, size - (len(header) - 4))
    request = json.loads(data)
    command = " ".join([os.path.basename(request["argv"][0]), *request["argv"][1:]])
    argv = request["argv"]
    why = None
    if differences := _start_differences(request["env"]):
        why = f"{', '.join(differences)} differ"
    elif request["command"] == "python" and not _served_python(argv):
        why = "python runs script files and -m MODULE only"
    if why:
        conn.sendall(struct.pack("!i", _FALLBACK))
        _log(f"exec ({why}): {command}")
        os._exit(0)
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        conn.close()
        _run_child(request, fds)
    for fd in fds:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    conn.sendall(struct.pack("!i", code if code >= 0 else 128 - code))
    _log(f"served in {time.monotonic() - start:.2f} s, exit {code}: {command}")
    os._exit(0)


def _keep_import_finalizers() -> None:
    """Run none of the imports' ``weakref.finalize`` callbacks at a served
    command's exit. They undo what the imports did inside this process (here,
    after torch and coil: 188 of torch.library's ``_del_library``, each taking
    its Library's kernels out of the dispatcher), which nothing sees once the
    child exits; run at every child's exit they took ~90 ms of CPU a command
    (a served ``fx-opt`` is a few hundred). A finalizer the command registers
    itself (a temporary directory's clean-up) still runs at its exit, as in a
    fresh process; one of the server's own would act on state the server and
    the next commands share."""
    import weakref

    for finalizer in list(weakref.finalize._registry):  # type: ignore[attr-defined]
        finalizer.atexit = False


def serve(sock_path: str) -> None:
    """Accept requests on ``sock_path`` until the parent (lit) exits; the
    :data:`LIGHT_COMMANDS` on ``sock_path + LIGHT``, from a child that imports
    only those (it exits with this server)."""
    global _START_ENV, _IMPORT_ENV
    _START_ENV = dict(os.environ)
    light = os.fork()
    if light == 0:
        try:
            for module in LIGHT_COMMANDS.values():
                __import__(module)
            _listen(sock_path + LIGHT)
        finally:
            os._exit(0)
    _preload()
    # torch._dynamo's import sets TORCHINDUCTOR_CACHE_DIR (to its default when
    # unset): a fresh process that imports it has the variable too, one that
    # does not computes the same default when it needs it.
    _IMPORT_ENV = {k: v for k, v in os.environ.items() if _START_ENV.get(k) != v}
    _keep_import_finalizers()
    _listen(sock_path)
    os.kill(light, signal.SIGTERM)  # its sessions end on their own
    while _reap():
        time.sleep(0.1)


def _listen(sock_path: str) -> None:
    """Serve each request on ``sock_path`` in a forked session until this
    process's parent exits."""
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock_path + ".tmp")
    listener.listen(64)
    os.rename(sock_path + ".tmp", sock_path)  # clients see it only once ready
    listener.settimeout(1.0)
    sys.stdout.flush()
    while os.getppid() == parent:
        _reap()
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        conn.settimeout(None)
        if os.fork() == 0:
            listener.close()
            try:
                _serve_one(conn)
            finally:
                os._exit(1)
        conn.close()
    listener.close()


def _reap() -> bool:
    """Collect finished sessions (so their CPU time counts in the server's, as
    a shell's children's does); whether any are still running."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


if __name__ == "__main__":
    serve(sys.argv[1])
