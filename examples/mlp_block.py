"""An MLP block, as a model file for `coil import examples/mlp_block.py`."""

import torch

from coil.examples.models import MLP

torch.manual_seed(0)
model = MLP(32, 64).eval()
example_inputs = (torch.randn(8, 32),)
