"""The generated aten dialect is current and covers what it must."""

import torch

from coil.dialects.aten import op_class_for
from coil.dialects.aten_ops import ATEN_OPS, TORCH_VERSION
from coil.tools import gen_aten


def test_generated_module_is_current():
    if TORCH_VERSION != torch.__version__.split("+")[0]:
        import pytest

        pytest.skip(f"aten_ops.py was generated from torch {TORCH_VERSION}")
    assert gen_aten.main(["--check"]) == 0, "run `python -m coil.tools.gen_aten`"


def test_every_core_op_has_a_class():
    missing = []
    for name in dir(torch.ops.aten):
        packet = getattr(torch.ops.aten, name, None)
        if not hasattr(packet, "overloads"):
            continue
        for overload in packet.overloads():
            op = getattr(packet, overload)
            if torch.Tag.core in op.tags and op_class_for(op) is None:
                missing.append(str(op))
    assert missing == [], missing


def test_aot_graph_ops_have_classes():
    aten = torch.ops.aten
    for op in (
        aten.view.default,
        aten._unsafe_view.default,
        aten._to_copy.default,
        aten.native_layer_norm.default,
        aten.native_batch_norm.default,
        aten._native_batch_norm_legit.default,
        aten._native_batch_norm_legit_no_training.default,
        aten._softmax.default,
        aten.rand.default,
        aten.native_dropout.default,
        aten.scalar_tensor.default,
        aten.copy_.default,
        aten.index.Tensor,
        torch.ops.prims.convert_element_type.default,
    ):
        assert op_class_for(op) is not None, op
    assert len(ATEN_OPS) > 500
