"""The model set at the aten level: what the reference backend does with it.

The model set through the import, the printed form and the middle end (static
and dynamic, pass by pass, against eager) is test_middle_end.py's one test.
"""

import torch

from coil.examples.models import build
from coil.testing import assert_close_to_eager


def test_dropout_is_reproducible_for_a_seed():
    model, (x,) = build("dropout_train")
    from coil.testing import reference_backend

    compiled = torch.compile(model, backend=reference_backend, fullgraph=True)
    torch.manual_seed(7)
    a = compiled(x)
    torch.manual_seed(7)
    b = compiled(x)
    torch.manual_seed(8)
    c = compiled(x)
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_dynamic_graph_runs_on_other_sizes():
    """One dynamic compile serves several batch sizes (symbols bound per call)."""
    from coil.testing import reference_backend

    model, _ = build("gpt2_block")
    compiled = torch.compile(model, backend=reference_backend, dynamic=True, fullgraph=True)
    with torch.no_grad():
        for batch in (2, 3, 5):
            x = torch.randn(batch, 16, 32)
            assert_close_to_eager(compiled(x), model(x))
