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
config.excludes = [
    "lit.cfg.py",
    "lit.local.cfg",
    "lit_forkserver.py",
    "Inputs",
    "__pycache__",
]

# lit scrubs the environment: put the running interpreter's scripts (fx-opt,
# coil, filecheck) on PATH, and keep what torch needs to import quietly.
bin_dir = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
# (Checked before the fork server's shims, one named filecheck, go first on PATH.)
if shutil.which("filecheck", path=config.environment["PATH"]) is None:
    lit_config.fatal("filecheck not found: pip install the test extra ('.[test]')")
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


def _start_forkserver() -> str:
    """Serve fx-opt and coil from one pre-imported process (lit_forkserver.py
    says how, and when a command still starts the ordinary way): each RUN line
    then skips ~1.5 s of interpreter start and imports. Returns the shim
    for %served_python."""
    sys.path.insert(0, config.test_source_root)
    import lit_forkserver

    server_env = {
        **config.environment,
        # COIL_LIT_FORKSERVER_LOG=FILE: one line per command, served or not (and why)
        **{k: v for k, v in os.environ.items() if k == "COIL_LIT_FORKSERVER_LOG"},
    }
    # Wait for the imports (a few seconds) rather than import them again in
    # the first tests.
    shims = lit_forkserver.start(sys.executable, bin_dir, server_env, "coil-lit-", 60)
    config.environment["PATH"] = os.pathsep.join([shims, config.environment["PATH"]])
    return os.path.join(shims, lit_forkserver.SHIMS["python"])


# %served_python SCRIPT: a test script that imports torch and coil, run by the
# fork server; %python is a fresh interpreter (test/fx-opt/startup.mlir checks
# what a fresh fx-opt imports).
served_python = sys.executable
if os.environ.get("COIL_LIT_FORKSERVER", "1") != "0":
    served_python = _start_forkserver()
config.substitutions.append(("%served_python", served_python))
