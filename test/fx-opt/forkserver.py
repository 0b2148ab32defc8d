# A command run through lit's fork server (test/lit_forkserver.py) sees what a
# fresh process would: its own arguments, environment (a COIL_* variable the
# server was not started with), temporary directory, working directory and
# stdin, runs as __main__ with its folder on sys.path, and exits with its own
# status. `COIL_LIT_FORKSERVER=0 lit` runs the same lines on a fresh python.
# RUN: cd %S && env COIL_PROBE=hello %served_python %s one two < %s | filecheck %s
# RUN: %python -c "import subprocess, sys; print('exit', subprocess.run(sys.argv[1:]).returncode)" \
# RUN:   %served_python %s --exit-3 | filecheck %s --check-prefix=EXIT
# RUN: not %served_python %s --raise 2>&1 | filecheck %s --check-prefix=RAISE
import os
import sys
import tempfile

if sys.argv[1:] == ["--exit-3"]:
    sys.exit(3)
if sys.argv[1:] == ["--raise"]:
    raise RuntimeError("probe failed")
print("name", __name__)
print("argv", [os.path.basename(sys.argv[0]), *sys.argv[1:]])
print("probe", os.environ.get("COIL_PROBE"))
print("tmp is lit's", tempfile.gettempdir() == os.environ.get("TMPDIR"))
print("cwd is the test's folder", os.getcwd() == os.path.dirname(os.path.abspath(__file__)))
print("path[0] is the script's folder", sys.path[0] == os.path.dirname(os.path.abspath(__file__)))
print("stdin", sys.stdin.readline().strip())

# CHECK: name __main__
# CHECK-NEXT: argv ['forkserver.py', 'one', 'two']
# CHECK-NEXT: probe hello
# CHECK-NEXT: tmp is lit's True
# CHECK-NEXT: cwd is the test's folder True
# CHECK-NEXT: path[0] is the script's folder True
# CHECK-NEXT: stdin # A command run through lit's fork server

# EXIT: exit 3
# RAISE: RuntimeError: probe failed
