"""The backend's ``partition`` option (coil/frontend/partition.py): what each
setting makes the forward save, and gradients against eager under each."""

from __future__ import annotations

import copy

import pytest
import torch

import coil.backend
from coil.frontend.capture import capture_training
from coil.frontend.partition import check, partition_function


def _conv_bn_relu():
    torch.manual_seed(0)
    m = torch.nn.Sequential(
        torch.nn.Conv2d(4, 4, 3, padding=1, bias=False),
        torch.nn.BatchNorm2d(4),
        torch.nn.ReLU(),
        torch.nn.Conv2d(4, 4, 3, padding=1, bias=False),
        torch.nn.BatchNorm2d(4),
        torch.nn.ReLU(),
    )
    return m.train(), (torch.randn(2, 4, 8, 8, requires_grad=True),)


def _saved(setting: str, autocast=None) -> tuple[int, list[str]]:
    module, inputs = _conv_bn_relu()
    (graphs,) = capture_training(
        module, inputs, autocast=autocast, partition_fn=partition_function(setting)
    )
    return graphs.saved_bytes(), [n.name for n in graphs.saved_activations()]


def test_each_setting_saves_less_than_the_one_before():
    """save-all keeps every value the backward reads (the batch norms' outputs,
    the ReLU masks); min-cut recomputes the pointwise chains from the
    convolutions' outputs and the statistics; aggressive recomputes more; a
    budget of 0 keeps at most what min-cut does, and a budget of 1 is min-cut."""
    save_all, _ = _saved("save-all")
    min_cut, names = _saved("min-cut")
    aggressive, _ = _saved("aggressive")
    budget0, _ = _saved("budget=0")
    assert save_all > min_cut > aggressive, (save_all, min_cut, aggressive)
    assert budget0 <= aggressive, (budget0, aggressive)
    assert _saved("budget=1") == (min_cut, names)
    assert any("convolution" in n for n in names), names


def test_settings_hold_under_autocast():
    assert _saved("save-all", torch.bfloat16)[0] > _saved("min-cut", torch.bfloat16)[0]


def test_the_default_is_torchs_min_cut_partitioner():
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    assert partition_function() is min_cut_rematerialization_partition
    assert partition_function("min-cut") is min_cut_rematerialization_partition


@pytest.mark.parametrize(
    "setting, words",
    [
        ("nope", "must be one of 'min-cut', 'save-all', 'aggressive', 'budget=F', not 'nope'"),
        ("budget=1.5", "the budget must be a number from 0 to 1"),
        ("budget=x", "the budget must be a number from 0 to 1"),
        (3, "must be a string"),
    ],
)
def test_a_wrong_setting_is_a_sentence(setting, words):
    with pytest.raises(ValueError, match="coil: option partition") as e:
        check(setting)
    assert words in str(e.value)
    torch._dynamo.reset()
    f = torch.compile(torch.sin, backend="coil", options={"partition": setting})
    with pytest.raises(Exception, match="option partition"):
        f(torch.randn(4, requires_grad=True))


@pytest.mark.parametrize("setting", ["save-all", "aggressive", "budget=0"])
def test_gradients_match_eager_under_each_setting(setting, monkeypatch):
    """The backend partitions with the setting given (recorded), and the
    gradients are eager's."""
    used = []
    real = coil.backend.partition_function

    def recording(name):
        used.append(name)
        return real(name)

    monkeypatch.setattr(coil.backend, "partition_function", recording)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.GELU(approximate="tanh"), torch.nn.LayerNorm(32)
    )
    eager = copy.deepcopy(model)
    x = torch.randn(8, 16)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="coil", options={"partition": setting})
    compiled(x).square().mean().backward()
    eager(x).square().mean().backward()
    assert used == [setting]
    for (name, p), q in zip(model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=name)
