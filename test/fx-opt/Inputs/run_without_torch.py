"""Run fx-opt in-process on the given arguments, then report whether torch was
imported (fx-opt must not import torch for .mlir input that does not need it).

Several commands separated by ``---`` run in one interpreter: each in a child
forked after ``coil.cli`` was imported (what every fresh fx-opt imports first),
so each starts as a fresh process would, and reports on stderr as
``command N: exit code ..., torch imported: ...`` in order; the script exits
with the first non-zero status. One interpreter start instead of one a command
(~2 s of CPU each on the CI machine).
"""

import os
import sys

from coil.cli import fx_opt_main


def run(argv: list[str]) -> int:
    try:
        rc = fx_opt_main(argv)
    except SystemExit as e:  # --help exits through argparse
        rc = e.code or 0
    return rc


def report(prefix: str, rc: int) -> None:
    print(f"{prefix}exit code {rc}, torch imported: {'torch' in sys.modules}", file=sys.stderr)


args = sys.argv[1:]
if "---" not in args:
    rc = run(args)
    report("", rc)
    sys.exit(rc)

commands: list[list[str]] = [[]]
for arg in args:
    if arg == "---":
        commands.append([])
    else:
        commands[-1].append(arg)
status = 0
for n, argv in enumerate(commands, 1):
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        rc = run(argv)
        sys.stdout.flush()
        report(f"command {n}: ", rc)
        sys.stderr.flush()
        os._exit(rc if isinstance(rc, int) else 1)
    _, wait_status = os.waitpid(pid, 0)
    rc = os.waitstatus_to_exitcode(wait_status)
    status = status or rc
sys.exit(status)
