"""Run fx-opt in-process on the given arguments, then report whether torch was
imported (fx-opt must not import torch for .mlir input that does not need it)."""

import sys

from coil.cli import fx_opt_main

try:
    rc = fx_opt_main(sys.argv[1:])
except SystemExit as e:  # --help exits through argparse
    rc = e.code or 0
print(f"exit code {rc}, torch imported: {'torch' in sys.modules}", file=sys.stderr)
sys.exit(rc)
