"""The extern-effect analysis reads alias sets and writes from the generated
op classes' schema text (torchgen's model, no torch import); torch's own
``FunctionSchema`` is the fallback. Both readings must agree."""

import torch

from coil.dialects.aten import _BY_NAME
from coil.transforms import extern_effects as E


def test_the_generated_schemas_read_as_torchs():
    compared = 0
    for name, cls in _BY_NAME.items():
        ns, packet, overload = name.split(".")
        try:
            theirs = getattr(getattr(getattr(torch.ops, ns), packet), overload)._schema
            ours = E._from_torchgen(cls.SCHEMA)
        except (AttributeError, RuntimeError, AssertionError, KeyError):
            continue
        assert ours == E._from_torch(theirs), name
        compared += 1
    assert compared > 500


def test_writes_and_views_as_the_schema_says():
    add_ = E._schema("aten.add_.Tensor")
    assert add_.arguments[0].alias_info.is_write
    assert E._schema("aten.view.default").returns[0].alias_info is not None
    assert E._schema("aten.mm.default").returns[0].alias_info is None
    # An ``aten.operator`` names its default overload without the suffix.
    assert E._schema("aten.mm") == E._schema("aten.mm.default")
    # A list return keeps its aliases on the elements, as torch says.
    assert E._schema("aten.split.Tensor").returns[0].alias_info.before_set == frozenset()
    assert E._schema("no.such.op") is None
