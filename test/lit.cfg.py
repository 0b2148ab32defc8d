# lit configuration for coil's FileCheck tests.
import os
import shutil
import sys

import lit.formats

config.name = "coil"
config.test_format = lit.formats.ShTest()
config.suffixes = [".mlir", ".py"]
config.test_source_root = os.path.dirname(__file__)
# Helpers are not lit tests; test/python (pytest) has a lit.local.cfg that
# discovers nothing there. (Excluding the name "python" here would also skip
# test/targets/python, as lit matches excludes in every directory.)
config.excludes = ["lit.cfg.py", "lit.local.cfg", "Inputs", "__pycache__"]

# lit scrubs the environment: put the running interpreter's scripts (fx-opt,
# coil, filecheck) on PATH, and keep what torch needs to import quietly.
bin_dir = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
for var in ("HOME", "TMPDIR", "PYTHONPATH", "TORCHINDUCTOR_CACHE_DIR", "XDG_CACHE_HOME"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
config.environment["PYTHONWARNINGS"] = "ignore"
# A graph the backend fails to compile must fail the test, not run in eager.
config.environment["COIL_FALLBACK"] = "extern"

config.substitutions.append(("%python", sys.executable))
# As xDSL's XDSL_ROUNDTRIP: generic form must parse back to the same custom form.
config.substitutions.append(
    (
        "COIL_ROUNDTRIP",
        "fx-opt %s --print-op-generic --split-input-file | fx-opt --split-input-file",
    )
)
config.substitutions.append(
    (
        "COIL_GENERIC_ROUNDTRIP",
        "fx-opt %s --split-input-file | fx-opt --print-op-generic --split-input-file",
    )
)

# The backend's default pipeline, as `coil pipeline` prints it (lit's internal
# shell has no $(...)); test/fx-opt/cli.mlir checks the two agree.
from coil.pipeline import PIPELINES  # noqa: E402

config.substitutions.append(("%default_pipeline", PIPELINES["default"]))
config.substitutions.append(("%aten_pipeline", PIPELINES["aten"]))
config.substitutions.append(("%buffer_pipeline", PIPELINES["buffer"]))
config.substitutions.append(("%loop_pipeline", PIPELINES["loop"]))
config.substitutions.append(("%sharded_pipeline", PIPELINES["sharded"]))

if shutil.which("filecheck", path=config.environment["PATH"]) is None:
    lit_config.fatal("filecheck not found: pip install the test extra ('.[test]')")
