"""Shared fixtures: deterministic seeds, quiet warnings, a fresh cache directory,
the GPU marker."""

import os
import tempfile
import warnings

import pytest
import torch

os.environ.setdefault("PYTHONWARNINGS", "ignore")
# One fresh cache per run: no test sees another run's compiled graphs (tests
# that exercise the caches set their own directory).
os.environ.setdefault("COIL_CACHE_DIR", tempfile.mkdtemp(prefix="coil-test-cache-"))
# A graph coil fails to compile must fail its test, not pass through eager
# PyTorch (the backend's default policy); tests of that policy name it.
os.environ["COIL_FALLBACK"] = "extern"


@pytest.fixture(autouse=True)
def _seed_and_reset():
    torch.manual_seed(0)
    warnings.filterwarnings("ignore")
    yield
    torch._dynamo.reset()


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
