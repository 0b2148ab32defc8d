"""The training rows of benchmarks/models.py and benchmarks/sweep.py on the CPU:
a step's gradients against eager with dropout off, then timed with dropout on;
the compiled AdamW row's update against eager's; every model in amp and f32."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import models  # noqa: E402
import sweep  # noqa: E402
from train_step import optimizer_row, train_row  # noqa: E402


class _Net(torch.nn.Module):
    """Linear, GELU, dropout, LayerNorm, Linear, cross-entropy: a scalar loss."""

    def __init__(self, dropout: float):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.drop = torch.nn.Dropout(dropout)
        self.norm = torch.nn.LayerNorm(32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x, target):
        h = self.norm(self.drop(torch.nn.functional.gelu(self.fc1(x))))
        return torch.nn.functional.cross_entropy(self.fc2(h), target)


def _build(dropout: bool):
    return _Net(0.1 if dropout else 0.0), (torch.randn(8, 16), torch.randint(0, 8, (8,)))


def _first_call(fn):
    return fn(), 0.0


def _variants(module):
    torch._dynamo.reset()
    return {"eager": module, "coil": torch.compile(module, backend="coil")}


@pytest.mark.parametrize("amp", [False, True], ids=["f32", "amp"])
def test_train_row_checks_gradients_without_dropout_then_times_with_it(amp):
    timed = {}

    def timer(runs, step, row):
        timed.update(runs)
        for f in runs.values():
            assert torch.isfinite(step(f))
        return "profiles"

    row = train_row(
        _build,
        amp=amp,
        device="cpu",
        variants=_variants,
        first_call=_first_call,
        timer=timer,
    )
    assert row["dropout"] is True  # the timed module is the one with dropout
    assert timed["eager"].drop.p == 0.1
    assert row["profiles"] == "profiles"
    # Every gradient and the loss against an f32 eager reference: f32 exact to
    # rounding; bf16 autocast within bf16's precision.
    bound = 3e-2 if amp else 1e-5
    assert row["coil_err"] < bound, row
    assert row["eager_err"] < bound, row


def test_optimizer_row_matches_eager_adamw():
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Linear(32, 4))
    row = optimizer_row(
        module,
        device="cpu",
        backends=("eager", "coil"),
        compile=lambda step, name: torch.compile(step, backend=name),
        first_call=_first_call,
        timer=lambda runs, step, row: [step(f) for f in runs.values()] and None,
    )
    assert row["eager_err"] == 0.0
    # An update of about lr = 1e-3 on weights of about 0.1, read back as a
    # difference of f32 parameters: f32's rounding of the weights (6e-9) is
    # about 1e-5 of the update.
    assert row["coil_err"] < 1e-4, row


def test_every_training_model_has_an_amp_and_an_f32_row():
    names = set(models.MODELS)
    for model in ("gpt2", "bert", "llama", "vit", "resnet50", "convnext"):
        assert models.MODELS[f"{model}_train"].amp
        assert not models.MODELS[f"{model}_train_f32"].amp
    assert models.MODELS["adamw_step"].optimizer and "adamw_step" in names
    kinds = {sweep.kind_of(e) for e in sweep.TRAIN}
    assert kinds == {"train-amp", "train-f32", "optim-f32"}
    amp = {e.name for e in sweep.TRAIN if sweep.kind_of(e) == "train-amp"}
    f32 = {e.name.removesuffix("_f32") for e in sweep.TRAIN if sweep.kind_of(e) == "train-f32"}
    assert amp == f32 and len(amp) >= 6


def test_smoke_configs_turn_every_dropout_off(monkeypatch):
    pytest.importorskip("transformers")
    monkeypatch.setattr(models, "SMOKE", True)
    for cls in ("GPT2Config", "BertConfig", "LlamaConfig"):
        config = models._hf_config(cls, dropout=False)
        probs = {k: v for k, v in vars(config).items() if "drop" in k and isinstance(v, float)}
        assert probs and not any(probs.values()), (cls, probs)
    assert models._hf_config("GPT2Config").resid_pdrop == 0.1  # as configured


def test_grad_error_ignores_a_gradient_that_is_zero_but_for_rounding():
    # An attention key bias's gradient is zero (softmax ignores a constant
    # added to a query's scores): what is left is rounding, and rounding over
    # its own norm is noise. The whole gradient's error still counts it.
    from train_step import grad_error

    torch.manual_seed(0)
    ref = [torch.randn(64, 64), torch.randn(64) * 1e-9]
    got = [ref[0] * (1 + 1e-3), torch.randn(64) * 1e-6]
    assert grad_error(got, ref) < 2e-3
    wrong = [ref[0] * (1 + 1e-3), torch.randn(64)]  # not rounding: as large as a share
    assert grad_error(wrong, ref) > 0.1
    # a small gradient above the floor is judged on its own: doubled, it is wrong
    ref_small = [ref[0], torch.randn(64) * 1e-2]
    assert grad_error([ref[0], ref_small[1] * 2], ref_small) > 0.9
