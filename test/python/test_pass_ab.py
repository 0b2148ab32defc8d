"""benchmarks/pass_ab.py's variants and shape_sweep.py's grid configs become
pipelines with the pass options they name (and the pipelines parse: every
option is checked, an integer for a float option included)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import pass_ab  # noqa: E402
import shape_sweep  # noqa: E402

from coil.pipeline import parse_pipeline  # noqa: E402


def _passes(pipeline: str, *names: str) -> list[str]:
    return [p for p in pipeline.split(",") if p.split("{")[0] in names]


def test_variant_adds_each_option_to_its_pass():
    p = pass_ab.variant_pipeline("loop-inline{recompute-margin=4};convert-loop-to-tt{xblock=1}")
    assert _passes(p, "loop-inline", "convert-loop-to-tt") == [
        "loop-inline{recompute-margin=4}",
        "convert-loop-to-tt{xblock=1}",
    ]
    inline = next(p for p in parse_pipeline(p).passes if p.name == "loop-inline")
    assert inline.recompute_margin == 4.0


def test_a_bad_variant_fails_before_any_compile():
    with pytest.raises(SystemExit, match="is not pass"):
        pass_ab.variant_pipeline("loop-inline recompute-margin=4")


def test_shape_sweep_grid_keys_go_to_their_passes():
    p = shape_sweep.pipeline(dict(recompute_margin=0, xblock=4, split=16))
    assert _passes(p, "loop-inline", "convert-loop-to-tt", "loop-split-reduction") == [
        "loop-inline{recompute-margin=0}",
        "loop-split-reduction{split=16}",
        "convert-loop-to-tt{xblock=4}",
    ]
    parse_pipeline(p)
    for config in shape_sweep.GRIDS["heavy"]:
        parse_pipeline(shape_sweep.pipeline(config))
